//! What the host decides on a View's behalf: links, messages, model context, display modes,
//! downloads and app tool calls. The bridge checks the protocol; a [`HostPolicy`] decides.

use serde_json::Value;

use super::server_port::BoxFuture;
use crate::protocol::DisplayMode;

/// Who is asking: enough for a person to decide, never the View's content.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ViewInfo {
    /// The View's id.
    pub view: String,
    /// The server's display name.
    pub server: String,
    /// The tool whose result the View renders.
    pub tool: String,
}

impl ViewInfo {
    /// A View of `tool` on `server`.
    pub fn new(view: impl Into<String>, server: impl Into<String>, tool: impl Into<String>) -> Self {
        Self { view: view.into(), server: server.into(), tool: tool.into() }
    }
}

/// A policy's answer to a request that needs consent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Done as asked.
    Allowed,
    /// Refused; the reason goes back to the View with `isError: true`.
    Denied(String),
}

/// Which optional View -> host requests a policy handles (advertised in `hostCapabilities`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PolicyCapabilities {
    /// `ui/open-link`.
    pub open_links: bool,
    /// `ui/message`.
    pub message: bool,
    /// `ui/update-model-context`.
    pub update_model_context: bool,
    /// `ui/download-file`.
    pub download_file: bool,
    /// Display modes the host can show (always includes `inline`).
    pub display_modes: Vec<DisplayMode>,
}

impl Default for PolicyCapabilities {
    fn default() -> Self {
        Self {
            open_links: false,
            message: false,
            update_model_context: true,
            download_file: false,
            display_modes: vec![DisplayMode::Inline],
        }
    }
}

/// Decides what a View may do beyond the protocol's own rules. Every method has a default that is
/// safe without a person to ask: consent-requiring actions are refused, model context is kept,
/// only `inline` is shown, app tool calls that passed the visibility check go through.
pub trait HostPolicy: Send + Sync + 'static {
    /// What this policy handles; the bridge advertises exactly this.
    fn capabilities(&self) -> PolicyCapabilities {
        PolicyCapabilities::default()
    }

    /// `ui/open-link` for an `http(s)` URL (other schemes never reach the policy).
    fn open_link(&self, view: &ViewInfo, url: &url::Url) -> BoxFuture<Decision> {
        let _ = (view, url);
        Box::pin(async { Decision::Denied("this host does not open links".into()) })
    }

    /// `ui/message`: a message for the conversation (`role` is `user`), with its content blocks.
    fn message(&self, view: &ViewInfo, role: &str, content: &[Value]) -> BoxFuture<Decision> {
        let _ = (view, role, content);
        Box::pin(async { Decision::Denied("this host has no conversation".into()) })
    }

    /// `ui/update-model-context`: the View's latest context (`None` = cleared).
    fn update_model_context(&self, view: &ViewInfo, context: Option<&Value>) {
        let _ = (view, context);
    }

    /// `ui/request-display-mode` for a mode the View declared and the host offers; returns the
    /// mode now in effect.
    fn request_display_mode(
        &self,
        view: &ViewInfo,
        current: DisplayMode,
        requested: DisplayMode,
    ) -> BoxFuture<DisplayMode> {
        let _ = (view, requested);
        Box::pin(async move { current })
    }

    /// `ui/download-file`: `contents` are `EmbeddedResource` / `ResourceLink` blocks, already
    /// checked for shape and total size.
    fn download_file(&self, view: &ViewInfo, contents: &[Value]) -> BoxFuture<Decision> {
        let _ = (view, contents);
        Box::pin(async { Decision::Denied("this host does not save files".into()) })
    }

    /// A View's `tools/call` to an app-visible tool of its own server.
    fn allow_app_tool_call(&self, view: &ViewInfo, tool: &Value) -> BoxFuture<bool> {
        let _ = (view, tool);
        Box::pin(async { true })
    }
}

/// The defaults of [`HostPolicy`], for hosts with nobody to ask (tests, `check`, headless runs).
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultPolicy;

impl HostPolicy for DefaultPolicy {}

/// A file name for a download, from the last segment of its URI: no directories, no traversal,
/// no control or reserved characters, never empty, at most 120 bytes.
pub fn safe_file_name(uri: &str) -> String {
    let without_query = uri.split(['?', '#']).next().unwrap_or_default();
    let last = without_query.rsplit(['/', '\\']).next().unwrap_or_default();
    let decoded = url::form_urlencoded::parse(format!("x={}", last.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    let mut name: String = decoded
        .chars()
        .map(|c| {
            // Bidi overrides and invisible characters would make the saved name read differently.
            if crate::consent::is_deceptive(c) || matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|') {
                '_'
            } else {
                c
            }
        })
        .collect();
    name = name.trim_matches(|c: char| c == '.' || c.is_whitespace()).to_owned();
    if name.is_empty() {
        name = "download".into();
    }
    while name.len() > 120 {
        name.pop();
    }
    name
}

#[cfg(test)]
mod tests {
    use super::safe_file_name;

    #[test]
    fn download_names_cannot_escape_the_folder() {
        assert_eq!(safe_file_name("file:///tmp/report.pdf"), "report.pdf");
        assert_eq!(safe_file_name("ui://app/../../etc/passwd"), "passwd");
        assert_eq!(safe_file_name("https://x.example/a/..%2F..%2Fetc%2Fpasswd"), "_.._etc_passwd");
        assert_eq!(safe_file_name("data.csv?download=1"), "data.csv");
        assert_eq!(safe_file_name("ui://app/"), "download");
        assert_eq!(safe_file_name("ui://app/.."), "download");
        assert_eq!(safe_file_name("ui://app/..\\..\\win.ini"), "win.ini");
        assert_eq!(safe_file_name("ui://app/a%00b"), "a_b");
        assert_eq!(safe_file_name("ui://app/.hidden"), "hidden");
        assert!(safe_file_name(&format!("ui://app/{}", "x".repeat(500))).len() <= 120);
    }

    #[test]
    fn download_names_cannot_read_as_another_name() {
        assert_eq!(safe_file_name("ui://app/invoice%E2%80%AEtxt.exe"), "invoice_txt.exe");
        assert_eq!(safe_file_name("ui://app/a%E2%80%8Bb%E2%81%A6c.txt"), "a_b_c.txt");
    }
}
