//! MCP Apps wire types and constants: pure serde, no I/O.
//!
//! The names follow the spec (`io.modelcontextprotocol/ui`, stable 2026-01-26, plus the draft
//! additions that the published App SDK already speaks). Unknown fields are kept where the spec
//! allows extension, so a View or server that sends more than we know about is not truncated.

pub mod jsonrpc;
pub mod locale;
pub mod methods;
pub mod styles;
pub mod types;

pub use jsonrpc::{Message, ParseError, RequestId, RpcError};
pub use types::*;

/// The extension id a host advertises in its MCP `initialize` (SEP-1724 `extensions`).
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";

/// The only MIME type a `ui://` App resource may have.
pub const RESOURCE_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The deprecated flat tool meta key (`_meta["ui/resourceUri"]`), still read for old servers.
pub const LEGACY_RESOURCE_URI_META_KEY: &str = "ui/resourceUri";

/// The newest MCP Apps protocol version.
pub const LATEST_PROTOCOL_VERSION: &str = "2026-01-26";

/// Protocol versions this host speaks; the View's version is echoed when it is one of these.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] = &[LATEST_PROTOCOL_VERSION, "2025-11-21"];

/// Picks the protocol version to answer a View's `ui/initialize` with.
pub fn negotiate_protocol_version(requested: &str) -> &'static str {
    SUPPORTED_PROTOCOL_VERSIONS.iter().copied().find(|v| *v == requested).unwrap_or(LATEST_PROTOCOL_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_supported_versions_and_falls_back_to_latest() {
        assert_eq!(negotiate_protocol_version("2025-11-21"), "2025-11-21");
        assert_eq!(negotiate_protocol_version("2026-01-26"), "2026-01-26");
        assert_eq!(negotiate_protocol_version("2099-01-01"), LATEST_PROTOCOL_VERSION);
        assert_eq!(negotiate_protocol_version(""), LATEST_PROTOCOL_VERSION);
    }
}
