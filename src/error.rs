//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong in the host, with what failed and on what input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server command line could not be parsed or is empty.
    #[error("bad server command line {command:?}: {reason}")]
    BadCommand {
        /// The command line as given.
        command: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A server URL (`--url`) breaks a rule.
    #[error("bad MCP server URL {url}: {reason}")]
    BadUrl {
        /// The URL as given, without any user name or password in it.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `--header` line breaks a rule.
    #[error("bad header {header}: {reason}")]
    BadHeader {
        /// The header name, or `#<n>` (its position) when there is no usable name;
        /// never the value, which may be a secret.
        header: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An MCP config file cannot be used at all (unreadable, not JSON, unknown shape).
    #[error("MCP config {}: {reason}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The server process could not be started.
    #[error("could not start MCP server `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The MCP handshake with a server failed.
    #[error("MCP server `{server}` did not complete initialize: {reason}")]
    Handshake {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// A remote server needs sign-in (it answered 401).
    #[error("MCP server `{server}` needs sign-in (`mcp-apps-host run` signs in through your browser)")]
    AuthRequired {
        /// The server.
        server: String,
        /// Its `WWW-Authenticate` challenge (where to sign in, which scopes).
        challenge: String,
    },
    /// A request to a server failed.
    #[error("MCP server `{server}`: {method} failed: {reason}")]
    Request {
        /// The server.
        server: String,
        /// The MCP method.
        method: String,
        /// Why.
        reason: String,
    },
    /// No tool by that name.
    #[error("MCP server `{server}` has no tool `{tool}` (it has: {available})")]
    NoSuchTool {
        /// The server.
        server: String,
        /// The name asked for.
        tool: String,
        /// The names it has, comma-separated.
        available: String,
    },
    /// The tool has no `ui://` resource.
    #[error("tool `{tool}` has no UI: its _meta has no ui.resourceUri (nor the legacy \"ui/resourceUri\")")]
    NoUi {
        /// The tool.
        tool: String,
    },
    /// A tool or resource breaks the MCP Apps rules.
    #[error(transparent)]
    UiLink(#[from] crate::ui_resource::UiLinkError),
    /// The trace file could not be created.
    #[error("cannot write trace file {path}: {source}")]
    Trace {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The webview or window failed.
    #[error("desktop: {0}")]
    Desktop(String),
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
