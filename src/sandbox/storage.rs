//! A View origin's `localStorage`, kept by the host across runs.
//!
//! Under the spec's frame tree a View is a third party of its webview's top document
//! (`mcp-host://frame`), and WebKitGTK 2.50 gives a third party's `localStorage` an area in memory
//! only, with no setting to change it (measured in `docs/notes/third-party-storage.md`). So the
//! host keeps it: the View's proxy page shares the View's origin, hence its storage area; it
//! hears the View's changes (the `storage` event every other document of an area gets) and sends
//! them on its line, and before the first View of a server in a web process loads, it puts back
//! what was kept. One file per sandbox label (the hash of the server's identity, see
//! [`super::origin`]) under the host's data directory: a server's Views never see another
//! server's items, as with the origins themselves. Bounded ([`MAX_BYTES`]), written owner-only,
//! and removed with the server.
//!
//! Everything here is the View's word: a View can write what it likes into its own origin's
//! file, and nothing else.

// Without the desktop runtime only the removal with a server is used.
#![cfg_attr(not(feature = "desktop"), allow(dead_code))]

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

/// The most a server's kept storage holds: keys and values, in UTF-16 code units as a browser
/// counts them (WebKit's own quota per origin is 5 MB).
pub const MAX_UNITS: usize = 5 * 1024 * 1024 / 2;
/// The most bytes one line of changes from a proxy may have (a full area, in JSON, with room for
/// escapes).
pub const MAX_BYTES: usize = 16 * 1024 * 1024;

/// A server's items.
pub type Items = BTreeMap<String, String>;

/// Where the host keeps its servers' Views' storage: a directory of one file per label.
#[derive(Debug, Clone)]
pub struct KeptStorage {
    dir: PathBuf,
}

/// A label is 32 lower-case hex digits ([`super::sandbox_label`]); anything else names no file.
fn is_label(label: &str) -> bool {
    label.len() == 32 && label.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl KeptStorage {
    /// The user's (`$XDG_DATA_HOME/mcp-apps-host/view-storage`).
    pub fn user() -> Option<Self> {
        let dirs = directories::ProjectDirs::from("", "", "mcp-apps-host")?;
        Some(Self::at(dirs.data_dir().join("view-storage")))
    }

    /// The directory `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    fn file(&self, label: &str) -> Option<PathBuf> {
        is_label(label).then(|| self.dir.join(format!("{label}.json")))
    }

    /// What was kept for `label` (nothing when there is no file, or it is unreadable: said in
    /// the log, and the View starts empty).
    pub fn load(&self, label: &str) -> Items {
        let Some(path) = self.file(label) else { return Items::new() };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Items::new(),
            Err(e) => {
                tracing::warn!("cannot read the Views' storage {}: {e}", path.display());
                return Items::new();
            }
        };
        match serde_json::from_str::<Items>(&text) {
            Ok(items) if units(&items) <= MAX_UNITS => items,
            Ok(_) => {
                tracing::warn!("the Views' storage {} is over its bound: not used", path.display());
                Items::new()
            }
            Err(e) => {
                tracing::warn!("the Views' storage {} is not readable ({e}): not used", path.display());
                Items::new()
            }
        }
    }

    /// Keeps `items` for `label` (an empty area removes its file).
    pub fn save(&self, label: &str, items: &Items) -> std::io::Result<()> {
        let Some(path) = self.file(label) else {
            return Err(std::io::Error::other(format!("{label:?} is not a sandbox label")));
        };
        if items.is_empty() {
            return self.remove(label);
        }
        let text = serde_json::to_vec(items).map_err(std::io::Error::other)?;
        crate::private_file::write(&path, &text)
    }

    /// Forgets what was kept for `label` (its server was removed).
    pub fn remove(&self, label: &str) -> std::io::Result<()> {
        let Some(path) = self.file(label) else { return Ok(()) };
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Where `label`'s file is.
    #[cfg(test)]
    pub fn path(&self, label: &str) -> Option<PathBuf> {
        self.file(label)
    }
}

/// The size of `items` as a browser counts it (UTF-16 code units of keys and values).
pub fn units(items: &Items) -> usize {
    items.iter().map(|(k, v)| k.encode_utf16().count() + v.encode_utf16().count()).sum()
}

/// Applies one line of changes from a View's proxy (`{"clear": bool, "set": {key: value or
/// null}}`: the area cleared first, then each key set, or removed for null) to `items`, whose
/// size is `size` ([`units`], kept by the caller so a change costs its own size, not the
/// area's). A line that is not that shape, or that would take the area past [`MAX_UNITS`],
/// changes nothing.
pub fn apply(items: &mut Items, size: &mut usize, line: &str) -> Result<(), String> {
    if line.len() > MAX_BYTES {
        return Err(format!("a storage change of {} bytes is over the bound", line.len()));
    }
    let change: Value = serde_json::from_str(line).map_err(|e| format!("a storage change that is not JSON: {e}"))?;
    let clear = change["clear"].as_bool().unwrap_or(false);
    let none = serde_json::Map::new();
    let set = match change.get("set") {
        Some(Value::Object(set)) => set,
        None | Some(Value::Null) => &none,
        Some(_) => return Err("a storage change whose `set` is not an object".into()),
    };
    let entry = |k: &str, v: &str| k.encode_utf16().count() + v.encode_utf16().count();
    let mut next = if clear { 0 } else { *size };
    for (key, value) in set {
        if !clear {
            next = next.saturating_sub(items.get(key).map_or(0, |old| entry(key, old)));
        }
        match value {
            Value::String(v) => next += entry(key, v),
            Value::Null => {}
            _ => return Err(format!("a storage change whose value for {key:?} is not a string")),
        }
    }
    if next > MAX_UNITS {
        return Err(format!("the Views' storage would be over its bound ({MAX_UNITS} characters): not kept"));
    }
    if clear {
        items.clear();
    }
    for (key, value) in set {
        match value {
            Value::String(v) => items.insert(key.clone(), v.clone()),
            _ => items.remove(key),
        };
    }
    *size = next;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef";
    const B: &str = "fedcba9876543210fedcba9876543210";

    #[test]
    fn each_label_keeps_its_own_items_across_loads() {
        let dir = tempfile::tempdir().unwrap();
        let kept = KeptStorage::at(dir.path().join("view-storage"));
        let mut items = kept.load(A);
        assert!(items.is_empty());
        apply(&mut items, &mut 0, r#"{"set":{"draft":"hello","n":"1"}}"#).unwrap();
        kept.save(A, &items).unwrap();
        assert_eq!(kept.load(A), items, "the same server reads what it kept");
        assert!(kept.load(B).is_empty(), "another server reads nothing of it");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(kept.path(A).unwrap()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        kept.remove(A).unwrap();
        assert!(kept.load(A).is_empty(), "gone with its server");
        assert!(!kept.path(A).unwrap().exists());
    }

    #[test]
    fn changes_set_remove_and_clear_in_order() {
        let (mut items, mut size) = (Items::new(), 0);
        apply(&mut items, &mut size, r#"{"set":{"a":"1","b":"2"}}"#).unwrap();
        apply(&mut items, &mut size, r#"{"set":{"a":null,"b":"22"}}"#).unwrap();
        assert_eq!(items, Items::from([("b".into(), "22".into())]));
        assert_eq!(size, units(&items), "the size follows the changes");
        apply(&mut items, &mut size, r#"{"clear":true,"set":{"c":"3"}}"#).unwrap();
        assert_eq!(items, Items::from([("c".into(), "3".into())]));
        assert_eq!(size, 2);
    }

    #[test]
    fn a_change_past_the_bound_or_malformed_changes_nothing() {
        let mut items = Items::from([("kept".into(), "yes".into())]);
        let mut size = units(&items);
        let big = "x".repeat(MAX_UNITS);
        let line = serde_json::json!({"set": {"big": big}}).to_string();
        assert!(apply(&mut items, &mut size, &line).is_err());
        // Replacing what is there counts the new value only.
        let fits = serde_json::json!({"set": {"kept": "x".repeat(MAX_UNITS - 4)}}).to_string();
        let mut copy = (items.clone(), size);
        assert!(apply(&mut copy.0, &mut copy.1, &fits).is_ok());
        for bad in ["not json", r#"{"set":[1]}"#, r#"{"set":{"a":"1","b":1}}"#] {
            assert!(apply(&mut items, &mut size, bad).is_err(), "{bad}");
        }
        assert_eq!(items, Items::from([("kept".into(), "yes".into())]));
        assert_eq!(size, 7);
    }

    #[test]
    fn a_name_that_is_not_a_label_names_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let kept = KeptStorage::at(dir.path());
        for bad in ["../../etc/passwd", "", "0123456789ABCDEF0123456789ABCDEF", "x"] {
            assert!(kept.path(bad).is_none(), "{bad}");
            assert!(kept.save(bad, &Items::from([("a".into(), "b".into())])).is_err());
        }
    }
}
