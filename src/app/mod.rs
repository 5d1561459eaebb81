//! The app, without a display: connect the servers, open a tool call end to end (read its UI,
//! mount the View, bridge it, call the tool), ask for consent, keep the host context and display
//! modes, supervise the web content, hold the conversation, and reach the run's exit goal.
//!
//! It decides; a window carries out. Everything it asks of a window is a [`window::UserEvent`]
//! and everything a window reports is a [`window::HostInput`], so the app builds and is tested
//! with `--no-default-features` against a fake window (`tests.rs`), and the desktop runtime
//! (`crate::desktop`: tao, wry, WebKitGTK) is one window among possible others.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::bridge::{
    CallControl, Direction, HostPolicy, Trace, ViewConfig, ViewEvent, ViewHandle, ViewId, ViewOutput, ViewSession,
};
use crate::consent::{self, tool_label, LinkSubject};
use crate::conversation;
use crate::error::{Error, Result};
use crate::protocol::styles::host_styles;
use crate::protocol::{methods, ContainerDimensions, DisplayMode, HostContext, Theme};
use crate::sandbox::{build_csp, origin::sandbox_origin, sandbox_label};
use crate::server::auth::SystemBrowser;
use crate::server::connection::{ConnectOptions, RequestHandler, ServerChange};
use crate::server::registry::{Registry, ServerEvent, ServerEventKind, ServerStatus, ToolEntry};
use crate::server::requests::{ElicitAnswer, ElicitationKind, Root};
use crate::server::ServerSpec;
use crate::ui_resource::{tool_ui, ui_resource_from_read};
use dialogs::{content_text, open_url, Ask, Consent, DesktopPolicy, DesktopRequests};
use proxies::{ProxyPolicy, ProxyRegistry};
use shell::{ShellCommand, ShellMessage};
use supervisor::{Supervisor, Tick, ViewProcesses};
use window::{FrameMount, FrameOp, HostInput, Ui, UserEvent, WebContentOp, WebContentSignal, WindowOp};

mod chat;
pub(crate) mod dialogs;
mod display;
mod frame_height;
mod lifecycle;
mod options;
mod preview;
pub(crate) mod proxies;
mod recovery;
pub(crate) mod shell;
pub(crate) mod supervisor;
pub(crate) mod window;

use frame_height::{FrameHeight, Sizing};
use lifecycle::{Milestones, Pending, Phase};
#[cfg_attr(not(feature = "desktop"), allow(unused_imports))]
pub use options::{ExitAfter, RunOptions, SharedModel, SharedPolicy};
use preview::watch_file;
use recovery::Restore;

/// Padding and border of a card around an inline View (shell CSS).
const CARD_CHROME_PX: f64 = 34.0;
/// Width of the tool picker (shell CSS).
const PICKER_PX: f64 = 270.0;
/// Height of the shell's header bar.
const HEADER_PX: f64 = 42.0;
const INLINE_MAX_HEIGHT: f64 = 4000.0;
const MIN_FRAME_HEIGHT: f64 = 40.0;
/// The picture-in-picture window.
pub(super) const PIP_SIZE: (f64, f64) = (420.0, 320.0);
/// The web process is recycled once this many Views were opened since the last time...
const RECYCLE_AFTER_VIEWS: usize = 8;
/// ...and none has been open for this long.
const RECYCLE_IDLE: Duration = Duration::from_secs(5);
/// Size reports within this many px of what the host set are echoes, not changes.
const RESIZE_ECHO_PX: f64 = 2.0;
/// A View's first inline height: this share of what the stream shows below the header (a View
/// that fills its viewport, `height: 100vh`, keeps it; one with less content shrinks to it)...
const FIRST_HEIGHT_SHARE: f64 = 0.6;
/// ...but never less than this (the fixed first height of before, for small windows).
const MIN_FIRST_HEIGHT: f64 = 240.0;
/// The stream's padding (top and bottom) and a card's header, above and below a View's frame.
const STREAM_CHROME_PX: f64 = 32.0 + 34.0;
/// A View that grows by the same amount this many times in a row, each time right after the
/// host resized it, sizes itself from its frame (see [`FrameHeight`])...
const CHASE_STEPS: u32 = 4;
/// ..."right after": within this long of the host's resize (generous: a round takes half a
/// second on a busy machine; content held by mistake loses only its last step, see
/// [`FrameHeight`]).
const CHASE_WINDOW: Duration = Duration::from_secs(3);
/// A View may change its display mode at most this often: a View flipping modes hundreds of
/// times a second must not be able to leave the window in a state it did not ask for last.
const MODE_CHANGE_INTERVAL: Duration = Duration::from_millis(400);
/// ...after a burst of this many (an App may go fullscreen, then pip, then back at once).
const MODE_CHANGE_BURST: f64 = 3.0;
/// Preview's live reload on `resources/updated`: at most this many reloads of one resource...
const LIVE_RELOADS: usize = 5;
/// ...in this long; beyond, live reload of that resource pauses (a View that makes its server
/// announce an update on every load would otherwise reload forever).
const LIVE_RELOAD_WINDOW: Duration = Duration::from_secs(10);
/// A prompt typed in the window is cut to this many characters.
const MAX_PROMPT_CHARS: usize = 100_000;
/// The developer panel's live log gets at most this many records a second; the rest are
/// counted and the count is shown (the trace file keeps everything).
const LOG_RECORDS_PER_SECOND: usize = 200;

struct ViewState {
    handle: ViewHandle,
    server: String,
    /// The server's sandbox label: its Views share a web process.
    label: String,
    tool: String,
    arguments: Map<String, Value>,
    result: Option<Value>,
    /// Where it is in its life (see `lifecycle.rs`).
    phase: Phase,
    /// What it reached on the way (the exit goals read these).
    reached: Milestones,
    /// The inline frame's height, and the guard against a View chasing it.
    frame: FrameHeight,
    mode: DisplayMode,
    /// When the View last asked for a display mode (its token bucket's last refill).
    mode_changed: Option<Instant>,
    /// Mode changes the View may still make now (a token bucket: [`MODE_CHANGE_BURST`], one
    /// more every [`MODE_CHANGE_INTERVAL`]).
    mode_tokens: f64,
    /// The person took this View back inline: it may not leave inline by itself again.
    person_chose_inline: bool,
}

/// How a tool is being opened.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Opening {
    /// The person picked it: a tool without a UI shows its result as text.
    Person,
    /// Named at start with this reserved id: it must have a UI, and its failure is the run's.
    Startup(ViewId),
    /// A reload of an open View (preview): same tool, last input and result.
    Reload,
    /// The model is calling it (with this reserved id): the View opens before the call is
    /// made, for the arguments the model is still writing (see `chat.rs`).
    Model(ViewId),
}

/// A tool named at start, waiting for its server.
#[derive(Debug, Clone)]
struct StartupOpen {
    id: ViewId,
    tool: String,
    arguments: Map<String, Value>,
}

pub(super) struct Controller {
    options: RunOptions,
    ui: Ui,
    registry: ProxyRegistry,
    theme: Theme,
    window: (f64, f64),
    started: Instant,
    trace: Trace,
    shell_ready: bool,
    shell_backlog: Vec<String>,
    views: HashMap<ViewId, ViewState>,
    servers: Arc<Registry>,
    /// Open elicitation dialogs: their server and where the answer goes.
    elicits: HashMap<u64, (String, oneshot::Sender<ElicitAnswer>)>,
    /// The shell commands of open elicitation dialogs, to show them again in a restarted shell.
    elicit_cmds: HashMap<u64, ShellCommand>,
    /// Set once every server was tried at start.
    servers_started: bool,
    exiting: Option<i32>,
    teardowns: mpsc::UnboundedSender<ViewId>,
    asks: mpsc::UnboundedSender<Ask>,
    /// Open consent dialogs: their View and where the answer goes (one per View at a time).
    dialogs: HashMap<u64, (ViewId, oneshot::Sender<bool>)>,
    next_dialog: u64,
    /// Set once the run reached its goal: settle, screenshot, then exit with this code.
    finishing: bool,
    finished_tx: mpsc::UnboundedSender<i32>,
    channels: Option<Channels>,
    next_view: u64,
    /// Views still being prepared, by id (they move into `ViewState` when mounted).
    pending: HashMap<ViewId, Pending>,
    /// Cached results handed to reloaded Views instead of calling the tool again.
    cached_results: HashMap<ViewId, Value>,
    /// Tool results that arrived before their View was mounted.
    early_results: HashMap<ViewId, Value>,
    /// Views mounted since the web process was last recycled.
    opened_since_recycle: usize,
    /// Set while the shell reloads in a fresh web process; its state is sent again on `ready`.
    recycling: bool,
    /// Shell commands that are the conversation's record (messages, model context): sent again
    /// to a reloaded shell.
    history: Vec<ShellCommand>,
    recycle_tx: mpsc::UnboundedSender<u64>,
    /// Tools named at start whose server is not ready yet: each opens when its own server is.
    startup_waiting: Vec<StartupOpen>,
    /// Ids of the Views named at start (their failure is the run's).
    startup_ids: HashSet<ViewId>,
    /// Recent live reloads per `(server, resource)`, for the storm guard.
    live_reloads: HashMap<(String, String), VecDeque<Instant>>,
    /// The live log's rate limit: the current second, records sent in it, records left out.
    log_window: (Instant, usize, usize),
    /// Watches the web content: heartbeats, hangs, stops.
    supervisor: Supervisor,
    /// The web content's memory limit.
    web_memory_limit_mb: u64,
    /// Views to reopen once a restarted shell is ready.
    to_restore: Vec<Restore>,
    /// Views waiting for their turn on probation, and the one on probation now.
    probation: VecDeque<Restore>,
    on_probation: Option<(ViewId, Restore)>,
    /// When the View on probation initialized, and the web content's memory then (MB).
    probation_mark: Option<(Instant, u64)>,
    probation_tx: mpsc::UnboundedSender<ViewId>,
    /// Why the web content stopped, for the status line once the restarted shell is ready.
    status_after_restart: Option<String>,
    /// Views found to stop the web content (on probation at a stop): not reopened.
    held: Vec<Restore>,
    /// The web processes of the Views, one per server: hangs and stops.
    processes: ViewProcesses,
    /// The conversation with the model, when one is configured.
    chat: Option<chat::Chat>,
    /// Views of the model's calls being prepared: what their call waits on.
    deferred: HashMap<ViewId, chat::DeferredCall>,
    /// Every View opened for a model's call (never reopened before its call is made).
    model_views: HashSet<ViewId>,
    /// Where every conversation of this run sends its outputs (with its generation).
    chat_out: Option<mpsc::UnboundedSender<(u64, conversation::Output)>>,
}

/// A View's session, or why it could not start.
type Setup = Result<ViewHandle>;

/// Where sessions, fetches and tool calls report back to the controller loop.
#[derive(Clone)]
struct Channels {
    out: mpsc::UnboundedSender<(ViewId, ViewOutput)>,
    setup: mpsc::UnboundedSender<(ViewId, String, Setup)>,
    results: mpsc::UnboundedSender<(ViewId, Result<Value, String>)>,
}

impl Controller {
    pub(super) fn new(
        options: RunOptions,
        ui: Ui,
        registry: ProxyRegistry,
        system_theme: Theme,
        started: Instant,
    ) -> (Self, Receivers) {
        let (teardowns, teardowns_rx) = mpsc::unbounded_channel();
        let (finished_tx, finished_rx) = mpsc::unbounded_channel();
        let (asks, asks_rx) = mpsc::unbounded_channel();
        let (recycle_tx, recycle_rx) = mpsc::unbounded_channel();
        let (probation_tx, probation_rx) = mpsc::unbounded_channel();
        let options_stop_after = options.stop_unresponsive.unwrap_or(supervisor::AUTO_STOP_AFTER);
        let theme = options.theme.unwrap_or(system_theme);
        let requests = options.requests.clone().unwrap_or_else(|| {
            RequestHandler(Arc::new(DesktopRequests {
                asks: asks.clone(),
                consent: options.consent,
                model: options.model.clone().map(|m| m.0),
            }))
        });
        // Sign-in pages open in the system browser (or with --open-with, like links).
        let browser = SystemBrowser { opener: options.opener.clone() };
        let mut connect = ConnectOptions::default().roots(options.roots.clone()).authorizer(Arc::new(browser));
        connect.requests = requests;
        let servers = Registry::new(options.servers.clone(), connect);
        let controller = Self {
            options,
            ui,
            registry,
            theme,
            window: (1200.0, 820.0),
            started,
            trace: Trace::disabled(),
            shell_ready: false,
            shell_backlog: Vec::new(),
            views: HashMap::new(),
            servers,
            elicits: HashMap::new(),
            elicit_cmds: HashMap::new(),
            servers_started: false,
            exiting: None,
            teardowns,
            asks,
            dialogs: HashMap::new(),
            next_dialog: 1,
            finishing: false,
            finished_tx,
            channels: None,
            next_view: 1,
            pending: HashMap::new(),
            cached_results: HashMap::new(),
            early_results: HashMap::new(),
            opened_since_recycle: 0,
            recycling: false,
            history: Vec::new(),
            recycle_tx,
            startup_waiting: Vec::new(),
            startup_ids: HashSet::new(),
            live_reloads: HashMap::new(),
            log_window: (started, 0, 0),
            supervisor: Supervisor::new(options_stop_after),
            web_memory_limit_mb: 0,
            to_restore: Vec::new(),
            probation: VecDeque::new(),
            on_probation: None,
            probation_mark: None,
            probation_tx,
            status_after_restart: None,
            held: Vec::new(),
            processes: ViewProcesses::default(),
            chat: None,
            deferred: HashMap::new(),
            model_views: HashSet::new(),
            chat_out: None,
        };
        (
            controller,
            Receivers {
                teardowns: teardowns_rx,
                asks: asks_rx,
                finished: finished_rx,
                recycle: recycle_rx,
                probation: probation_rx,
            },
        )
    }

    fn shell(&mut self, command: ShellCommand) {
        self.shell_text(command.to_text());
    }

    fn shell_text(&mut self, text: String) {
        if self.shell_ready {
            let _ = self.ui.send_event(UserEvent::Shell(text));
        } else {
            self.shell_backlog.push(text);
        }
    }

    /// The status line: one line, whatever a server's reason contains.
    fn status(&mut self, text: &str, error: bool) {
        self.shell(ShellCommand::Status { text: consent::one_line_max(text, 400), error });
    }

    /// Starts closing: every open View gets its graceful teardown (bounded) while the loop keeps
    /// relaying messages, so the Views can answer; then the server stops and the window closes.
    fn begin_exit(&mut self, code: i32) {
        if self.exiting.is_some() {
            return;
        }
        self.exiting = Some(code);
        let handles: Vec<ViewHandle> =
            self.views.values().filter(|v| v.phase.is_open()).map(|v| v.handle.clone()).collect();
        let servers = self.servers.clone();
        let ui = self.ui.clone();
        tokio::spawn(async move {
            let mut set = tokio::task::JoinSet::new();
            for h in handles {
                set.spawn(async move { (h.id().to_owned(), h.teardown().await) });
            }
            while let Some(done) = set.join_next().await {
                if let Ok((view, outcome)) = done {
                    tracing::info!(view = %view, "teardown: {outcome:?}");
                }
            }
            servers.shutdown().await;
            let _ = ui.send_event(UserEvent::Exit(code));
        });
    }

    /// The run reached its goal (or failed after the View was told): let the View settle, take the
    /// screenshot if asked, then exit with `code`.
    fn finish(&mut self, code: i32) {
        if self.finishing || self.exiting.is_some() {
            return;
        }
        self.finishing = true;
        let settle = self.options.settle;
        let screenshot =
            self.options.screenshot.clone().filter(|_| code == 0 || self.views.values().any(|v| v.reached.initialized));
        let (ui, done) = (self.ui.clone(), self.finished_tx.clone());
        tokio::spawn(async move {
            tokio::time::sleep(settle).await;
            let mut code = code;
            if let Some(path) = screenshot {
                code = take_screenshot(&ui, path).await.max(code);
            }
            let _ = done.send(code);
        });
    }

    /// Prints one clear line and exits 1 (the window shows it too, for a person watching).
    fn fail(&mut self, error: &str) {
        eprintln!("error: {}", say(error));
        self.status(error, true);
        self.begin_exit(1);
    }

    pub(super) async fn run(mut self, mut from_ui: mpsc::UnboundedReceiver<HostInput>, receivers: Receivers) {
        let Receivers {
            teardowns: mut teardowns_rx,
            asks: mut asks_rx,
            finished: mut finished_rx,
            recycle: mut recycle_rx,
            probation: mut probation_rx,
        } = receivers;
        if let Some(path) = &self.options.trace {
            match Trace::create(path, self.started) {
                Ok(t) => self.trace = t,
                Err(source) => {
                    let e = Error::Trace { path: path.clone(), source };
                    self.fail(&e.to_string());
                }
            }
        }
        self.shell(ShellCommand::Theme { theme: self.theme });
        let _ = self.ui.send_event(UserEvent::Frame(FrameOp::Theme(self.theme)));
        let (tap_tx, mut tap_rx) = mpsc::unbounded_channel::<Value>();
        if self.options.preview {
            self.trace = self.trace.clone().with_tap(tap_tx);
            self.shell(ShellCommand::Dev);
        }
        let (reload_tx, mut reload_rx) = mpsc::unbounded_channel::<()>();
        if let Some(path) = self.options.html.clone() {
            tokio::spawn(watch_file(path, reload_tx));
        }
        let (out_tx, mut out_rx) = mpsc::unbounded_channel::<(ViewId, ViewOutput)>();
        let (setup_tx, mut setup_rx) = mpsc::unbounded_channel::<(ViewId, String, Setup)>();
        let (result_tx, mut result_rx) = mpsc::unbounded_channel::<(ViewId, Result<Value, String>)>();
        self.channels = Some(Channels { out: out_tx, setup: setup_tx, results: result_tx });

        // Tools named at start keep their order's ids (v1, v2, ...) whichever server is ready first.
        for (tool, arguments) in self.options.opens.clone() {
            let id = format!("v{}", self.next_view);
            self.next_view += 1;
            self.startup_ids.insert(id.clone());
            self.startup_waiting.push(StartupOpen { id, tool, arguments });
        }
        // Every server starts at once; the picker shows each as it becomes ready (or fails).
        let mut server_events = self.servers.events();
        let (started_tx, mut started_rx) = oneshot::channel::<()>();
        if self.exiting.is_none() {
            let names = self.servers.names();
            self.status(&format!("Starting {}…", names.join(", ")), false);
            self.show_servers();
            let servers = self.servers.clone();
            // Tools named at start are the person's request: their servers may sign in at once.
            let sign_in_now = !self.options.opens.is_empty();
            tokio::spawn(async move {
                if sign_in_now {
                    servers.start_signing_in().await;
                } else {
                    servers.start().await;
                }
                let _ = started_tx.send(());
            });
        }
        let deadline = tokio::time::sleep(self.options.timeout);
        tokio::pin!(deadline);
        self.web_memory_limit_mb = supervisor::memory_limit_mb(self.options.web_memory_limit_mb);
        tracing::debug!("web content memory limit: {} MB", self.web_memory_limit_mb);
        let mut watch = tokio::time::interval(supervisor::HEARTBEAT);
        watch.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        // The /proc scan runs on a blocking thread, not in this loop, which relays every message.
        let mut over_limit = supervisor::watch_memory(self.web_memory_limit_mb);
        let mut chat_rx = self.start_chat();
        loop {
            tokio::select! {
                Some((generation, out)) = async {
                    match chat_rx.as_mut() {
                        Some(rx) => rx.recv().await,
                        None => std::future::pending().await,
                    }
                } => self.on_chat(generation, out),
                _ = watch.tick() => self.supervise(),
                Some((pid, mb)) = over_limit.recv() => self.over_memory_limit(pid, mb),
                input = from_ui.recv() => match input {
                    Some(HostInput::Shell(msg)) => self.on_shell(msg),
                    Some(HostInput::CloseRequested) => self.begin_exit(0),
                    Some(HostInput::Resized { width, height }) => self.on_resized(width, height),
                    Some(HostInput::SystemTheme(theme)) => {
                        if self.options.theme.is_none() {
                            self.set_theme(theme);
                        }
                    }
                    Some(HostInput::WebContent(signal)) => self.on_web_content(signal),
                    Some(HostInput::Frame(signal)) => self.on_frame(signal),
                    None => return,
                },
                Some((view, tool, setup)) = setup_rx.recv() => {
                    match setup {
                        Ok(handle) => self.mount(handle, &tool),
                        Err(e) => {
                            self.views.remove(&view);
                            self.pending.remove(&view);
                            // The error takes the place of the card's spinner.
                            self.shell(ShellCommand::Text {
                                view: Some(view.clone()),
                                title: tool_label(&tool),
                                text: consent::block(&e.to_string()),
                                error: true,
                            });
                            if self.startup_ids.contains(&view) {
                                self.fail(&e.to_string());
                            }
                            if self.on_probation.as_ref().is_some_and(|(id, _)| *id == view) {
                                self.on_probation = None;
                                self.advance_probation();
                            }
                        }
                    }
                },
                Some(ask) = asks_rx.recv() => self.on_ask(ask),
                Some(record) = tap_rx.recv() => self.log_record(record),
                Some(()) = reload_rx.recv() => self.reload_all(),
                event = server_events.recv() => match event {
                    Ok(event) => self.on_server_event(event),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => self.show_servers(),
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {}
                },
                Ok(()) = &mut started_rx, if !self.servers_started => self.on_started(),
                Some(code) = finished_rx.recv() => self.begin_exit(code),
                Some(generation) = recycle_rx.recv() => self.recycle(generation),
                Some(view) = probation_rx.recv() => self.probation_passed(&view),
                Some(view) = teardowns_rx.recv() => {
                    self.close_view(&view);
                    if self.options.exit_after == Some(ExitAfter::Teardown) && self.views.values().all(|v| !v.phase.is_open()) {
                        self.finish(0);
                    }
                },
                Some((view, outcome)) = result_rx.recv() => {
                    let tool = self.views.get(&view).map(|v| v.tool.clone()).unwrap_or_default();
                    if let Ok(result) = &outcome {
                        // The result may come before the View is mounted: keep it for the mount.
                        match self.views.get_mut(&view) {
                            Some(v) => v.result = Some(result.clone()),
                            None => {
                                self.early_results.insert(view.clone(), result.clone());
                            }
                        }
                    }
                    if let Err(reason) = outcome {
                        let line = format!("tool `{}` failed: {reason}", tool_label(&tool));
                        eprintln!("error: {}", say(&line));
                        self.status(&line, true);
                        // With --exit-after, the run ends (1) once the View has been told.
                    } else {
                        tracing::debug!(view = %view, "tool result arrived");
                    }
                },
                Some((view, output)) = out_rx.recv() => {
                    if let Some(code) = self.on_view_output(&view, output) {
                        self.finish(code);
                    }
                },
                () = &mut deadline => {
                    if let Some(reason) = self.overdue() {
                        eprintln!("error: {}", say(&reason));
                        self.status(&reason, true);
                        if self.options.exit_after.is_some() {
                            self.begin_exit(1);
                        }
                    }
                    // Only fires once; park it far away.
                    deadline.as_mut().reset(tokio::time::Instant::now() + Duration::from_secs(86_400 * 365));
                },
            }
        }
    }

    /// What is still missing when the timeout fires, if anything.
    fn overdue(&self) -> Option<String> {
        let secs = self.options.timeout.as_secs_f64();
        if self.options.exit_after == Some(ExitAfter::Answer) {
            return self
                .chat
                .as_ref()
                .is_some_and(|c| c.turns > 0)
                .then(|| format!("the model did not answer within {secs} s"));
        }
        if self.options.opens.is_empty() {
            return None;
        }
        if self.views.is_empty() {
            return Some(format!("no View was mounted within {secs} s"));
        }
        if let Some((id, _)) = self.views.iter().find(|(_, v)| !v.reached.initialized && v.phase.is_open()) {
            return Some(format!("View {id} did not send ui/notifications/initialized within {secs} s"));
        }
        match self.options.exit_after {
            Some(ExitAfter::Result) if self.views.values().any(|v| !v.reached.result_delivered) => {
                Some(format!("the tool result did not reach the View within {secs} s"))
            }
            Some(ExitAfter::Teardown) if self.views.values().any(|v| v.phase.is_open()) => {
                Some(format!("the View was not torn down within {secs} s"))
            }
            _ => None,
        }
    }

    /// Starts the tool call and returns the future that fetches the UI and starts the session.
    fn prepare_view(
        &mut self,
        entry: &ToolEntry,
        view_id: &str,
        arguments: Map<String, Value>,
    ) -> Result<impl std::future::Future<Output = Setup> + Send + 'static> {
        let channels = self.channels.clone().expect("channels exist while running");
        let (out, results) = (channels.out, channels.results);
        let tool_name = entry.name().to_owned();
        let server = entry.server.clone();
        let tool = entry.tool.clone();
        let ui = tool_ui(&tool)?;
        if ui.legacy_key_only {
            tracing::warn!(tool = %tool_name, "tool uses only the deprecated _meta[\"ui/resourceUri\"] key");
        }
        let uri = ui.resource_uri.ok_or_else(|| Error::NoUi { tool: tool_name.clone() })?;

        let trace = self.trace.clone();
        let view_id: ViewId = view_id.to_owned();
        let (session_tx, session_rx) = oneshot::channel::<ViewHandle>();
        let pending = Pending { server: server.clone(), arguments: arguments.clone(), task: None };
        self.pending.insert(view_id.clone(), pending);

        let deferred = self.deferred.remove(&view_id);
        let model_call = deferred.is_some();
        if let Some(deferred) = deferred {
            // The model's call: made once its arguments are complete (and allowed).
            self.spawn_deferred(deferred, entry, view_id.clone(), session_rx);
        } else if let Some(cached) = self.cached_results.remove(&view_id) {
            // A reload: the View gets the last result again; the tool is not called again.
            let (results, view_id) = (results.clone(), view_id.clone());
            tokio::spawn(async move {
                let Ok(handle) = session_rx.await else { return };
                handle.tool_result(cached.clone());
                let _ = results.send((view_id, Ok(cached)));
            });
        } else {
            // The tool call: its outcome goes to the View once the session exists.
            let (servers, server) = (self.servers.clone(), server.clone());
            let trace = trace.clone();
            let view_id = view_id.clone();
            let arguments = arguments.clone();
            let tool_name = tool_name.clone();
            tokio::spawn(async move {
                let outcome = call_tool_traced(&servers, &trace, Some(&view_id), &server, &tool_name, arguments).await;
                let Ok(handle) = session_rx.await else { return };
                match &outcome {
                    Ok(result) => handle.tool_result(result.clone()),
                    Err(e) => handle.tool_cancelled(Some(format!("tool call failed: {}", e.message))),
                }
                let _ = results.send((view_id, outcome.map_err(|e| e.to_string())));
            });
        }
        let html_file = self.options.html.clone();
        let preview = self.options.preview;
        let openai_shim = self.options.openai_shim;
        let ui = self.ui.clone();

        let servers = self.servers.clone();
        let registry = self.registry.clone();
        let host_context = self.host_context(DisplayMode::Inline);
        let policy: Arc<dyn HostPolicy> = match &self.options.policy {
            Some(custom) => custom.0.clone(),
            None => Arc::new(DesktopPolicy {
                asks: self.asks.clone(),
                consent: self.options.consent,
                opener: self.options.opener.clone(),
                downloads: self.options.downloads.clone().unwrap_or_else(default_downloads),
                display_modes: self.display_modes(),
            }),
        };
        Ok(async move {
            let conn = servers.connection(&server).await?;
            if html_file.is_none() {
                trace.server_request(Some(&view_id), methods::RESOURCES_READ, &json!({"uri": uri}));
            }
            let read = match &html_file {
                // An App author's local file stands in for the server's resource.
                Some(path) => {
                    let html = tokio::fs::read_to_string(path)
                        .await
                        .map_err(|e| Error::Desktop(format!("cannot read --html {}: {e}", path.display())))?;
                    json!({"contents": [{"uri": uri, "mimeType": crate::protocol::RESOURCE_MIME_TYPE, "text": html}]})
                }
                None => conn.read_resource(uri.clone()).await.map_err(|e| Error::Request {
                    server: server.clone(),
                    method: format!("resources/read {uri}"),
                    reason: e.to_string(),
                })?,
            };
            if html_file.is_none() {
                // The HTML itself is in the host->proxy record; here only how many contents came.
                let items = read.get("contents").and_then(Value::as_array).map_or(0, Vec::len);
                trace.server_answer(Some(&view_id), methods::RESOURCES_READ, Ok(&json!({"contents": items})));
            }
            let resource = ui_resource_from_read(&uri, &read, conn.listed_resource(&uri).as_ref())?;
            for w in &resource.meta.warnings {
                tracing::warn!(resource = %uri, "{w}");
            }
            let csp = build_csp(resource.meta.csp.as_ref());
            for r in &csp.rejected {
                tracing::warn!(resource = %uri, "CSP entry {:?} in {} rejected: {}", r.entry, r.field, r.reason);
            }
            tracing::info!(resource = %uri, "CSP: {}", csp.header);
            let label = sandbox_label(&servers.identity(&server).unwrap_or_default());
            registry.insert(&view_id, ProxyPolicy { label, csp: csp.header.clone() });
            if preview && html_file.is_none() {
                // Hot reload on resources/updated needs the server to announce them.
                if let Err(e) = conn.subscribe(&uri).await {
                    tracing::info!(resource = %uri, "no live reload from the server: {e}");
                }
            }
            if preview {
                let cmd = ShellCommand::Csp {
                    view: view_id.clone(),
                    header: csp.header.clone(),
                    granted: serde_json::to_value(&csp.granted).unwrap_or_default(),
                    rejected: csp
                        .rejected
                        .iter()
                        .map(|r| json!({"field": r.field, "entry": r.entry, "reason": r.reason}))
                        .collect(),
                };
                let _ = ui.send_event(UserEvent::Shell(cmd.to_text()));
            }

            let mut config = ViewConfig::new(view_id.clone(), tool, resource.html);
            // What the person sees (consent prompts, the side panel): the server's label.
            config.server_name = servers.label(&server).unwrap_or_else(|| server.clone());
            // The controller relays the server's list_changed notifications (see `on_server_change`).
            config.forwards_list_changed = true;
            config.openai_shim =
                openai_shim && (resource.openai_template || tool_ui(&config.tool).is_ok_and(|u| u.openai_template));
            config.granted_csp = csp.granted;
            config.granted_permissions = resource.meta.permissions.clone().filter(|p| !p.is_empty());
            config.host_context = host_context;
            config.policy = policy;
            // Messages for the View go from its session straight to the UI thread, into its
            // own webview: the controller does not relay them (the hot path).
            let (post_ui, post_view) = (ui.clone(), view_id.clone());
            config.post_sink = Some(Arc::new(move |msg| {
                let _ = post_ui.send_event(UserEvent::Frame(FrameOp::Post { view: post_view.clone(), msg }));
            }));
            let handle = ViewSession::spawn(config, servers.port(&server), out, trace);
            if !model_call {
                handle.tool_input(arguments);
            }
            let _ = session_tx.send(handle.clone());
            Ok(handle)
        })
    }

    fn host_context(&self, mode: DisplayMode) -> HostContext {
        HostContext {
            theme: Some(self.theme),
            styles: Some(host_styles(self.theme)),
            display_mode: Some(mode),
            available_display_modes: Some(self.display_modes()),
            container_dimensions: Some(self.container(mode)),
            locale: Some(crate::protocol::locale::bcp47_locale(sys_locale::get_locale().as_deref())),
            time_zone: Some(crate::protocol::locale::iana_time_zone(iana_time_zone::get_timezone().ok().as_deref())),
            user_agent: Some(format!("mcp-apps-host/{}", env!("CARGO_PKG_VERSION"))),
            platform: Some("desktop".into()),
            device_capabilities: Some(json!({"touch": false, "hover": true})),
            ..Default::default()
        }
    }

    /// Calls `tool` with `arguments`: a View for tools with a UI, a text card for the others.
    /// `server` picks the server; without it the tool's name must be unique among the servers
    /// (or given as `server/tool`).
    fn open(&mut self, server: Option<&str>, tool: &str, arguments: Map<String, Value>, how: Opening) -> Result<()> {
        let entry = match (server, self.servers.find_tool(server, tool)) {
            (None, Err(e)) => match tool.split_once('/') {
                Some((server, name)) if self.servers.names().iter().any(|n| n == server) => {
                    self.servers.find_tool(Some(server), name)?
                }
                _ => return Err(e),
            },
            (_, found) => found?,
        };
        let id: ViewId = match &how {
            Opening::Startup(id) | Opening::Model(id) => id.clone(),
            _ => {
                let id = format!("v{}", self.next_view);
                self.next_view += 1;
                id
            }
        };
        let has_ui = tool_ui(&entry.tool).ok().and_then(|u| u.resource_uri).is_some();
        if !has_ui && how == Opening::Person {
            self.call_plain(&entry, &id, arguments);
            return Ok(());
        }
        let fetch = self.prepare_view(&entry, &id, arguments)?;
        let label = tool_label(entry.name());
        self.status(&format!("Calling {label} on {}…", self.label(&entry.server)), false);
        self.shell(ShellCommand::Pending { view: id.clone(), title: label });
        let setup = self.channels.clone().expect("running").setup;
        let tool = entry.name().to_owned();
        let view = id.clone();
        let task = tokio::spawn(async move {
            let outcome = fetch.await;
            let _ = setup.send((view, tool, outcome));
        });
        if let Some(pending) = self.pending.get_mut(&id) {
            pending.task = Some(task.abort_handle());
        }
        Ok(())
    }

    /// Opens the tools named at start whose server is ready now; each waits for its own server
    /// only. Once every server was tried (`settled`), what still cannot open fails the run.
    fn open_startup_views(&mut self, settled: bool) {
        if self.exiting.is_some() || self.startup_waiting.is_empty() {
            return;
        }
        let ready: Vec<String> =
            self.servers.servers().into_iter().filter(|s| s.status == ServerStatus::Ready).map(|s| s.name).collect();
        let names = self.servers.names();
        let mut still = Vec::new();
        for open in std::mem::take(&mut self.startup_waiting) {
            // `server/tool` names its server; a bare name opens on the first ready server that has it.
            let target = match open.tool.split_once('/') {
                Some((server, name)) if names.iter().any(|n| n == server) => {
                    ready.iter().any(|r| r == server).then(|| (Some(server.to_owned()), name.to_owned()))
                }
                _ => ready
                    .iter()
                    .any(|r| self.servers.find_tool(Some(r), &open.tool).is_ok())
                    .then(|| (None, open.tool.clone())),
            };
            let outcome = match target {
                Some((server, name)) => {
                    self.open(server.as_deref(), &name, open.arguments.clone(), Opening::Startup(open.id.clone()))
                }
                None if settled => {
                    self.open(None, &open.tool, open.arguments.clone(), Opening::Startup(open.id.clone()))
                }
                None => {
                    still.push(open);
                    continue;
                }
            };
            if let Err(e) = outcome {
                // A tool named on the command line that cannot open is the run's failure.
                self.fail(&e.to_string());
                return;
            }
        }
        self.startup_waiting = still;
    }

    /// A tool without a UI: its result is shown as text.
    fn call_plain(&mut self, entry: &ToolEntry, id: &str, arguments: Map<String, Value>) {
        let tool = entry.name().to_owned();
        self.shell(ShellCommand::Pending { view: id.to_owned(), title: tool_label(&tool) });
        let (servers, server, ui, trace, id) =
            (self.servers.clone(), entry.server.clone(), self.ui.clone(), self.trace.clone(), id.to_owned());
        tokio::spawn(async move {
            let outcome = call_tool_traced(&servers, &trace, Some(&id), &server, &tool, arguments).await;
            let (text, error) = match &outcome {
                Ok(r) => result_for_person(r),
                Err(e) => (e.to_string(), true),
            };
            let cmd =
                ShellCommand::Text { view: Some(id), title: tool_label(&tool), text: consent::block(&text), error };
            let _ = ui.send_event(UserEvent::Shell(cmd.to_text()));
        });
    }

    /// Every server was tried: open the tools still waiting, or fail when no server works.
    fn on_started(&mut self) {
        self.servers_started = true;
        let servers = self.servers.servers();
        let failed: Vec<String> = servers
            .iter()
            .filter_map(|s| match &s.status {
                ServerStatus::Failed { reason, .. } => Some(reason.clone()),
                _ => None,
            })
            .collect();
        if !failed.is_empty() && failed.len() == servers.len() {
            // Nothing works: say why, once per server, and stop.
            for reason in &failed[..failed.len() - 1] {
                eprintln!("error: {}", say(reason));
            }
            self.fail(&failed[failed.len() - 1]);
            return;
        }
        for reason in &failed {
            eprintln!("warning: {}", say(reason));
        }
        let ready: Vec<&str> =
            servers.iter().filter(|s| s.status == ServerStatus::Ready).map(|s| s.label.as_str()).collect();
        self.status(&format!("Connected to {}", ready.join(", ")), !failed.is_empty());
        self.open_startup_views(true);
        self.send_first_prompt();
    }

    /// A server changed status or announced a change.
    fn on_server_event(&mut self, event: ServerEvent) {
        let ServerEvent { server, kind } = event;
        match kind {
            ServerEventKind::Status(status) => {
                if status == ServerStatus::Ready {
                    self.open_startup_views(false);
                }
                if let ServerStatus::Failed { reason, .. } = &status {
                    if self.servers_started && self.exiting.is_none() {
                        self.status(&format!("{} failed: {reason}", self.label(&server)), true);
                    }
                    // Nobody waits for this server's questions any more.
                    let orphaned: Vec<u64> =
                        self.elicits.iter().filter(|(_, (s, _))| *s == server).map(|(d, _)| *d).collect();
                    for dialog in orphaned {
                        self.elicits.remove(&dialog);
                        self.elicit_cmds.remove(&dialog);
                        self.shell(ShellCommand::Dismiss { dialog });
                    }
                }
                self.show_servers();
            }
            ServerEventKind::Change(change) => self.on_server_change(&server, change),
        }
    }

    /// A server's announcement reaches its own Views (the registry re-read its lists already).
    fn on_server_change(&mut self, server: &str, change: ServerChange) {
        let Some(conn) = self.servers.current(server) else { return };
        let open = |v: &&ViewState| v.phase.is_open() && v.server == server;
        match change {
            ServerChange::Tools => {
                for v in self.views.values().filter(open) {
                    v.handle.server_tools_changed();
                }
                self.show_servers();
            }
            ServerChange::Resources => {
                for v in self.views.values().filter(open) {
                    v.handle.server_resources_changed();
                }
            }
            ServerChange::ResourceUpdated(uri) if self.options.preview && self.options.html.is_none() => {
                let shows_it = |tool: &str| {
                    conn.tool(tool).and_then(|t| tool_ui(&t).ok()).and_then(|u| u.resource_uri).as_deref()
                        == Some(uri.as_str())
                };
                let views: Vec<ViewId> = self
                    .views
                    .iter()
                    .filter(|(_, v)| open(v) && v.phase.is_live() && shows_it(&v.tool))
                    .map(|(id, _)| id.clone())
                    .collect();
                if views.is_empty() {
                    return;
                }
                if !self.live_reload_allowed(server, &uri) {
                    let line = format!(
                        "{server} announced more than {LIVE_RELOADS} updates of {uri} in {} s: live reload of it is paused (use Reload)",
                        LIVE_RELOAD_WINDOW.as_secs()
                    );
                    tracing::warn!("{}", say(&line));
                    self.status(&line, true);
                    return;
                }
                tracing::info!("{} was updated; reloading its Views", say(&uri));
                self.reload(views);
            }
            ServerChange::ResourceUpdated(_) => {}
        }
    }

    /// The tool picker: every server with its status, and the tools a person may call
    /// (visibility includes `model`), UI tools first. A failed server keeps its last known tools:
    /// calling one restarts it on demand.
    fn show_servers(&mut self) {
        let index = self.servers.tools();
        let servers: Vec<Value> = self
            .servers
            .servers()
            .into_iter()
            .map(|info| {
                let mut tools: Vec<Value> = index
                    .iter()
                    .filter(|t| t.server == info.name)
                    .filter_map(|entry| {
                        let t = &entry.tool;
                        let ui = tool_ui(t).ok()?;
                        ui.visibility.model.then(|| {
                            json!({
                                "name": t["name"], "title": t.get("title").or_else(|| t.get("annotations").and_then(|a| a.get("title"))),
                                "description": t.get("description"), "hasUi": ui.resource_uri.is_some(),
                                "inputSchema": t.get("inputSchema"),
                            })
                        })
                    })
                    .collect();
                tools.sort_by_key(|t| t["hasUi"] != true);
                let (reason, retry_in) = match &info.status {
                    ServerStatus::Failed { reason, retry_at } => {
                        (Some(reason.clone()), Some(retry_at.saturating_duration_since(Instant::now()).as_secs_f64().ceil()))
                    }
                    ServerStatus::SignInRequired { .. } => {
                        (Some("This server needs you to sign in; your browser will open.".to_owned()), None)
                    }
                    ServerStatus::SigningIn => (Some("Finish signing in in your browser.".to_owned()), None),
                    _ => (None, None),
                };
                // `name` is the key the shell sends back; `label` is what it shows.
                // The revision negotiated with it, for the person (and bug reports).
                let protocol = self.servers.current(&info.name).and_then(|c| c.revision_label());
                json!({"name": info.name, "label": info.label, "status": info.status.label(), "reason": reason,
                    "retryIn": retry_in, "tools": tools, "protocol": protocol})
            })
            .collect();
        self.shell(ShellCommand::Servers { servers });
    }

    /// What the person sees for `server`: its label (see [`Registry::label`]), never its key.
    fn label(&self, server: &str) -> String {
        self.servers.label(server).unwrap_or_else(|| server.to_owned())
    }

    /// A View's first inline height, for the current window (see [`FIRST_HEIGHT_SHARE`]).
    fn first_height(&self) -> f64 {
        ((self.window.1 - HEADER_PX - STREAM_CHROME_PX) * FIRST_HEIGHT_SHARE)
            .floor()
            .clamp(MIN_FIRST_HEIGHT, INLINE_MAX_HEIGHT)
    }

    fn mount(&mut self, handle: ViewHandle, tool: &str) {
        self.opened_since_recycle += 1;
        let id = handle.id().to_owned();
        let first_height = self.first_height();
        let Pending { server, arguments, .. } = self.pending.remove(&id).unwrap_or_default();
        let label = sandbox_label(&self.servers.identity(&server).unwrap_or_default());
        // The card (with the slot) in the shell, the View in a webview of its own over the slot.
        self.shell(ShellCommand::Mount {
            view: id.clone(),
            origin: sandbox_origin(&label),
            title: tool_label(tool),
            server: consent::one_line_max(&self.label(&server), 80),
            height: first_height,
        });
        let src = format!("{}/proxy.html?view={id}", sandbox_origin(&label));
        let _ = self.ui.send_event(UserEvent::Frame(FrameOp::Mount(FrameMount {
            view: id.clone(),
            label: label.clone(),
            src,
            session: handle.clone(),
        })));
        self.status(&format!("{} from {}", tool_label(tool), self.label(&server)), false);
        let result = self.early_results.remove(&id);
        self.views.insert(
            id,
            ViewState {
                handle,
                server,
                label,
                tool: tool.to_owned(),
                arguments,
                result,
                phase: Phase::Mounted,
                reached: Milestones::default(),
                frame: FrameHeight::new(first_height),
                mode: DisplayMode::Inline,
                mode_changed: None,
                mode_tokens: MODE_CHANGE_BURST,
                person_chose_inline: false,
            },
        );
    }

    fn on_shell(&mut self, msg: ShellMessage) {
        match msg {
            ShellMessage::Alive => {
                if let Some(hung) = self.supervisor.alive(Instant::now()) {
                    let line = format!("the Apps respond again after {:.1} s", hung.as_secs_f64());
                    tracing::warn!("{line}");
                    self.trace.record(
                        None,
                        Direction::Diagnostic,
                        &json!({"kind": "responsive", "after_ms": hung.as_millis() as u64}),
                    );
                    let _ = self.ui.send_event(UserEvent::WebContent(WebContentOp::DismissHung));
                    self.status(&format!("The Apps were not responding; {line}."), false);
                }
            }
            ShellMessage::Ready if self.recycling => {
                // A fresh shell after a recycle or a stop: give it the state the old one had.
                self.recycling = false;
                self.shell_ready = true;
                self.supervisor.alive(Instant::now());
                self.trace.record(None, Direction::Diagnostic, &json!({"kind": "recycled"}));
                self.shell(ShellCommand::Theme { theme: self.theme });
                self.show_servers();
                for cmd in self.history.clone() {
                    self.shell(cmd);
                }
                for text in std::mem::take(&mut self.shell_backlog) {
                    let _ = self.ui.send_event(UserEvent::Shell(text));
                }
                self.restore_views();
            }
            ShellMessage::Ready => {
                self.shell_ready = true;
                self.supervisor.alive(Instant::now());
                for text in std::mem::take(&mut self.shell_backlog) {
                    let _ = self.ui.send_event(UserEvent::Shell(text));
                }
                if let Some(script) = self.options.automation.clone() {
                    let _ = self.ui.send_event(UserEvent::Eval(script));
                }
            }
            ShellMessage::Diagnostic { view, data } => {
                let kind = data.get("kind").and_then(Value::as_str).unwrap_or("unknown").to_owned();
                let detail = data.get("detail").cloned().unwrap_or(Value::Null);
                // The View's file, not the proxy's URL; console chatter below error is not a warning.
                let detail = self.views.get(&view).map_or(detail.clone(), |v| v.handle.locate_diagnostic(detail));
                match detail["level"].as_str() {
                    Some("log" | "info" | "debug") => tracing::info!(view = %view, "View {kind:?}: {detail}"),
                    _ => tracing::warn!(view = %view, "View {kind:?}: {detail}"),
                }
                self.trace.record(Some(&view), Direction::Diagnostic, &json!({"kind": kind, "detail": detail}));
                if self.options.preview {
                    self.shell(ShellCommand::Diagnostic { view: view.clone(), kind, detail });
                }
            }
            ShellMessage::Dropped { view, reason } => {
                tracing::warn!(view = %view, "the View's proxy dropped a message: {reason}");
                self.trace.record(Some(&view), Direction::Rejected, &json!({"reason": reason}));
            }
            // Carried out on the UI thread (`frames.rs`), never sent here.
            ShellMessage::Frames { .. } => {}
            ShellMessage::Wait { view } => self.wait_for(&view),
            ShellMessage::StopApp { view } => self.stop_app(&view),
            ShellMessage::Answer { dialog, accepted, remember } => {
                if let Some((_, reply)) = self.dialogs.remove(&dialog) {
                    tracing::info!(dialog, accepted, remember, "consent answered");
                    self.chat_consent_answered(dialog, accepted && remember);
                    let _ = reply.send(accepted);
                } else {
                    tracing::debug!(dialog, "an answer to a dialog nobody waits for");
                }
            }
            ShellMessage::Theme { theme } => self.set_theme(theme),
            ShellMessage::Reopen { id } => self.reopen_conversation(&id),
            ShellMessage::StopTurn => self.stop_turn(),
            ShellMessage::Prompt { text } => {
                let text = text.trim();
                if !text.is_empty() {
                    self.prompt(text.chars().take(MAX_PROMPT_CHARS).collect());
                }
            }
            ShellMessage::DevSend { view, method, params } => {
                let allowed = [
                    methods::TOOL_INPUT,
                    methods::TOOL_INPUT_PARTIAL,
                    methods::TOOL_RESULT,
                    methods::TOOL_CANCELLED,
                    methods::HOST_CONTEXT_CHANGED,
                ];
                match self.views.get(&view) {
                    Some(v) if allowed.contains(&method.as_str()) => v.handle.notify(&method, params),
                    _ => tracing::warn!(view = %view, "developer panel: cannot send {method}"),
                }
            }
            ShellMessage::DevContext { view, context } => {
                match (self.views.get(&view), serde_json::from_value::<HostContext>(context)) {
                    (Some(v), Ok(ctx)) => v.handle.update_host_context(ctx),
                    (_, Err(e)) => tracing::warn!(view = %view, "developer panel: bad host context: {e}"),
                    _ => {}
                }
            }
            ShellMessage::Reload => self.reload_all(),
            // DevTools are for App authors: `preview` only (its webview alone has developer extras).
            ShellMessage::Inspector if self.options.preview => {
                let _ = self.ui.send_event(UserEvent::OpenInspector);
            }
            ShellMessage::Inspector => tracing::warn!("web inspector refused: it opens only in preview"),
            ShellMessage::CallTool { server, tool, arguments } => {
                if let Err(e) = self.open(server.as_deref(), &tool, arguments, Opening::Person) {
                    self.shell(ShellCommand::Text {
                        view: None,
                        title: tool_label(&tool),
                        text: consent::block(&e.to_string()),
                        error: true,
                    });
                }
            }
            ShellMessage::ElicitAnswer { dialog, action, content } => {
                self.elicit_cmds.remove(&dialog);
                let Some((server, reply)) = self.elicits.remove(&dialog) else { return };
                let answer = match action.as_str() {
                    "accept" => ElicitAnswer::Accept(content),
                    "decline" => ElicitAnswer::Decline,
                    _ => ElicitAnswer::Cancel,
                };
                tracing::info!(server = %server, dialog, action = answer.action(), "elicitation answered in the app");
                let _ = reply.send(answer);
            }
            ShellMessage::SignIn { server } => {
                let servers = self.servers.clone();
                tokio::spawn(async move {
                    if let Err(e) = servers.sign_in(&server).await {
                        tracing::warn!(server = %server, "sign-in failed: {e}");
                    }
                });
            }
            ShellMessage::CancelSignIn { server } => self.servers.cancel_sign_in(&server),
            ShellMessage::Restart { server } => {
                let servers = self.servers.clone();
                tokio::spawn(async move {
                    if let Err(e) = servers.restart(&server).await {
                        tracing::warn!(server = %server, "restart failed: {e}");
                    }
                });
            }
            ShellMessage::Inline { view } => {
                // The person's own action: never rate-limited, always possible.
                if self.views.get(&view).is_some_and(|v| v.phase.is_open() && v.mode != DisplayMode::Inline) {
                    self.apply_mode(&view, DisplayMode::Inline, true);
                }
                // The person's choice sticks: the View cannot take the screen again by itself.
                if let Some(v) = self.views.get_mut(&view) {
                    v.person_chose_inline = true;
                }
            }
            ShellMessage::Close { view } => {
                self.model_view_closed(&view);
                if let Some(v) = self.views.get(&view).filter(|v| v.phase.is_open() && self.processes.is_hung(&v.label))
                {
                    // Its process does not answer: no teardown to wait for (closing ends it).
                    tracing::warn!(view = %view, "closing a View that does not respond");
                    v.handle.frame_gone();
                    self.close_view(&view);
                } else if let Some(v) = self.views.get(&view).filter(|v| v.phase.is_open()) {
                    self.spawn_teardown(v.handle.clone());
                } else if let Some(pending) = self.pending.remove(&view) {
                    // Still reading its UI: the person gave up waiting.
                    if let Some(task) = pending.task {
                        task.abort();
                    }
                    self.registry.remove(&view);
                    tracing::info!(view = %view, "cancelled before its View was mounted");
                    self.unmount(&view);
                    if self.startup_ids.contains(&view) && self.options.exit_after.is_some() {
                        self.fail(&format!("View {view} was cancelled before it was mounted"));
                    }
                    self.schedule_recycle();
                }
            }
        }
    }

    fn set_theme(&mut self, theme: Theme) {
        if theme == self.theme {
            return;
        }
        self.theme = theme;
        self.shell(ShellCommand::Theme { theme });
        let _ = self.ui.send_event(UserEvent::Frame(FrameOp::Theme(theme)));
        for v in self.views.values().filter(|v| v.phase.is_open()) {
            v.handle.update_host_context(HostContext {
                theme: Some(theme),
                styles: Some(host_styles(theme)),
                ..Default::default()
            });
        }
    }

    fn on_resized(&mut self, width: f64, height: f64) {
        // In pip the window is the View; its size is fixed by the host.
        if self.views.values().any(|v| v.mode == DisplayMode::Pip && v.phase.is_open()) {
            return;
        }
        self.window = (width, height);
        for v in self.views.values().filter(|v| v.phase.is_open()) {
            v.handle.update_host_context(HostContext {
                container_dimensions: Some(self.container(v.mode)),
                ..Default::default()
            });
        }
    }

    fn on_ask(&mut self, ask: Ask) {
        match ask {
            Ask::Confirm { view, prompt, reply } => {
                // A View gets one question at a time, and none once it is gone: a flood of
                // prompts (or prompts answered after the View closed) must not act for it.
                let open = self.views.get(&view).is_some_and(|v| v.phase.is_open());
                if !open || self.dialogs.values().any(|(v, _)| *v == view) {
                    tracing::warn!(view = %view, "consent request refused: {}", if open { "one is already pending" } else { "the View is closed" });
                    let _ = reply.send(false);
                    return;
                }
                let dialog = self.next_dialog;
                self.next_dialog += 1;
                self.dialogs.insert(dialog, (view, reply));
                self.shell(ShellCommand::Confirm {
                    dialog,
                    title: prompt.title.to_owned(),
                    subject: prompt.subject,
                    source: prompt.source,
                    detail: prompt.detail,
                    accept: prompt.accept.to_owned(),
                    remember: None,
                });
            }
            Ask::Sample { server, text, reply } => {
                let dialog = self.next_dialog;
                self.next_dialog += 1;
                self.dialogs.insert(dialog, (format!("server:{server}"), reply));
                let label = self.label(&server);
                self.shell(ShellCommand::Confirm {
                    dialog,
                    title: "Let this server ask the model?".into(),
                    subject: vec![consent::one_line_max(&label, 80)],
                    source: "The server wants the model to answer these messages (it gets the answer):".into(),
                    detail: consent::block(&text),
                    accept: "Ask the model".into(),
                    remember: None,
                });
            }
            Ask::DisplayMode { view, mode, reply } => {
                let mode = self.set_display_mode(&view, mode);
                let _ = reply.send(mode);
            }
            Ask::Message { view, content, taken } => {
                tracing::info!(view = %view.view, "message from the View: {:?}", content_text(&content));
                let cmd = ShellCommand::Message {
                    view: view.view.clone(),
                    from: consent::app_label(&view.tool, &view.server),
                    role: "user".into(),
                    text: consent::block(&content_text(&content)),
                };
                self.remember(cmd.clone());
                self.shell(cmd);
                let app = consent::app_label(&view.tool, &view.server);
                let _ = taken.send(self.chat_app_message(&view.view, app, content_text(&content)));
            }
            Ask::ModelContext { view, context } => {
                let text = context.as_ref().map(|c| {
                    let blocks =
                        c.get("content").and_then(Value::as_array).map(|b| content_text(b)).unwrap_or_default();
                    match c.get("structuredContent") {
                        Some(s) => format!("{blocks}\n{s}").trim().to_owned(),
                        None => blocks,
                    }
                });
                self.chat_model_context(&view.view, consent::app_label(&view.tool, &view.server), text.clone());
                let text = text.map(|t| consent::block(&t));
                // Only a View's latest model context matters.
                self.history.retain(|c| !matches!(c, ShellCommand::Context { view: v, .. } if *v == view.view));
                let cmd = ShellCommand::Context {
                    view: view.view.clone(),
                    from: consent::app_label(&view.tool, &view.server),
                    text,
                };
                self.remember(cmd.clone());
                self.shell(cmd);
            }
            Ask::Elicit { request, reply, gone } => {
                let dialog = self.next_dialog;
                self.next_dialog += 1;
                // What is decided on comes first: the server asking, or the website to open.
                let server = consent::one_line_max(&request.server, 80);
                let message = consent::block(&request.message);
                let (cmd, url) = match &request.kind {
                    ElicitationKind::Form { schema } => (
                        ShellCommand::Elicit {
                            dialog,
                            server: server.clone(),
                            message,
                            title: "A server asks you a question".into(),
                            subject: vec![server],
                            source: None,
                            url: None,
                            schema: Some(schema.clone()),
                        },
                        None,
                    ),
                    ElicitationKind::Url { url, .. } => match LinkSubject::parse(url) {
                        Ok((parsed, subject)) => (
                            ShellCommand::Elicit {
                                dialog,
                                server: server.clone(),
                                message,
                                title: "A server asks you to open this website".into(),
                                subject: vec![subject.host],
                                source: Some(format!("Asked by the server {server}")),
                                url: Some(subject.address),
                                schema: None,
                            },
                            Some(parsed.to_string()),
                        ),
                        Err(reason) => {
                            tracing::warn!(server = %request.server, "URL elicitation declined: {reason}");
                            let _ = reply.send(ElicitAnswer::Decline);
                            return;
                        }
                    },
                };
                // URL elicitation: the URL opens only once the person accepts; then the server hears.
                let reply = match url {
                    Some(url) => {
                        let (tx, rx) = oneshot::channel::<ElicitAnswer>();
                        let opener = self.options.opener.clone();
                        tokio::spawn(async move {
                            let answer = rx.await.unwrap_or(ElicitAnswer::Cancel);
                            if matches!(answer, ElicitAnswer::Accept(_)) {
                                if let Err(e) = open_url(opener.as_deref(), &url) {
                                    tracing::warn!("could not open {url}: {e}");
                                }
                            }
                            let _ = reply.send(answer);
                        });
                        tx
                    }
                    None => reply,
                };
                self.elicits.insert(dialog, (request.server.clone(), reply));
                self.elicit_cmds.insert(dialog, cmd.clone());
                let asks = self.asks.clone();
                tokio::spawn(async move {
                    let _ = gone.await;
                    let _ = asks.send(Ask::DismissElicit { dialog });
                });
                self.shell(cmd);
            }
            Ask::DismissElicit { dialog } => {
                self.elicit_cmds.remove(&dialog);
                if self.elicits.remove(&dialog).is_some() {
                    tracing::info!(dialog, "elicitation withdrawn before it was answered");
                }
                self.shell(ShellCommand::Dismiss { dialog });
            }
        }
    }

    fn spawn_teardown(&mut self, handle: ViewHandle) {
        if let Some(v) = self.views.get_mut(handle.id()) {
            v.phase = v.phase.advanced(Phase::Closing);
        }
        let done = self.teardowns.clone();
        // Runs beside the loop, which keeps relaying the View's answer.
        tokio::spawn(async move {
            let outcome = handle.teardown().await;
            tracing::info!(view = %handle.id(), "teardown: {outcome:?}");
            let _ = done.send(handle.id().to_owned());
        });
    }

    /// Handles a session's output; returns an exit code when the run is complete.
    fn on_view_output(&mut self, view: &str, output: ViewOutput) -> Option<i32> {
        match output {
            ViewOutput::Post(text) => {
                // `text` is the message as the bridge serialized it: it goes to the View's own
                // webview unparsed (the hot path).
                let _ = self.ui.send_event(UserEvent::Frame(FrameOp::Post { view: view.to_owned(), msg: text }));
                None
            }
            ViewOutput::Event(event) => {
                if let Some(events) = &self.options.events {
                    let _ = events.send((view.to_owned(), event.clone()));
                }
                self.on_view_event(view, event)
            }
        }
    }

    fn on_view_event(&mut self, view: &str, event: ViewEvent) -> Option<i32> {
        let exit_after = self.options.exit_after;
        match event {
            ViewEvent::Initialized { protocol_version, app_info, .. } => {
                tracing::info!(view, app = %app_info.name, version = %app_info.version, %protocol_version, "View initialized");
                if let Some(v) = self.views.get_mut(view) {
                    v.phase = v.phase.advanced(Phase::Initialized);
                    v.reached.initialized = true;
                }
                self.probation_initialized(view);
                if exit_after == Some(ExitAfter::Initialized) && self.views.values().all(|v| v.reached.initialized) {
                    return Some(0);
                }
                if exit_after.is_none() {
                    if let Some(path) = self.options.screenshot.clone() {
                        let (ui, settle) = (self.ui.clone(), self.options.settle);
                        tokio::spawn(async move {
                            tokio::time::sleep(settle).await;
                            take_screenshot(&ui, path).await;
                        });
                    }
                }
            }
            ViewEvent::ToolResultDelivered => {
                if let Some(v) = self.views.get_mut(view) {
                    v.reached.result_delivered = true;
                }
                if exit_after == Some(ExitAfter::Result) && self.views.values().all(|v| v.reached.result_delivered) {
                    return Some(0);
                }
            }
            ViewEvent::ToolCancelledDelivered { reason } => {
                tracing::info!(view, "tool-cancelled delivered: {}", reason.unwrap_or_default());
                if exit_after.is_some() {
                    return Some(1);
                }
            }
            ViewEvent::SizeChanged { height: Some(h), .. } => {
                let v = self.views.get_mut(view)?;
                // Only inline Views size themselves; fullscreen and pip fill what the host gives.
                if v.mode != DisplayMode::Inline {
                    return None;
                }
                let height = h.clamp(MIN_FRAME_HEIGHT, INLINE_MAX_HEIGHT).ceil();
                let height = match v.frame.report(height, Instant::now()) {
                    Sizing::Keep => return None,
                    Sizing::Resize(height) => height,
                    Sizing::Hold(height) => {
                        tracing::info!(view, "the View sizes itself from its frame (it grew after every resize): its frame stays at {height} px");
                        return None;
                    }
                };
                tracing::debug!(view, height, "resizing the View's frame");
                self.shell(ShellCommand::Resize { view: view.to_owned(), height });
            }
            ViewEvent::DisplayModeChanged { mode } => tracing::info!(view, "display mode is now {mode:?}"),
            ViewEvent::TeardownRequested => {
                let handle = self.views.get(view)?.handle.clone();
                self.spawn_teardown(handle);
            }
            ViewEvent::Closed => self.close_view(view),
            _ => {}
        }
        None
    }

    fn close_view(&mut self, view: &str) {
        if self.on_probation.as_ref().is_some_and(|(id, _)| id == view) {
            self.on_probation = None;
            self.advance_probation();
        }
        self.refuse_dialogs_of(view);
        self.forget_context(view);
        let pip = self.views.get(view).is_some_and(|v| v.mode == DisplayMode::Pip && v.phase.is_open());
        if pip {
            let _ = self.ui.send_event(UserEvent::Window(WindowOp::Restore));
        }
        if let Some(v) = self.views.get_mut(view) {
            if v.phase.is_open() {
                v.phase = Phase::Gone;
                self.registry.remove(view);
                self.unmount(view);
            }
        }
        self.schedule_recycle();
    }

    /// The consent questions `view` has open are answered no and taken off the screen.
    fn refuse_dialogs_of(&mut self, view: &str) {
        let orphaned: Vec<u64> = self.dialogs.iter().filter(|(_, (v, _))| v == view).map(|(d, _)| *d).collect();
        for dialog in orphaned {
            if let Some((_, reply)) = self.dialogs.remove(&dialog) {
                let _ = reply.send(false);
            }
            self.shell(ShellCommand::Dismiss { dialog });
        }
    }

    /// Removes a View's card and its webview.
    fn unmount(&mut self, view: &str) {
        self.shell(ShellCommand::Unmount { view: view.to_owned() });
        let _ = self.ui.send_event(UserEvent::Frame(FrameOp::Unmount { view: view.to_owned() }));
    }

    /// Keeps a shell command of the conversation's record for a reloaded shell (bounded).
    fn remember(&mut self, cmd: ShellCommand) {
        if self.history.len() >= 1000 {
            self.history.remove(0);
        }
        self.history.push(cmd);
    }
}

/// A tool call of the host's own (the person's, the model's, a View's first): through the
/// server's port like a View's calls (restart and sign-in on demand), traced both ways.
async fn call_tool_traced(
    servers: &Arc<Registry>,
    trace: &Trace,
    view: Option<&str>,
    server: &str,
    tool: &str,
    arguments: Map<String, Value>,
) -> std::result::Result<Value, crate::protocol::RpcError> {
    trace.server_request(view, methods::TOOLS_CALL, &json!({"name": tool, "arguments": arguments}));
    let outcome = servers.port(server).call_tool(tool.to_owned(), Some(arguments), CallControl::default()).await;
    trace.server_answer(view, methods::TOOLS_CALL, outcome.as_ref());
    outcome
}

/// A tool result as a person reads it on a card (its text blocks, else its structured content)
/// and whether it is an error.
fn result_for_person(result: &Value) -> (String, bool) {
    let blocks = result.get("content").and_then(Value::as_array).map(|b| content_text(b)).unwrap_or_default();
    let text = if blocks.is_empty() {
        result.get("structuredContent").map(Value::to_string).unwrap_or_default()
    } else {
        blocks
    };
    (text, result.get("isError") == Some(&Value::Bool(true)))
}

/// Text from a server or View for a line of the host's own output (stderr): one line, so it
/// cannot forge the lines after it.
fn say(text: &str) -> String {
    consent::one_line_max(text, 2000)
}

/// The controller's receiving ends, handed to [`Controller::run`].
pub(super) struct Receivers {
    recycle: mpsc::UnboundedReceiver<u64>,
    probation: mpsc::UnboundedReceiver<ViewId>,
    teardowns: mpsc::UnboundedReceiver<ViewId>,
    asks: mpsc::UnboundedReceiver<Ask>,
    finished: mpsc::UnboundedReceiver<i32>,
}

/// Asks the UI thread for a screenshot; returns the exit code it implies (1 when it failed).
async fn take_screenshot(ui: &Ui, path: PathBuf) -> i32 {
    let (tx, rx) = oneshot::channel();
    if ui.send_event(UserEvent::Screenshot(path, tx)).is_err() {
        return 1;
    }
    match tokio::time::timeout(Duration::from_secs(10), rx).await {
        Ok(Ok(Ok(path))) => {
            eprintln!("screenshot: {}", path.display());
            0
        }
        Ok(Ok(Err(e))) => {
            eprintln!("error: screenshot failed: {e}");
            1
        }
        _ => {
            eprintln!("error: screenshot failed: no answer from the webview");
            1
        }
    }
}

/// The user's download folder, or the current directory when there is none.
fn default_downloads() -> PathBuf {
    directories::UserDirs::new()
        .and_then(|d| d.download_dir().map(PathBuf::from))
        .or_else(|| directories::BaseDirs::new().map(|d| d.home_dir().join("Downloads")))
        .unwrap_or_else(|| PathBuf::from("."))
}

#[cfg(test)]
mod tests;
