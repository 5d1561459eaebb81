//! The shell's private line to Rust.
//!
//! On WebKitGTK `window.webkit.messageHandlers.ipc` exists in every frame, Views included, and the
//! IPC request does not say which frame sent it. So the host gives the shell, and only the shell, a
//! per-launch secret: a main-frame-only init script captures the message handler and the secret
//! in a closure before any page script runs, and Rust drops every message that does not start with
//! the secret. Views are cross-origin to the shell and cannot read the closure.

use serde::Deserialize;

use crate::sandbox::HOST_ORIGIN;

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

    /// The init script that hands a View's proxy page (`src`, the main frame only) its
    /// `__mcpProxySend` function: the line to Rust that only this page holds.
    pub fn proxy_init_script(&self, src: &str) -> String {
        format!(
            r#"(function () {{
  "use strict";
  if (window.top !== window || String(location.href) !== {src}) return;
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

/// What the shell tells Rust.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ShellMessage {
    /// The shell page is loaded and can take commands.
    Ready,
    /// The shell's heartbeat: its web process runs (see `supervisor.rs`).
    Alive,
    /// The person answered a consent dialog.
    Answer {
        /// The dialog.
        dialog: u64,
        /// Yes or no.
        accepted: bool,
        /// The person ticked "for the rest of the session" (dialogs that offer it).
        #[serde(default)]
        remember: bool,
    },
    /// The person picked a theme.
    Theme {
        /// The theme.
        theme: crate::protocol::Theme,
    },
    /// The person called a tool from the picker.
    CallTool {
        /// The tool's server (`None`: the one server that has a tool of that name).
        #[serde(default)]
        server: Option<String>,
        /// The tool.
        tool: String,
        /// Its arguments (checked against the schema by the shell; the server checks again).
        #[serde(default)]
        arguments: serde_json::Map<String, serde_json::Value>,
    },
    /// The person answered a server's elicitation.
    ElicitAnswer {
        /// The dialog.
        dialog: u64,
        /// `accept`, `decline` or `cancel`.
        action: String,
        /// The form's values (for `accept`).
        #[serde(default)]
        content: serde_json::Map<String, serde_json::Value>,
    },
    /// The person asked to sign in to a server.
    SignIn {
        /// The server.
        server: String,
    },
    /// The person cancelled a sign-in in progress.
    CancelSignIn {
        /// The server.
        server: String,
    },
    /// The person asked to restart a server now.
    Restart {
        /// The server.
        server: String,
    },
    /// The developer panel sends a notification to a View as given.
    DevSend {
        /// The View.
        view: String,
        /// `ui/notifications/tool-input` and the like.
        method: String,
        /// Its params.
        #[serde(default)]
        params: serde_json::Value,
    },
    /// The developer panel changes a View's host context.
    DevContext {
        /// The View.
        view: String,
        /// The fields to change.
        context: serde_json::Value,
    },
    /// The developer panel asks to reload every View.
    Reload,
    /// The developer panel (its button, F12 or Ctrl+Shift+I) asks for WebKit's web inspector.
    /// Honoured only in `preview`: `run` refuses it, and its webview has no developer extras.
    Inspector,
    /// The person closed a View's card.
    Close {
        /// The View.
        view: String,
    },
    /// The person chose to wait for a View that does not respond.
    Wait {
        /// The View.
        view: String,
    },
    /// The person chose to stop a View that does not respond (and its server's other Views).
    StopApp {
        /// The View.
        view: String,
    },
    /// The person stops the model's turn under way.
    StopTurn,
    /// The person reopens a stored conversation.
    Reopen {
        /// Its id.
        id: String,
    },
    /// The person's prompt for the model.
    Prompt {
        /// What they wrote.
        text: String,
    },
    /// The person took a View out of fullscreen or picture-in-picture.
    Inline {
        /// The View.
        view: String,
    },
    /// A diagnostic from a View's proxy page (CSP violation, uncaught error, console message), on
    /// its own IPC line: never from the shell.
    #[serde(skip_deserializing)]
    Diagnostic {
        /// The View.
        view: String,
        /// `{kind, detail}` as the proxy reported it.
        data: serde_json::Value,
    },
    /// A View's proxy page dropped a message of the View (not serialisable), on its own line.
    #[serde(skip_deserializing)]
    Dropped {
        /// The View.
        view: String,
        /// Why.
        reason: String,
    },
    /// Where the Views' slots are, in the rectangle they are clipped to (`frames.rs`).
    Frames {
        /// The clip rectangle: the stream, or the window in fullscreen and pip.
        clip: super::frames::Rect,
        /// The slots in sight.
        slots: Vec<super::frames::Slot>,
    },
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

    #[test]
    fn shell_messages_parse() {
        let m: ShellMessage = serde_json::from_str(r#"{"kind":"stop-app","view":"v1"}"#).unwrap();
        assert_eq!(m, ShellMessage::StopApp { view: "v1".into() });
        // A View's words come on its own line only: the shell cannot speak for a View.
        assert!(serde_json::from_str::<ShellMessage>(r#"{"kind":"view","view":"v1","msg":"{}"}"#).is_err());
        assert!(serde_json::from_str::<ShellMessage>(r#"{"kind":"diagnostic","view":"v1","data":{}}"#).is_err());
        let m: ShellMessage = serde_json::from_str(r#"{"kind":"inspector"}"#).unwrap();
        assert_eq!(m, ShellMessage::Inspector);
    }
}
