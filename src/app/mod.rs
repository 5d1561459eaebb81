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
use crate::error::{Error, Result};
use crate::protocol::styles::host_styles;
use crate::protocol::{methods, ContainerDimensions, DisplayMode, HostContext, Theme};
use crate::sandbox::{build_csp, origin::sandbox_origin, sandbox_label};
use crate::server::auth::SystemBrowser;
use crate::server::connection::{ConnectOptions, RequestHandler, ServerChange};
use crate::server::requests::{ElicitAnswer, ElicitationKind, Root};
use crate::server::set::{ServerEvent, ServerEventKind, ServerSet, ServerStatus, ToolEntry};
use crate::server::ServerSpec;
use crate::ui_resource::ui_resource_from_read;
use dialogs::{content_text, open_url, Answer, Ask, Consent, DialogPolicy, DialogRequests};
use proxies::{ProxyPages, ProxyPolicy};
use shell::{ShellCommand, ShellMessage};
use supervisor::{Supervisor, Tick, ViewProcesses};
use window::{FrameMount, FrameOp, HostInput, Ui, UserEvent, WebContentOp, WebContentSignal, WindowOp};

mod about;
mod conversation;
pub(crate) mod dialogs;
mod display;
mod ending;
mod frame_height;
mod hibernation;
pub(crate) mod install_request;
pub(crate) mod interaction;
mod lifecycle;
mod model_settings;
mod options;
mod person;
mod preview;
pub(crate) mod proxies;
mod questions;
mod recovery;
mod servers;
pub(crate) mod shell;
mod shell_page;
pub(crate) mod single_instance;
pub(crate) mod supervisor;
pub(crate) mod test_interface;
mod views;
pub(crate) mod window;

use ending::{take_screenshot, Ending};
use frame_height::{FrameHeight, Sizing};
use hibernation::{Hibernation, DEFAULT_LIVE_VIEWS};
pub use interaction::Interaction;
use lifecycle::{Milestones, Pending, Phase};
#[cfg_attr(not(feature = "desktop"), allow(unused_imports))]
pub use options::{ExitAfter, RunOptions, SharedModel, SharedPolicy};
use preview::watch_file;
use questions::Questions;
use recovery::{Recovery, Restore};
use shell_page::ShellPage;
use views::{call_tool_traced, result_for_person, Views};

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
    /// Its tool call failed (why): a View woken from sleep is told so again, without a call.
    call_failed: Option<String>,
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
    /// made, for the arguments the model is still writing (see `conversation.rs`).
    Model(ViewId),
    /// A sleeping View wakes (see `hibernation.rs`): last input and result, in its card.
    Wake,
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
    proxies: ProxyPages,
    theme: Theme,
    window: (f64, f64),
    started: Instant,
    trace: Trace,
    servers: Arc<ServerSet>,
    /// The shell's page: whether it is ready, what waits for it, what it is sent again.
    shell_page: ShellPage,
    /// The Views: open, being prepared, named at start (see `views/`).
    views: Views,
    /// Restarts after a stop, probation, recycling, the supervisor (see `recovery.rs`).
    recovery: Recovery,
    /// The questions put to the person: consent dialogs, elicitations, the install dialog.
    questions: Questions,
    /// The conversation with the model and the Views of its calls (see `conversation.rs`).
    conversation: conversation::Conversation,
    /// Preview's live reloads and its log's rate limit (see `preview.rs`).
    preview: preview::Preview,
    /// The servers as the window shows them: tried at start, the welcome, the editor's error.
    server_list: servers::ServerList,
    /// How the run ends.
    ending: Ending,
    /// Views far out of sight that sleep, and which are near sight.
    hibernation: Hibernation,
    /// The interaction session of the run, if it has one.
    interaction: interaction::Slot,
    /// The test interface's state: requests waiting for a View, the Views it displayed.
    test: test_interface::State,
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
        proxies: ProxyPages,
        system_theme: Theme,
        started: Instant,
    ) -> (Self, Receivers) {
        let (teardowns, teardowns_rx) = mpsc::unbounded_channel();
        let (finished_tx, finished_rx) = mpsc::unbounded_channel();
        let (asks, asks_rx) = mpsc::unbounded_channel();
        let (recycle_tx, recycle_rx) = mpsc::unbounded_channel();
        let (probation_tx, probation_rx) = mpsc::unbounded_channel();
        let options_stop_after = options.limits.stop_unresponsive.unwrap_or(supervisor::AUTO_STOP_AFTER);
        let theme = options.theme.unwrap_or(system_theme);
        let mut hibernation = Hibernation::new(options.limits.live_views.unwrap_or(DEFAULT_LIVE_VIEWS));
        if let Some(ms) = std::env::var(hibernation::NO_RESULT_AFTER_ENV).ok().and_then(|v| v.parse().ok()) {
            tracing::error!(
                "{} is set: a View without its result may sleep after {ms} ms",
                hibernation::NO_RESULT_AFTER_ENV
            );
            hibernation = hibernation.with_no_result_after(Duration::from_millis(ms));
        }
        let (interaction, interaction_end) = interaction::Slot::new(options.automation.interaction.as_ref());
        let requests = options.requests.clone().unwrap_or_else(|| {
            RequestHandler(Arc::new(DialogRequests {
                asks: asks.clone(),
                consent: options.consent,
                model: options.conversation.model.clone().map(|m| m.0),
                sampling: Default::default(),
            }))
        });
        // Sign-in pages open in the system browser (or with --open-with, like links).
        let browser = SystemBrowser { opener: options.opener.clone() };
        let mut connect = ConnectOptions::default().roots(options.roots.clone()).authorizer(Arc::new(browser));
        connect.requests = requests;
        let servers = ServerSet::new(options.servers.clone(), connect);
        let controller = Self {
            options,
            ui,
            proxies,
            theme,
            window: (1200.0, 820.0),
            started,
            trace: Trace::disabled(),
            servers,
            shell_page: ShellPage::default(),
            views: Views::new(teardowns),
            recovery: Recovery::new(options_stop_after, recycle_tx, probation_tx),
            questions: Questions::new(asks),
            conversation: conversation::Conversation::default(),
            preview: preview::Preview::new(started),
            server_list: servers::ServerList::default(),
            ending: Ending::new(finished_tx),
            hibernation,
            interaction,
            test: Default::default(),
        };
        (
            controller,
            Receivers {
                teardowns: teardowns_rx,
                asks: asks_rx,
                finished: finished_rx,
                recycle: recycle_rx,
                probation: probation_rx,
                interaction_end,
            },
        )
    }

    fn shell(&mut self, command: ShellCommand) {
        self.shell_text(command.to_text());
    }

    fn shell_text(&mut self, text: String) {
        self.shell_page.send(&self.ui, text);
    }

    /// The status line: one line, whatever a server's reason contains.
    fn status(&mut self, text: &str, error: bool) {
        // Whatever took the line, it no longer speaks of the servers (see `say_servers`).
        self.server_list.said = None;
        self.shell(ShellCommand::Status { text: consent::one_line_max(text, 400), error });
    }

    pub(super) async fn run(mut self, mut from_ui: mpsc::UnboundedReceiver<HostInput>, receivers: Receivers) {
        let Receivers {
            teardowns: mut teardowns_rx,
            asks: mut asks_rx,
            finished: mut finished_rx,
            recycle: mut recycle_rx,
            probation: mut probation_rx,
            mut interaction_end,
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
        // A runner's requests (the test interface), if the run takes any; else a line nobody
        // sends on (its sender kept, so it waits instead of ending).
        let (_no_runner, idle) = mpsc::unbounded_channel();
        let mut test_requests = self.options.automation.test_requests.as_ref().and_then(|t| t.take()).unwrap_or(idle);
        let (tap_tx, mut tap_rx) = mpsc::unbounded_channel::<Value>();
        if self.options.developer.panel || self.interaction.feed.is_some() {
            self.trace = self.trace.clone().with_tap(tap_tx);
        }
        if self.options.developer.panel {
            self.shell(ShellCommand::Dev);
        }
        let (reload_tx, mut reload_rx) = mpsc::unbounded_channel::<()>();
        if let Some(path) = self.options.developer.html.clone() {
            tokio::spawn(watch_file(path, reload_tx));
        }
        let (out_tx, mut out_rx) = mpsc::unbounded_channel::<(ViewId, ViewOutput)>();
        let (setup_tx, mut setup_rx) = mpsc::unbounded_channel::<(ViewId, String, Setup)>();
        let (result_tx, mut result_rx) = mpsc::unbounded_channel::<(ViewId, Result<Value, String>)>();
        self.views.set_channels(Channels { out: out_tx, setup: setup_tx, results: result_tx });

        self.views.named_at_start(self.options.opens.clone());
        self.prepare_startup_frames();
        // Every server starts at once; the picker shows each as it becomes ready (or fails).
        let mut server_events = self.servers.events();
        let (started_tx, mut started_rx) = oneshot::channel::<()>();
        if !self.ending.is_exiting() {
            let names = self.servers.names();
            if !names.is_empty() {
                self.say_servers();
            }
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
        let memory_limit_mb = self.recovery.set_memory_limit(self.options.limits.web_memory_limit_mb);
        tracing::debug!("web content memory limit: {memory_limit_mb} MB");
        let mut watch = tokio::time::interval(supervisor::HEARTBEAT);
        watch.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        // The /proc scan runs on a blocking thread, not in this loop, which relays every message.
        let mut over_limit = supervisor::watch_memory(memory_limit_mb);
        // The conversation's outputs, of this run's every conversation (one may start later,
        // from the model settings page).
        let (chat_tx, mut chat_rx) = mpsc::unbounded_channel();
        self.conversation.set_outputs(chat_tx);
        self.start_chat();
        // Second launches on the same config file (see `single_instance`).
        let (arrivals_tx, mut arrivals) = mpsc::unbounded_channel();
        if let Some(door) = self.options.launch.front_door.take() {
            door.serve(move |arrival| arrivals_tx.send(arrival).is_ok());
        }
        loop {
            tokio::select! {
                Some((generation, out)) = chat_rx.recv() => self.on_chat(generation, out),
                Some(arrival) = arrivals.recv() => self.on_arrival(arrival),
                _ = watch.tick() => {
                    self.supervise();
                    self.keep_budget();
                },
                Some((pid, mb)) = over_limit.recv() => self.over_memory_limit(pid, mb),
                input = from_ui.recv() => match input {
                    Some(HostInput::Shell(msg)) => self.on_shell(msg),
                    Some(HostInput::CloseRequested) => self.begin_exit(0),
                    Some(HostInput::Shortcut(shortcut)) => self.on_shortcut(shortcut),
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
                        // Cancelled from its card while its session was being handed over: it
                        // is not mounted (it would have no server and no proxy page).
                        Ok(handle) if !self.views.is_pending(&view) => handle.frame_gone(),
                        Ok(handle) => self.mount(handle, &tool),
                        // A sleeping View that could not wake: its card says why.
                        Err(e) if self.wake_failed(&view, &e.to_string()) => {
                            self.views.remove_pending(&view);
                        }
                        Err(e) => {
                            self.views.remove(&view);
                            self.views.remove_pending(&view);
                            // The error takes the place of the card's spinner.
                            self.shell(ShellCommand::Text {
                                view: Some(view.clone()),
                                title: tool_label(&tool),
                                text: consent::block(&e.to_string()),
                                error: true,
                            });
                            if self.views.is_startup(&view) {
                                self.fail(&e.to_string());
                            }
                            self.probation_ended(&view);
                        }
                    }
                },
                Some(ask) = asks_rx.recv() => self.on_ask(ask),
                Some(record) = tap_rx.recv() => {
                    if let Some(feed) = &self.interaction.feed {
                        let _ = feed.send(record.clone());
                    }
                    if self.options.developer.panel {
                        self.log_record(record);
                    }
                },
                Some(code) = interaction_end.recv() => self.finish(code),
                Some(request) = test_requests.recv() => self.on_test_request(request),
                Some(()) = reload_rx.recv() => self.reload_all(),
                event = server_events.recv() => match event {
                    Ok(event) => self.on_server_event(event),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => self.show_servers(),
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {}
                },
                Ok(()) = &mut started_rx, if !self.server_list.all_tried() => self.on_started(),
                Some(code) = finished_rx.recv() => self.begin_exit(code),
                Some(generation) = recycle_rx.recv() => self.recycle(generation),
                Some(view) = probation_rx.recv() => self.probation_passed(&view),
                Some(view) = teardowns_rx.recv() => {
                    self.close_view(&view);
                    if self.options.automation.exit_after == Some(ExitAfter::Teardown) && self.views.values().all(|v| !v.phase.is_open()) {
                        self.finish(0);
                    }
                },
                Some((view, outcome)) = result_rx.recv() => {
                    let tool = self.views.get(&view).map(|v| v.tool.clone()).unwrap_or_default();
                    if self.late_outcome(&view, &outcome) {
                        // Its View slept on the way: what stands for the call has it.
                    } else if let Ok(result) = &outcome {
                        // The result may come before the View is mounted: keep it for the mount.
                        self.views.result_arrived(&view, result);
                    } else if let Err(reason) = &outcome {
                        self.views.call_failed(&view, reason);
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
                        if self.options.automation.exit_after.is_some() {
                            self.begin_exit(1);
                        }
                    }
                    // Only fires once; park it far away.
                    deadline.as_mut().reset(tokio::time::Instant::now() + Duration::from_secs(86_400 * 365));
                },
            }
        }
    }
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
    /// The interaction session's exit code.
    interaction_end: mpsc::UnboundedReceiver<i32>,
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
