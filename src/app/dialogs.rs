//! The app's [`HostPolicy`] and [`ServerRequests`]: the person decides, in the app's dialogs
//! (each question an [`Ask`] that whatever window the app has shows). Display-free: the names
//! say where the decision is made, not which window shows it.

use std::path::PathBuf;

use base64::Engine as _;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::bridge::{safe_file_name, BoxFuture, Decision, HostPolicy, PolicyCapabilities, ViewInfo};
use crate::consent::{app_label, block, file_label, LinkSubject};
use crate::protocol::{DisplayMode, RpcError};
use crate::server::requests::{form_defaults, ElicitAnswer, Elicitation, ElicitationKind, ServerRequests};

/// How consent prompts are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Consent {
    /// Ask the person in an in-app dialog.
    #[default]
    Ask,
    /// Say yes without asking (automation, trusted demos).
    Allow,
    /// Say no without asking (headless runs).
    Deny,
}

/// What the policy needs the controller (and through it the shell) to do.
#[derive(Debug)]
pub(crate) enum Ask {
    /// A yes/no dialog.
    Confirm { view: String, prompt: Prompt, reply: oneshot::Sender<Answer> },
    /// Switch a View's display mode; reply with the mode in effect.
    DisplayMode { view: String, mode: DisplayMode, reply: oneshot::Sender<DisplayMode> },
    /// Show a message a View sent for the conversation; `taken` says whether the conversation
    /// took it (false: too many turns wait for the model).
    Message { view: ViewInfo, content: Vec<Value>, taken: oneshot::Sender<bool> },
    /// Show a View's latest model context.
    ModelContext { view: ViewInfo, context: Option<Value> },
    /// A server's elicitation: show the form (or URL) and reply with the answer. `gone` closes
    /// when the server stops waiting (answered, timed out, cancelled), so the dialog can go.
    Elicit { request: Elicitation, reply: oneshot::Sender<ElicitAnswer>, gone: oneshot::Receiver<()> },
    /// Remove an elicitation dialog nobody waits for any more.
    DismissElicit { dialog: u64 },
    /// A server asks to run its messages on the conversation's model: yes or no.
    Sample { server: String, text: String, reply: oneshot::Sender<bool> },
    /// A turn made ready off the loop (a server's prompt the person ran, a prompt with its
    /// attachments read).
    Turn(crate::conversation::Input),
    /// The composer's prompts and resources, listed off the loop: show and keep them.
    Commands(super::shell::ShellCommand),
    /// The model settings page's contents, read off the loop (the keyring): show them.
    ModelSettings(Value),
    /// The endpoint's models, listed off the loop for the settings page (its origin and the
    /// names), or why not.
    ModelsListed(Result<(String, Vec<String>), String>),
    /// A model the settings page saved, made ready off the loop (its key kept or read): the
    /// conversation goes on with it, or why not.
    ModelSaved(Result<super::model_settings::Saved, String>),
}

/// What came of a question to the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The person said yes (or `--consent allow` did).
    Yes,
    /// The person said no.
    No,
    /// Nobody was asked, or the question went before an answer: why (the App is told this,
    /// never that the person said no).
    NotAsked(String),
}

/// Why a question under `--consent deny` gets no yes.
const DENY_WITHOUT_ASKING: &str = "this host declines such requests without asking the person (--consent deny)";
/// Why a question withdrawn before an answer gets no yes.
const WITHDRAWN: &str = "the question went away before the person answered";

impl Answer {
    /// The refusal the App gets: the person's no (`no`), or why nobody said yes.
    fn refusal(&self, no: &str, not_done: &str) -> Option<String> {
        match self {
            Self::Yes => None,
            Self::No => Some(no.to_owned()),
            Self::NotAsked(why) => Some(format!("{not_done}: {why}")),
        }
    }
}

/// A consent dialog's text, in the order a person reads it (see [`crate::consent`]): a title
/// the host wrote, then what is decided on (one line each, escaped), then who asks, then the
/// untrusted detail. Nothing a server or View wrote comes before the subject.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Prompt {
    pub title: &'static str,
    pub subject: Vec<String>,
    pub source: String,
    pub detail: String,
    pub accept: &'static str,
}

/// The app's answers to servers' requests: elicitation in an in-app form; sampling on
/// the conversation's model once the person said yes (offered only with a model).
pub(crate) struct DialogRequests {
    pub asks: mpsc::UnboundedSender<Ask>,
    pub consent: Consent,
    pub model: Option<std::sync::Arc<dyn crate::model::Model>>,
    /// Every server's sampling requests under way (each server's share is bounded).
    pub sampling: crate::model::sampling::Load,
}

impl ServerRequests for DialogRequests {
    fn can_sample(&self) -> bool {
        self.model.is_some()
    }

    fn sample(&self, server: &str, params: Value) -> BoxFuture<Result<Value, RpcError>> {
        use crate::protocol::jsonrpc::code;
        let refused =
            |message: String| Box::pin(std::future::ready(Err(RpcError::new(code::INVALID_REQUEST, message))));
        let Some(model) = self.model.clone() else { return refused("sampling is not offered by this host".into()) };
        let (request, text) = match crate::model::sampling::request(&params) {
            Ok(r) => r,
            Err(e) => return refused(format!("invalid sampling request: {e}")),
        };
        let admitted = match self.sampling.admit(server, std::time::Instant::now()) {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!(server, "sampling request refused: {e}");
                return refused(format!("sampling request refused: {e}"));
            }
        };
        let decided = match self.consent {
            Consent::Allow => None,
            Consent::Deny => return refused(format!("sampling request refused: {DENY_WITHOUT_ASKING}")),
            Consent::Ask => {
                let (reply, rx) = oneshot::channel();
                let _ = self.asks.send(Ask::Sample { server: server.to_owned(), text, reply });
                Some(rx)
            }
        };
        let server = server.to_owned();
        Box::pin(async move {
            let _admitted = admitted;
            if let Some(rx) = decided {
                match rx.await {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err(RpcError::new(code::INVALID_REQUEST, "the user declined the sampling request"))
                    }
                    Err(_) => {
                        let why = format!("sampling request not answered: {WITHDRAWN}");
                        return Err(RpcError::new(code::INVALID_REQUEST, why));
                    }
                }
            }
            tracing::info!(server = %server, "sampling on {}", model.describe());
            crate::model::sampling::run(model.as_ref(), request)
                .await
                .map_err(|e| RpcError::new(code::INTERNAL_ERROR, format!("the model failed: {e}")))
        })
    }

    fn elicit(&self, request: Elicitation) -> BoxFuture<ElicitAnswer> {
        match self.consent {
            Consent::Ask => {}
            Consent::Deny => {
                tracing::info!(server = %request.server, "elicitation declined (--consent deny): {:?}", request.message);
                return Box::pin(std::future::ready(ElicitAnswer::Decline));
            }
            Consent::Allow => {
                let answer = match &request.kind {
                    ElicitationKind::Form { schema } => match form_defaults(schema) {
                        Ok(values) => ElicitAnswer::Accept(values),
                        Err(missing) => {
                            tracing::info!(server = %request.server, "elicitation declined (--consent allow answers only with defaults; none for {missing})");
                            ElicitAnswer::Decline
                        }
                    },
                    // Opening a server's URL unasked is not something "allow" should do.
                    ElicitationKind::Url { .. } => ElicitAnswer::Decline,
                };
                return Box::pin(std::future::ready(answer));
            }
        }
        let (reply, rx) = oneshot::channel();
        let (gone_tx, gone) = oneshot::channel();
        if self.asks.send(Ask::Elicit { request, reply, gone }).is_err() {
            return Box::pin(std::future::ready(ElicitAnswer::Cancel));
        }
        Box::pin(async move {
            let _gone = gone_tx;
            rx.await.unwrap_or(ElicitAnswer::Cancel)
        })
    }
}

/// The app's decisions for Views: what needs the person is asked in a dialog.
pub(crate) struct DialogPolicy {
    pub asks: mpsc::UnboundedSender<Ask>,
    pub consent: Consent,
    /// A command that opens links instead of the system browser (tests, kiosks).
    pub opener: Option<String>,
    pub downloads: PathBuf,
    pub display_modes: Vec<DisplayMode>,
    /// A host profile's optional requests (none: all of this host's).
    pub offers: Option<crate::profile::Offers>,
}

/// Plain text of content blocks, for a person to read (never rendered as HTML).
pub(crate) fn content_text(content: &[Value]) -> String {
    content
        .iter()
        .map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => b.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
            Some(kind) => format!("[{kind}]"),
            None => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl DialogPolicy {
    fn confirm(&self, view: &ViewInfo, prompt: Prompt) -> BoxFuture<Answer> {
        match self.consent {
            Consent::Allow => return Box::pin(async { Answer::Yes }),
            Consent::Deny => return Box::pin(async { Answer::NotAsked(DENY_WITHOUT_ASKING.into()) }),
            Consent::Ask => {}
        }
        let (reply, rx) = oneshot::channel();
        let _ = self.asks.send(Ask::Confirm { view: view.view.clone(), prompt, reply });
        Box::pin(async move { rx.await.unwrap_or_else(|_| Answer::NotAsked(WITHDRAWN.into())) })
    }
}

/// Opens `url` in the system browser, or with `opener` (a command line; the URL is appended).
/// Only `http(s)` addresses without userinfo are handed over, re-serialized: nothing that a
/// program could read as a file, another scheme's handler or an option (`--help`).
pub(crate) fn open_url(opener: Option<&str>, url: &str) -> std::io::Result<()> {
    let (parsed, _) = LinkSubject::parse(url).map_err(std::io::Error::other)?;
    let url = parsed.as_str();
    debug_assert!(url.starts_with("http"));
    match opener {
        Some(cmd) => {
            let mut words = shell_words::split(cmd).map_err(std::io::Error::other)?;
            if words.is_empty() {
                return Err(std::io::Error::other("empty opener command"));
            }
            let program = words.remove(0);
            crate::host_env::as_given(&mut std::process::Command::new(program)).args(words).arg(url).spawn().map(drop)
        }
        None => open::that_detached(url),
    }
}

/// A file to save: its name and bytes.
fn file_of(block: &Value) -> Result<(String, Vec<u8>), String> {
    match block.get("type").and_then(Value::as_str) {
        Some("resource") => {
            let r = &block["resource"];
            let uri = r.get("uri").and_then(Value::as_str).unwrap_or_default();
            let bytes = match (r.get("text").and_then(Value::as_str), r.get("blob").and_then(Value::as_str)) {
                (Some(text), _) => text.as_bytes().to_vec(),
                (None, Some(blob)) => base64::engine::general_purpose::STANDARD
                    .decode(blob.trim())
                    .map_err(|e| format!("{uri}: blob is not base64: {e}"))?,
                _ => return Err(format!("{uri}: no text or blob")),
            };
            Ok((safe_file_name(uri), bytes))
        }
        _ => Err("links to resources are not downloaded by this host; embed the file".into()),
    }
}

/// A path in `dir` for `name` that does not exist yet (`name (2).ext`, ...).
fn unique_path(dir: &std::path::Path, name: &str) -> PathBuf {
    let first = dir.join(name);
    if !first.exists() {
        return first;
    }
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s.to_owned(), format!(".{e}")),
        _ => (name.to_owned(), String::new()),
    };
    (2..).map(|n| dir.join(format!("{stem} ({n}){ext}"))).find(|p| !p.exists()).expect("an unused name exists")
}

impl HostPolicy for DialogPolicy {
    fn capabilities(&self) -> PolicyCapabilities {
        let offers = self.offers.unwrap_or(crate::profile::Offers {
            open_links: true,
            message: true,
            update_model_context: true,
            download_file: true,
        });
        PolicyCapabilities {
            open_links: offers.open_links,
            message: offers.message,
            update_model_context: offers.update_model_context,
            download_file: offers.download_file,
            display_modes: self.display_modes.clone(),
        }
    }

    fn open_link(&self, view: &ViewInfo, url: &url::Url) -> BoxFuture<Decision> {
        let subject = match LinkSubject::of(url) {
            Ok(s) => s,
            Err(reason) => return Box::pin(std::future::ready(Decision::Denied(reason))),
        };
        let asked = self.confirm(
            view,
            Prompt {
                title: "Open this website in your browser?",
                subject: vec![subject.host],
                source: format!("Asked by the App {}", app_label(&view.tool, &view.server)),
                detail: subject.address,
                accept: "Open",
            },
        );
        let (url, opener) = (url.to_string(), self.opener.clone());
        Box::pin(async move {
            if let Some(why) = asked.await.refusal("the user did not open the link", "the link was not opened") {
                return Decision::Denied(why);
            }
            match open_url(opener.as_deref(), &url) {
                Ok(()) => Decision::Allowed,
                Err(e) => Decision::Denied(format!("the link could not be opened: {e}")),
            }
        })
    }

    fn message(&self, view: &ViewInfo, _role: &str, content: &[Value]) -> BoxFuture<Decision> {
        let asked = self.confirm(
            view,
            Prompt {
                title: "Add a message from this App to the conversation?",
                subject: vec![app_label(&view.tool, &view.server)],
                source: "The App wrote this message:".into(),
                detail: block(&content_text(content)),
                accept: "Add",
            },
        );
        let asks = self.asks.clone();
        let (view, content) = (view.clone(), content.to_vec());
        Box::pin(async move {
            if let Some(why) =
                asked.await.refusal("the user did not add the message", "the message was not shown to the user")
            {
                return Decision::Denied(why);
            }
            let (taken, rx) = oneshot::channel();
            let _ = asks.send(Ask::Message { view, content, taken });
            if rx.await.unwrap_or(true) {
                Decision::Allowed
            } else {
                Decision::Denied("the conversation has too many turns waiting for the model".into())
            }
        })
    }

    fn update_model_context(&self, view: &ViewInfo, context: Option<&Value>) {
        let _ = self.asks.send(Ask::ModelContext { view: view.clone(), context: context.cloned() });
    }

    fn request_display_mode(
        &self,
        view: &ViewInfo,
        current: DisplayMode,
        requested: DisplayMode,
    ) -> BoxFuture<DisplayMode> {
        let (reply, rx) = oneshot::channel();
        let sent = self.asks.send(Ask::DisplayMode { view: view.view.clone(), mode: requested, reply });
        Box::pin(async move {
            if sent.is_err() {
                return current;
            }
            rx.await.unwrap_or(current)
        })
    }

    fn download_file(&self, view: &ViewInfo, contents: &[Value]) -> BoxFuture<Decision> {
        let files: Result<Vec<(String, Vec<u8>)>, String> = contents.iter().map(file_of).collect();
        let files = match files {
            Ok(f) => f,
            Err(e) => return Box::pin(async move { Decision::Denied(e) }),
        };
        let dir = self.downloads.clone();
        let asked = self.confirm(
            view,
            Prompt {
                title: "Save these files?",
                subject: files.iter().map(|(n, b)| format!("{} ({} bytes)", file_label(n), b.len())).collect(),
                source: format!("Asked by the App {}", app_label(&view.tool, &view.server)),
                detail: format!("Saved to {}", file_label(&dir.display().to_string())),
                accept: "Save",
            },
        );
        Box::pin(async move {
            if let Some(why) = asked.await.refusal("the user did not save the files", "the files were not saved") {
                return Decision::Denied(why);
            }
            let saved = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<PathBuf>> {
                std::fs::create_dir_all(&dir)?;
                files
                    .into_iter()
                    .map(|(name, bytes)| {
                        let path = unique_path(&dir, &name);
                        std::fs::write(&path, bytes).map(|()| path)
                    })
                    .collect()
            })
            .await;
            match saved {
                Ok(Ok(paths)) => {
                    for p in paths {
                        tracing::info!("saved download {}", p.display());
                    }
                    Decision::Allowed
                }
                Ok(Err(e)) => Decision::Denied(format!("saving failed: {e}")),
                Err(e) => Decision::Denied(format!("saving failed: {e}")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn files_come_from_embedded_resources_only() {
        let (name, bytes) =
            file_of(&json!({"type": "resource", "resource": {"uri": "file:///a/../r.csv", "text": "x"}})).unwrap();
        assert_eq!((name.as_str(), bytes.as_slice()), ("r.csv", b"x".as_slice()));
        let (_, bytes) =
            file_of(&json!({"type": "resource", "resource": {"uri": "ui://b.bin", "blob": "AAEC"}})).unwrap();
        assert_eq!(bytes, [0, 1, 2]);
        assert!(file_of(&json!({"type": "resource_link", "uri": "https://x/y"})).is_err());
    }

    #[test]
    fn unique_paths_never_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "1").unwrap();
        std::fs::write(dir.path().join("a (2).txt"), "2").unwrap();
        assert_eq!(unique_path(dir.path(), "a.txt"), dir.path().join("a (3).txt"));
        assert_eq!(unique_path(dir.path(), "b"), dir.path().join("b"));
    }

    #[test]
    fn content_is_shown_as_text() {
        let text = content_text(&[json!({"type": "text", "text": "hi"}), json!({"type": "image", "data": "..."})]);
        assert_eq!(text, "hi\n[image]");
    }
}
