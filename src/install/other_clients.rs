//! Where other MCP clients keep their servers on this machine: the files the servers editor
//! offers to import, so a person who used Claude Desktop or VS Code does not have to know where
//! those live.
//!
//! Only the files each client documents as its own user-level MCP configuration, looked up in the
//! person's home and config folder; nothing is searched for and nothing is read but them.

use std::path::{Path, PathBuf};

/// One client's config file that exists here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// The client's name, as a person knows it.
    pub client: &'static str,
    pub path: PathBuf,
}

/// The clients and where each keeps its file: under the config folder (`XDG_CONFIG_HOME`, else
/// `~/.config`) or the home folder.
const PLACES: &[(&str, Base, &str)] = &[
    ("Claude Desktop", Base::Config, "Claude/claude_desktop_config.json"),
    ("Claude Desktop", Base::Home, "Library/Application Support/Claude/claude_desktop_config.json"),
    ("VS Code", Base::Config, "Code/User/mcp.json"),
    ("VS Code Insiders", Base::Config, "Code - Insiders/User/mcp.json"),
    ("VSCodium", Base::Config, "VSCodium/User/mcp.json"),
    ("Cursor", Base::Home, ".cursor/mcp.json"),
    ("Windsurf", Base::Home, ".codeium/windsurf/mcp_config.json"),
];

#[derive(Debug, Clone, Copy)]
enum Base {
    Home,
    Config,
}

/// The clients' files that exist under `home` and `config`, in [`PLACES`]' order, each once.
pub(crate) fn found_in(home: &Path, config: &Path) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    for (client, base, rest) in PLACES {
        let path = match base {
            Base::Home => home.join(rest),
            Base::Config => config.join(rest),
        };
        let known = |p: &Path| found.iter().any(|f| same_file(&f.path, p));
        if path.is_file() && !known(&path) {
            found.push(Found { client, path });
        }
    }
    found
}

/// [`found_in`] for this person: `HOME`, and `XDG_CONFIG_HOME` or `~/.config`.
pub(crate) fn found() -> Vec<Found> {
    let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from) else {
        return Vec::new();
    };
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| home.join(".config"));
    found_in(&home, &config)
}

/// Whether two paths name one file (both must exist).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    a.canonicalize().ok().is_some_and(|a| b.canonicalize().ok() == Some(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "{}").unwrap();
    }

    #[test]
    fn finds_each_clients_file_where_it_lives_and_nothing_else() {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("conf");
        assert!(found_in(home.path(), &config).is_empty());
        write(&config.join("Claude/claude_desktop_config.json"));
        write(&config.join("Code/User/mcp.json"));
        write(&home.path().join(".cursor/mcp.json"));
        // Not a client's user-level file: a workspace's, and VS Code's file under the home.
        write(&home.path().join("project/.vscode/mcp.json"));
        write(&home.path().join("Code/User/mcp.json"));
        let found = found_in(home.path(), &config);
        let clients: Vec<&str> = found.iter().map(|f| f.client).collect();
        assert_eq!(clients, ["Claude Desktop", "VS Code", "Cursor"]);
        assert_eq!(found[1].path, config.join("Code/User/mcp.json"));
    }

    #[test]
    fn one_file_reached_two_ways_is_offered_once() {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join(".config");
        write(&config.join("Claude/claude_desktop_config.json"));
        let mac = home.path().join("Library/Application Support");
        std::fs::create_dir_all(&mac).unwrap();
        std::os::unix::fs::symlink(config.join("Claude"), mac.join("Claude")).unwrap();
        assert_eq!(found_in(home.path(), &config).len(), 1);
    }
}
