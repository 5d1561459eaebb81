//! What the app and its window say to each other. The app (this module's parent) decides; a
//! window carries out [`UserEvent`]s (the shell page, the Views' webviews, the window itself,
//! the web content's processes) and reports back [`HostInput`]. The desktop runtime is one
//! window (tao, wry, WebKitGTK); the app's unit tests are another, with no display at all.

use std::sync::Arc;
use std::time::Duration;

use super::shell::ShellMessage;
use crate::protocol::Theme;

/// Events the tokio side sends to the UI thread.
#[derive(Debug)]
pub(crate) enum UserEvent {
    /// A shell command (JSON) for `window.__mcpShell.dispatch`.
    Shell(String),
    /// Something for the Views' own webviews.
    Frame(FrameOp),
    /// Evaluate an automation script in the shell.
    Eval(String),
    /// Change the window itself.
    Window(WindowOp),
    /// Input of an interaction session (`super::interaction`) in a View's webview.
    Input(InputOp),
    /// Write a screenshot of the webview to this PNG file.
    Screenshot(std::path::PathBuf, tokio::sync::oneshot::Sender<std::result::Result<std::path::PathBuf, String>>),
    /// Replace the web process with a fresh one and reload the shell (no View is open): the
    /// only way to hand back the memory WebKit keeps after many Views closed.
    Recycle,
    /// Supervise the web content: stop it, restart it, ask the person about a hang.
    WebContent(WebContentOp),
    /// Open WebKit's web inspector (preview only: the controller refuses it in `run`).
    OpenInspector,
    /// Ask the person for a file or folder in a native file chooser: a config file to import
    /// (it comes back as `ShellMessage::ImportConfig`), or a path for a setting of the install
    /// dialog (back as `ShellMessage::PathChosen`).
    ChooseFile(Choice),
    /// Leave the event loop with this exit code.
    Exit(i32),
}

/// What an interaction session asks of a View's webview (`super::interaction`); each answers
/// on its channel.
#[derive(Debug)]
pub(crate) enum InputOp {
    /// Where the element `target` names is (a JSON target of `webext/session.c`), scrolled into
    /// the View's sight.
    Find { view: String, target: String, done: tokio::sync::oneshot::Sender<Result<super::interaction::Found, String>> },
    /// A click of the primary button at this point of the View's webview (CSS pixels).
    Click { view: String, x: f64, y: f64, done: tokio::sync::oneshot::Sender<Result<(), String>> },
    /// These characters typed, one key at a time, where the View's keyboard focus is.
    Keys { view: String, text: String, done: tokio::sync::oneshot::Sender<Result<(), String>> },
    /// One named key (`Enter`, `Tab`, ...) or character pressed and released.
    Key { view: String, key: String, done: tokio::sync::oneshot::Sender<Result<(), String>> },
    /// The text the View shows.
    Text { view: String, done: tokio::sync::oneshot::Sender<Result<String, String>> },
    /// Test interface only: the iframes of the document that holds the View's frame, and of the
    /// top document (JSON of `webext/session.c`).
    InspectFrame { view: String, done: tokio::sync::oneshot::Sender<Result<String, String>> },
    /// Test interface only: a runner's script evaluated in the View's frame; `v` and its value
    /// as JSON, or `e` and why not (`webext/session.c`).
    Evaluate { view: String, script: String, done: tokio::sync::oneshot::Sender<Result<String, String>> },
}

/// Window changes for display modes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WindowOp {
    /// A small always-on-top window showing one View.
    Pip,
    /// Back to the normal window.
    Restore,
    /// Bring the window to the front (a second launch of the app).
    Present,
}

/// What the UI thread tells the controller.
#[derive(Debug)]
pub(crate) enum HostInput {
    /// A message from the shell page.
    Shell(ShellMessage),
    /// The user closed the window.
    CloseRequested,
    /// The person pressed one of the window's keyboard shortcuts (`desktop/shortcuts.rs`).
    Shortcut(Shortcut),
    /// The window's inner size changed (logical px).
    Resized {
        /// Width.
        width: f64,
        /// Height.
        height: f64,
    },
    /// The system theme changed.
    SystemTheme(crate::protocol::Theme),
    /// What WebKit or the person said about the web content.
    WebContent(WebContentSignal),
    /// What the Views' webviews reported.
    Frame(FrameSignal),
}

/// What a keyboard shortcut of the window asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shortcut {
    /// Ctrl+Q, and Ctrl+W (the app's one window): the app ends as when its window is closed.
    Quit,
    /// Ctrl+N: a new conversation.
    NewConversation,
    /// Ctrl+comma: the settings.
    Settings,
    /// F1 or Ctrl+?: the list of shortcuts.
    Shortcuts,
}

/// What a native file chooser is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Choice {
    /// A config file whose servers the servers editor imports.
    ConfigFile,
    /// A path for the install dialog's field `field`: a folder, or a file.
    Setting { field: String, directory: bool },
}

/// Where the tokio side sends work for the UI thread: the host's own event loop, or an
/// embedder's (through their `EventLoopProxy`, wrapped in their event type).
#[derive(Clone)]
pub(crate) struct Ui {
    send: Arc<dyn Fn(UserEvent) -> bool + Send + Sync>,
    post: Option<PostLine>,
}

/// The window side's own line for messages into Views' webviews (`view`, JSON text): faster
/// than an event through the event loop, and free to batch what arrives in one turn.
pub(crate) type PostLine = Arc<dyn Fn(String, String) + Send + Sync>;

impl Ui {
    /// A sender that hands each event to `send` (false once the window side is gone).
    pub(crate) fn new(send: impl Fn(UserEvent) -> bool + Send + Sync + 'static) -> Self {
        Self { send: Arc::new(send), post: None }
    }

    /// Messages for Views go on `line` instead of as [`FrameOp::Post`] events.
    pub(crate) fn with_post_line(mut self, line: PostLine) -> Self {
        self.post = Some(line);
        self
    }

    /// Sends; `Err` once the event loop is gone.
    pub(crate) fn send_event(&self, event: UserEvent) -> std::result::Result<(), ()> {
        if (self.send)(event) {
            Ok(())
        } else {
            Err(())
        }
    }

    /// Hands `msg` (JSON text) to `view`'s webview: on the post line when the window side has
    /// one, else as a [`FrameOp::Post`] event. Either way a View's messages stay in order; they
    /// are not ordered with other events, and need not be: a View's first message answers its
    /// proxy page, which exists only once its [`FrameOp::Mount`] was carried out.
    pub(crate) fn post(&self, view: String, msg: String) {
        match &self.post {
            Some(line) => line(view, msg),
            None => {
                let _ = self.send_event(UserEvent::Frame(FrameOp::Post { view, msg }));
            }
        }
    }

    /// `view`'s line into its webview, for its session ([`crate::bridge::ViewConfig::post_sink`]):
    /// the session posts on it from its own task, and the controller does not relay.
    pub(crate) fn line_to(&self, view: String) -> Arc<dyn crate::bridge::PostSink> {
        Arc::new(ViewLine { ui: self.clone(), view })
    }
}

/// One View's line into its webview: what its session posts goes to the window side as
/// [`Ui::post`] does, without passing through the controller.
struct ViewLine {
    ui: Ui,
    view: String,
}

impl crate::bridge::PostSink for ViewLine {
    fn post(&self, msg: String) {
        self.ui.post(self.view.clone(), msg);
    }
}

/// A rectangle in the shell page's CSS pixels (the webview's logical pixels).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Deserialize)]
pub(crate) struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

/// Where one View's slot is.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub(crate) struct Slot {
    pub view: String,
    #[serde(flatten)]
    pub rect: Rect,
}

/// A View to give a webview.
#[derive(Debug, Clone)]
pub(crate) struct FrameMount {
    /// The View.
    pub view: String,
    /// Its server's sandbox label: Views with the same label share a web process.
    pub label: String,
    /// The URL of the View's own proxy page (served with the View's CSP), for a View whose
    /// document the proxy writes.
    pub src: String,
    /// Where the View's document is served, for a View whose frame loads it: any proxy page of
    /// its origin made in advance can take it, and `src` is not needed.
    pub document: Option<String>,
    /// The web origins its CSP declared, as "scheme host port" (see
    /// [`crate::sandbox::csp::request_origins`]): its web process lets its requests go nowhere else.
    pub origins: Vec<String>,
    /// It declared `clipboardWrite`: its page gets the Async Clipboard API (see
    /// [`crate::desktop::engine::clipboard`]).
    pub clipboard_write: bool,
    /// The View's session: its messages go there straight from its IPC line (the controller
    /// does not relay them).
    pub session: crate::bridge::ViewHandle,
    /// The height of its card's slot, before the shell reports where the slot is (px).
    pub height: f64,
}

/// What the controller asks of the View webviews.
#[derive(Debug)]
pub(crate) enum FrameOp {
    /// Create a View's webview and load its proxy page.
    Mount(FrameMount),
    /// A JSON-RPC message (JSON text) for a View.
    Post { view: String, msg: String },
    /// Destroy a View's webview. `keep_process`: the View goes to sleep, and its web process
    /// is not ended even when it does not respond (a closed View of a hung process ends it).
    Unmount { view: String, keep_process: bool },
    /// End the web process of the Views with this sandbox label (WebKit then reports them gone).
    Stop { label: String },
    /// The server of this sandbox label was removed: its Views' kept storage goes, from disk and
    /// from this run's memory, and its next View starts empty.
    Forget { label: String },
    /// A View with this sandbox label will open soon: start its web process and a proxy page.
    Prepare { label: String },
    /// A View initialized: its load and its handshake are over, so its server's next proxy page
    /// can be made in its web process without slowing them down.
    Initialized { view: String },
    /// Destroy every View's webview (the shell restarts and remounts them).
    Clear,
    /// The host's theme (the card background behind a View).
    Theme(Theme),
}

/// What the View webviews tell the controller.
#[derive(Debug)]
pub(crate) enum FrameSignal {
    /// The web process of the Views with this label stopped answering.
    Hung { label: String },
    /// It answers again, after this long.
    Responsive { label: String, after: Duration },
    /// A View's web process ended (WebKit's reason, in words).
    Gone { view: String, reason: String },
}

/// What WebKit or the person said about the web content.
#[derive(Debug)]
pub(crate) enum WebContentSignal {
    /// The web process ended (`web-process-terminated`), with WebKit's reason in words.
    Terminated(String),
    /// WebKit's own responsiveness flag changed (slower than the shell heartbeat; logged).
    Responsive(bool),
    /// The person answered the native "not responding" dialog.
    HangAnswer {
        /// Stop the web content (else: wait).
        stop: bool,
    },
}

/// What the controller asks the UI thread to do with the web content.
#[derive(Debug)]
pub(crate) enum WebContentOp {
    /// End the web process (WebKit then reports it terminated).
    Stop,
    /// Load the shell again, in a new web process.
    Restart,
    /// Ask the person, natively: the shell cannot show anything while its process hangs.
    AskHung {
        /// What to say (the Apps that were open).
        text: String,
    },
    /// The web content responds again (or was stopped): the question is gone.
    DismissHung,
}
