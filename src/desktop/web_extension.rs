//! The host's web process extension (`webext/collect.c`, built by `build.rs`): in each web
//! process of the host, one full JavaScriptCore collection a second after pages went (Views
//! closed or asleep), so their memory goes back at once instead of at the engine's own pace.
//!
//! WebKit loads every library of one directory into every web process it starts. The library is
//! in the binary and written, at start, into a directory of its own that only this user can
//! open (`XDG_RUNTIME_DIR`, else the temporary directory), removed when the host ends.

use std::path::Path;
use std::sync::OnceLock;

const LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libmcp-apps-host-collect.so"));

/// The directory, for the host's lifetime.
static DIR: OnceLock<Option<tempfile::TempDir>> = OnceLock::new();

/// Gives WebKit the extension for the web processes it starts from now on (the shell's, already
/// started, goes without: it closes no View).
pub(super) fn install(context: &webkit2gtk::WebContext) {
    use webkit2gtk::WebContextExt;
    let dir = DIR.get_or_init(|| match write() {
        Ok(dir) => Some(dir),
        Err(e) => {
            tracing::warn!("no web process extension (closed Views' memory comes back later): {e}");
            None
        }
    });
    if let Some(path) = dir.as_ref().and_then(|d| d.path().to_str()) {
        context.set_web_extensions_directory(path);
    }
}

fn write() -> std::io::Result<tempfile::TempDir> {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    // Made with mode 0700: nobody else can put a library of theirs next to ours.
    let dir = tempfile::Builder::new().prefix("mcp-apps-host-webext-").tempdir_in(base)?;
    write_library(dir.path())?;
    Ok(dir)
}

fn write_library(dir: &Path) -> std::io::Result<()> {
    std::fs::write(dir.join("libmcp-apps-host-collect.so"), LIBRARY)
}

/// Removes the directory (the host ends).
pub(super) fn remove() {
    if let Some(Some(dir)) = DIR.get() {
        let _ = std::fs::remove_dir_all(dir.path());
    }
}
