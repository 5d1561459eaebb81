//! The About dialog's facts: the version, the app's license, and what it is built from (the
//! crates of `assets/third-party.tsv`, which `scripts/third-party` writes from Cargo's metadata,
//! and the system's web engine it links).

use serde_json::{json, Value};

use super::shell::ShellCommand;

/// The crates the app is built from: `name\tversion\tlicense` lines.
const THIRD_PARTY: &str = include_str!("../../assets/third-party.tsv");

/// The libraries of the system the app links rather than contains.
const SYSTEM: [(&str, &str); 2] = [("WebKitGTK", "LGPL-2.1-or-later"), ("GTK 3", "LGPL-2.1-or-later")];

/// The `[name, version, license]` of every component, the system's libraries first.
fn components() -> Vec<Value> {
    let system = SYSTEM.iter().map(|(name, license)| json!([name, "the system's", license]));
    let crates = THIRD_PARTY.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).filter_map(|l| {
        let mut parts = l.splitn(3, '\t');
        Some(json!([parts.next()?, parts.next()?, parts.next()?]))
    });
    system.chain(crates).collect()
}

/// What the shell shows in its About dialog.
pub(super) fn command() -> ShellCommand {
    ShellCommand::About {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        license: env!("CARGO_PKG_LICENSE").to_owned(),
        components: components(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `(name, version)` of every package Cargo.lock holds.
    fn locked() -> std::collections::HashSet<(String, String)> {
        let lock = include_str!("../../Cargo.lock");
        let mut out = std::collections::HashSet::new();
        let mut name = None;
        for line in lock.lines() {
            if let Some(n) = line.strip_prefix("name = ") {
                name = Some(n.trim_matches('"').to_owned());
            } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
                out.insert((n, v.trim_matches('"').to_owned()));
            }
        }
        out
    }

    #[test]
    fn the_list_names_what_cargo_lock_builds() {
        let locked = locked();
        let crates: Vec<Value> = components().into_iter().skip(SYSTEM.len()).collect();
        assert!(crates.len() > 200, "the list is too short to be the app's: {}", crates.len());
        for c in &crates {
            let key = (c[0].as_str().unwrap().to_owned(), c[1].as_str().unwrap().to_owned());
            assert!(locked.contains(&key), "{key:?} is not in Cargo.lock: run scripts/third-party");
            assert!(!c[2].as_str().unwrap().is_empty(), "{key:?} has no license");
        }
        for needed in ["wry", "tao", "rmcp", "serde", "tokio"] {
            assert!(crates.iter().any(|c| c[0] == needed), "{needed} is built in but not listed");
        }
    }

    #[test]
    fn about_says_the_version_and_license() {
        let ShellCommand::About { version, license, components } = command() else { panic!() };
        assert_eq!(version, env!("CARGO_PKG_VERSION"));
        assert_eq!(license, "MIT OR Apache-2.0");
        assert_eq!(components[0][0], "WebKitGTK");
    }
}
