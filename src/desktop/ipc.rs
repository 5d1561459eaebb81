//! The shell's private line to Rust.
//!
//! On WebKitGTK `window.webkit.messageHandlers.ipc` exists in every frame, Views included, and the
//! IPC request does not say which frame sent it. So the host gives the shell, and only the shell, a
//! per-launch secret: a main-frame-only init script captures the message handler and the secret
//! in a closure before any page script runs, and Rust drops every message that does not start with
//! the secret. Views are cross-origin to the shell and cannot read the closure.

use crate::sandbox::HOST_ORIGIN;

/// Run at the start of every document in a View's webview: a frame hands its window to its
/// parent's `__mcpProxyAdopt`, which only the proxy page has and which watches only the proxy's
/// own View frame for diagnostics, before the View's own scripts run (a View's document loaded
/// by URL gets a new window the proxy could not reach in time otherwise). The proxy frame itself
/// cannot read its parent (the host's top document, another origin) and does nothing.
pub(crate) const FRAME_HOOK_SCRIPT: &str = r#"(function () {
  "use strict";
  if (window.top === window) return;
  try {
    var adopt = window.parent.__mcpProxyAdopt;
    if (typeof adopt === "function") adopt(window);
  } catch (e) { /* a parent of another origin */ }
})();"#;

/// The per-launch IPC secret.
#[derive(Clone)]
pub struct IpcSecret(String);

impl std::fmt::Debug for IpcSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IpcSecret(..)")
    }
}

impl IpcSecret {
    /// 32 random bytes from the OS, hex-encoded.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the OS random source is available");
        Self(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The init script that hands the shell its `__mcpHostSend` function.
    pub fn init_script(&self) -> String {
        format!(
            r#"(function () {{
  "use strict";
  if (window.top !== window || !String(location.href).startsWith({origin})) return;
  var handler = window.webkit && window.webkit.messageHandlers && window.webkit.messageHandlers.ipc;
  if (!handler) return;
  var post = handler.postMessage.bind(handler);
  var secret = {secret};
  Object.defineProperty(window, "__mcpHostSend", {{
    value: function (obj) {{ post(secret + JSON.stringify(obj)); }},
    writable: false, configurable: false
  }});
}})();"#,
            origin = serde_json::to_string(&format!("{HOST_ORIGIN}/")).expect("string"),
            secret = serde_json::to_string(&self.0).expect("string"),
        )
    }

    /// The init script that hands a View's proxy page (`src`) its `__mcpProxySend` function:
    /// the line to Rust that only this page holds. It runs in every frame of the View's webview
    /// (the proxy is not the main frame) and gives the line only to the document at `src` that
    /// is a child of the top document: the View's frame (a child of the proxy) and anything it
    /// nests never match, whatever URL they take. `on_top` is the test topology where the proxy
    /// is the top document itself.
    pub fn proxy_init_script(&self, src: &str, on_top: bool) -> String {
        let place =
            if on_top { "window.top === window" } else { "window.top !== window && window.parent === window.top" };
        format!(
            r#"(function () {{
  "use strict";
  if (!({place}) || String(location.href) !== {src}) return;
  var handler = window.webkit && window.webkit.messageHandlers && window.webkit.messageHandlers.ipc;
  if (!handler) return;
  var post = handler.postMessage.bind(handler);
  var secret = {secret};
  Object.defineProperty(window, "__mcpProxySend", {{
    value: function (kind, text) {{ post(secret + kind + text); }},
    writable: false, configurable: false
  }});
}})();"#,
            src = serde_json::to_string(src).expect("string"),
            secret = serde_json::to_string(&self.0).expect("string"),
        )
    }

    /// The secret itself, for tests that build messages.
    #[cfg(test)]
    pub fn expose_for_tests(&self) -> &str {
        &self.0
    }

    /// The message without the secret, or `None` when the secret is missing or wrong.
    pub fn open<'a>(&self, body: &'a str) -> Option<&'a str> {
        let head = body.get(..self.0.len())?;
        // Constant-time compare: the secret's prefix must not be guessable byte by byte.
        let diff = head.bytes().zip(self.0.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        (diff == 0).then(|| &body[self.0.len()..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_messages_with_the_secret_open() {
        let s = IpcSecret::generate();
        let good = format!("{}{{\"kind\":\"ready\"}}", s.0);
        assert_eq!(s.open(&good), Some("{\"kind\":\"ready\"}"));
        assert_eq!(s.open("{\"kind\":\"ready\"}"), None);
        assert_eq!(s.open(&format!("{}x", "0".repeat(64))), None);
        assert_eq!(s.open(""), None);
        assert_ne!(IpcSecret::generate().0, s.0);
        assert_eq!(s.0.len(), 64);
    }

    #[test]
    fn multibyte_input_never_panics() {
        let s = IpcSecret::generate();
        assert_eq!(s.open(&"é".repeat(40)), None);
    }
}
