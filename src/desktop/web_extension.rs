//! The host's web process extension (`webext/collect.c` and `webext/requests.c`, built by
//! `build.rs`): in each web process of the host, one full JavaScriptCore collection half a
//! second after pages went (Views closed or asleep), while the process holds 32 pages or fewer,
//! then the allocator's scavenger on a thread of its own, so their memory goes back at once
//! instead of at the engine's own pace; and the check of every request a page sends against the
//! web origins its View declared ([`allow_origins`]), below the page, so an engine path that
//! forgets the CSP still reaches no undeclared origin.
//!
//! WebKit loads every library of one directory into every web process it starts. The library is
//! in the binary and written, at start, into a directory of this user's that nobody else can
//! write: `$XDG_RUNTIME_DIR/mcp-apps-host/web-extension-<hash>`, else
//! `$TMPDIR/mcp-apps-host-<uid>/web-extension-<hash>`, where the hash is the library's own. Every
//! run of one build uses one path (a host that is killed leaves nothing new behind), and two
//! builds running at once (the installed package and a developer's build) never load each
//! other's library; a directory there that is not ours and private is not used.

use std::path::PathBuf;

const LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libmcp-apps-host-collect.so"));
const FILE: &str = "libmcp-apps-host-collect.so";

/// The name of the message that tells a page its View's declared origins (`webext/requests.c`).
const ALLOWED_ORIGINS: &str = "mcp-apps-host:allowed-origins";

/// Tells the page of `webview` the web origins its View declared ("scheme host port" entries,
/// see [`crate::sandbox::csp::request_origins`]); its requests go to these and to the host's
/// own schemes only. A page told nothing gets only the host's own schemes.
pub(super) fn allow_origins(webview: &wry::WebView, origins: &[String]) {
    use gtk::glib::ToVariant;
    use webkit2gtk::WebViewExt;
    use wry::WebViewExtUnix;
    let message = webkit2gtk::UserMessage::new(ALLOWED_ORIGINS, Some(&origins.to_variant()));
    webview.webview().send_message_to_page(&message, None::<&gtk::gio::Cancellable>, |_| {});
}

/// Gives WebKit the extension for the web processes it starts from now on (the shell's, already
/// started, goes without: it closes no View).
pub(super) fn install(context: &webkit2gtk::WebContext) {
    use webkit2gtk::WebContextExt;
    // Test-only (read by the extension in each web process): proves `check --self` notices a
    // host without its check below the page.
    if std::env::var_os("MCP_APPS_HOST_TEST_NO_REQUEST_CHECK").is_some() {
        tracing::error!("MCP_APPS_HOST_TEST_NO_REQUEST_CHECK is set: requests of Views are NOT checked below the page");
    }
    match write() {
        Ok(dir) => match dir.to_str() {
            Some(path) => context.set_web_extensions_directory(path),
            None => tracing::warn!("no web process extension: {} is not UTF-8", dir.display()),
        },
        Err(e) => tracing::warn!("no web process extension (closed Views' memory comes back later): {e}"),
    }
}

fn write() -> std::io::Result<PathBuf> {
    let uid = crate::private_file::uid()?;
    let digest = <sha2::Sha256 as sha2::Digest>::digest(LIBRARY);
    let build: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    let dir = crate::private_file::runtime_dir()?.join(format!("web-extension-{build}"));
    let dir = crate::private_file::private_dir(&dir, uid)?;
    let path = dir.join(FILE);
    if std::fs::read(&path).ok().as_deref() != Some(LIBRARY) {
        // Written whole, then moved into place: a web process starting meanwhile never loads
        // half a library.
        let part = dir.join(format!(".{FILE}.{}", std::process::id()));
        std::fs::write(&part, LIBRARY)?;
        std::fs::rename(&part, &path)?;
    }
    Ok(dir)
}
