//! Origins: the trusted host shell and one untrusted sandbox origin per server.

use sha2::{Digest, Sha256};

/// Custom scheme of the trusted host shell page.
pub const HOST_SCHEME: &str = "mcp-host";
/// Origin of the host shell (`mcp-host://app`).
pub const HOST_ORIGIN: &str = "mcp-host://app";
/// Custom scheme of sandbox proxies; the host part is the per-server label.
pub const SANDBOX_SCHEME: &str = "mcp-sandbox";

/// A stable, DNS-safe label for a server identity (`ServerSpec::identity`: a URL, or a stdio
/// program's command line, folder, environment and executable).
///
/// Views of different servers (two programs behind one command line too) get different labels,
/// hence different origins, storage and DOM; the same server gets the same origin in every run
/// (stable for CORS allowlists and the like; its Views' `localStorage` is kept across runs under
/// this label, see `sandbox/storage.rs`).
pub fn sandbox_label(server_identity: &str) -> String {
    let digest = Sha256::digest(server_identity.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The sandbox origin for a label, e.g. `mcp-sandbox://0123abcd...`.
pub fn sandbox_origin(label: &str) -> String {
    format!("{SANDBOX_SCHEME}://{label}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_stable_distinct_and_host_safe() {
        let a = sandbox_label("node server.js --stdio");
        assert_eq!(a, sandbox_label("node server.js --stdio"));
        assert_ne!(a, sandbox_label("node other.js --stdio"));
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    }
}
