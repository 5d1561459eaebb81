//! The test interface for conformance runners: the shape the MCP Apps conformance work proposes
//! a host offer (`HostTestInterface` of ext-apps issue #743: display a test App, reset, read the
//! conversation and the model context, change the host context, confirm an action, send a
//! message, call a tool), plus `readModelToolList` and `interact` (a real click or keys in a
//! View, `super::interaction`). A runner drives it through `run --test-interface` (JSON lines on
//! stdin and stdout) or the embedding API ([`crate::host::TestInterface`]).
//!
//! Every request goes the way the person's action would (a tool picked, a dialog answered, a
//! prompt sent) and is answered on its own channel; nothing here reaches past the app's rules.
//! Two methods read what no person's action reads, for a runner's checks only: `inspectFrame`
//! (the iframes around a View) and `evaluateInView` (a runner's script in the frame of a View the
//! runner displayed, as a browser automation evaluates in a frame). Both are asked of the web
//! process extension (`webext/session.c`) by a message only the host's process can send, and
//! exist only while a runner drives the run: a View, a server or a model never reaches them.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::interaction::{self, Interaction};
use super::shell::{ShellCommand, ShellMessage};
use super::window::{InputOp, UserEvent};
use super::{Controller, Opening};
use crate::bridge::ViewId;
use crate::conversation::ToolOutcome;
use crate::server::set::ToolEntry;

/// The methods, as a runner names them.
pub const METHODS: &[&str] = &[
    "displayTestApp",
    "resetEnvironment",
    "getConversation",
    "getConversationContext",
    "changeHostContext",
    "confirmAction",
    "sendMessage",
    "callTool",
    "readModelToolList",
    "interact",
    "inspectFrame",
    "evaluateInView",
    "readWindow",
];

/// How long `readWindow` waits for the shell's answer.
const WINDOW_READ: std::time::Duration = std::time::Duration::from_secs(5);
/// At most this many `readWindow` requests wait at once.
const MAX_WINDOW_READS: usize = 16;

/// The longest script `evaluateInView` takes.
const MAX_SCRIPT_BYTES: usize = 256 * 1024;
/// How long `evaluateInView` waits for the View's answer (a View can keep its promise unsettled,
/// or loop).
const EVALUATE_WAIT: Duration = Duration::from_secs(10);

/// One request of a runner, and where its answer goes.
#[derive(Debug)]
pub struct TestRequest {
    /// One of [`METHODS`].
    pub method: String,
    /// Its params (an object).
    pub params: Value,
    /// The answer: a result, or an error a runner can read.
    pub reply: oneshot::Sender<Result<Value, String>>,
}

/// Where a run takes its runner's requests from (set once; the run takes it at start).
#[derive(Debug, Clone, Default)]
pub struct TestRequests(Arc<Mutex<Option<mpsc::UnboundedReceiver<TestRequest>>>>);

impl TestRequests {
    /// A channel: requests sent on the sender reach the run that gets these.
    pub fn channel() -> (mpsc::UnboundedSender<TestRequest>, Self) {
        let (tx, rx) = mpsc::unbounded_channel();
        (tx, Self(Arc::new(Mutex::new(Some(rx)))))
    }

    pub(super) fn take(&self) -> Option<mpsc::UnboundedReceiver<TestRequest>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// What the test interface keeps between a runner's requests.
#[derive(Debug, Default)]
pub(super) struct State {
    /// Runner requests waiting on a View: its id, and the answer once it initialized.
    waiting: HashMap<ViewId, oneshot::Sender<Result<Value, String>>>,
    /// The Views the runner displayed (`displayTestApp`): the only ones `evaluateInView` reaches.
    displayed: HashSet<ViewId>,
    /// The model's tool calls, for `getConversation` (their results fill in when they come).
    tool_turns: Arc<Mutex<Vec<ToolTurn>>>,
    /// `readWindow` requests the shell has not answered yet, by the number it was asked with.
    window_reads: HashMap<u64, oneshot::Sender<Value>>,
    next_window_read: u64,
}

/// A model's tool call, and where it falls among the conversation's other turns.
#[derive(Debug)]
struct ToolTurn {
    /// How many turn commands of the history came before it ([`is_turn`]).
    at: usize,
    /// How much of the model's text of the turn came before it, when the last of them is the
    /// model's text (which later text is appended to).
    offset: Option<usize>,
    turn: Value,
}

/// The history commands `getConversation` reads.
fn is_turn(command: &ShellCommand) -> bool {
    matches!(
        command,
        ShellCommand::Message { .. }
            | ShellCommand::Chat { .. }
            | ShellCommand::ChatText { .. }
            | ShellCommand::ChatEnd { .. }
    )
}

fn text_of(params: &Value, key: &str) -> Result<String, String> {
    params[key].as_str().map(str::to_owned).ok_or_else(|| format!("`{key}` (a string) is missing"))
}

fn arguments_of(params: &Value) -> Result<Map<String, Value>, String> {
    match &params["arguments"] {
        Value::Null => Ok(Map::new()),
        Value::Object(m) => Ok(m.clone()),
        _ => Err("`arguments` must be an object".into()),
    }
}

impl Controller {
    /// Carries out one runner request; its answer goes on its channel (now, or once a View
    /// it opened initialized).
    pub(super) fn on_test_request(&mut self, request: TestRequest) {
        let TestRequest { method, params, reply } = request;
        let outcome = match method.as_str() {
            "displayTestApp" => match self.display_test_app(&params) {
                // The answer comes when the View initialized (or went).
                Ok(view) => {
                    self.test.displayed.insert(view.clone());
                    self.test.waiting.insert(view, reply);
                    return;
                }
                Err(e) => Err(e),
            },
            "resetEnvironment" => self.reset_environment(&params),
            "getConversation" => Ok(self.conversation_record()),
            "getConversationContext" => Ok(self.conversation_context()),
            "changeHostContext" => self.change_host_context(&params),
            "confirmAction" => self.confirm_action(&params),
            "sendMessage" => self.send_message(&params),
            "callTool" => return self.test_call_tool(&params, reply),
            "readModelToolList" => Ok(self.model_tool_list()),
            "interact" => return self.interact(&params, reply),
            "inspectFrame" => return self.inspect_frame(&params, reply),
            "evaluateInView" => return self.evaluate_in_view(&params, reply),
            "readWindow" => return self.read_window(&params, reply),
            other => Err(format!("unknown method {other:?} (one of: {})", METHODS.join(", "))),
        };
        let _ = reply.send(outcome);
    }

    /// What the person sees of the window, as the shell reads it: the status line, where the
    /// keyboard is (and whether its focus shows), the open dialog, the welcome, the servers'
    /// cards, the composer, the last answer. A runner's check of what a person sees, as a
    /// browser automation would read the host page.
    /// With `screenshot` (an absolute path ending in `.png`), the window's picture is written
    /// there too, once the shell answered.
    fn read_window(&mut self, params: &Value, reply: oneshot::Sender<Result<Value, String>>) {
        let picture = match &params["screenshot"] {
            Value::Null => None,
            Value::String(p) if p.starts_with('/') && p.ends_with(".png") => Some(std::path::PathBuf::from(p)),
            _ => {
                let _ = reply.send(Err("`screenshot` must be an absolute path ending in .png".into()));
                return;
            }
        };
        let state = &mut self.test;
        state.window_reads.retain(|_, tx| !tx.is_closed());
        if state.window_reads.len() >= MAX_WINDOW_READS {
            let _ = reply.send(Err(format!("{MAX_WINDOW_READS} readWindow requests wait already")));
            return;
        }
        state.next_window_read += 1;
        let read = state.next_window_read;
        let (tx, rx) = oneshot::channel();
        state.window_reads.insert(read, tx);
        self.shell(ShellCommand::ReadWindow { read });
        let ui = self.ui.clone();
        tokio::spawn(async move {
            let mut answer = match tokio::time::timeout(WINDOW_READ, rx).await {
                Ok(Ok(window)) => Ok(window),
                _ => Err(format!("the window did not answer within {} s", WINDOW_READ.as_secs())),
            };
            if let (Ok(window), Some(path)) = (&mut answer, picture) {
                let (tx, rx) = oneshot::channel();
                let taken = match ui.send_event(UserEvent::Screenshot(path, tx)) {
                    Ok(()) => tokio::time::timeout(WINDOW_READ * 2, rx).await.map_err(|_| "no answer".to_owned()),
                    Err(()) => Err("the window is gone".to_owned()),
                };
                window["screenshot"] = match taken {
                    Ok(Ok(Ok(path))) => json!(path),
                    Ok(Ok(Err(e))) | Err(e) => json!({ "error": e }),
                    Ok(Err(_)) => json!({ "error": "no answer" }),
                };
            }
            let _ = reply.send(answer);
        });
    }

    /// The shell's answer to a `readWindow` (nothing when no runner asked for it).
    pub(super) fn window_read(&mut self, read: u64, window: Value) {
        if let Some(tx) = self.test.window_reads.remove(&read) {
            let _ = tx.send(window);
        }
    }

    /// A View that a runner waits for initialized: its answer.
    pub(super) fn test_view_initialized(&mut self, view: &str) {
        if let Some(reply) = self.test.waiting.remove(view) {
            let tool = self.views.get(view).map(|v| v.tool.clone()).unwrap_or_default();
            let _ = reply.send(Ok(json!({ "view": view, "tool": tool })));
        }
    }

    /// A View that a runner waits for went before it initialized.
    pub(super) fn test_view_gone(&mut self, view: &str, why: &str) {
        if let Some(reply) = self.test.waiting.remove(view) {
            let _ = reply.send(Err(format!("the View {view} did not initialize: {why}")));
        }
    }

    fn display_test_app(&mut self, params: &Value) -> Result<ViewId, String> {
        let tool = text_of(params, "tool")?;
        let arguments = arguments_of(params)?;
        let server = params["server"].as_str();
        let entry = self.servers.find_tool(server, &tool).map_err(|e| e.to_string())?;
        if !entry.ui.as_ref().is_ok_and(|u| u.resource_uri.is_some()) {
            return Err(format!("the tool {tool} has no UI"));
        }
        let view = self.views.next_id();
        self.open(server, &tool, arguments, Opening::Person).map_err(|e| e.to_string())?;
        Ok(view)
    }

    /// Closes the Views of the scope (every View, or those of `server` and/or `tool`) and
    /// refuses their open questions (every open question for the whole scope), as the person's
    /// closing would. A runner keeps its harness View by resetting another tool's Views.
    fn reset_environment(&mut self, params: &Value) -> Result<Value, String> {
        for key in ["server", "tool"] {
            if !params[key].is_null() && !params[key].is_string() {
                return Err(format!("`{key}` must be a string"));
            }
        }
        let (server, tool) = (params["server"].as_str(), params["tool"].as_str());
        let whole = server.is_none() && tool.is_none();
        let open = self.views.iter().filter(|(_, v)| v.phase.is_open());
        let mut views: Vec<ViewId> = open
            .filter(|(_, v)| server.is_none_or(|s| s == v.server) && tool.is_none_or(|t| t == v.tool))
            .map(|(id, _)| id.clone())
            .collect();
        // A View still preparing has no tool name yet: in scope only by its server.
        views.extend(
            self.views
                .pending_servers()
                .filter(|(_, s)| tool.is_none() && server.is_none_or(|server| server == *s))
                .map(|(id, _)| id.clone()),
        );
        views.sort_by_key(|v| (v.len(), v.clone()));
        let mut dialogs: Vec<u64> = self.questions.consent_dialogs();
        dialogs.retain(|d| whole || self.questions.consent_owner(*d).is_some_and(|owner| views.contains(&owner)));
        dialogs.sort_unstable();
        for dialog in &dialogs {
            self.on_shell(ShellMessage::Answer { dialog: *dialog, accepted: false, remember: false });
            self.shell(ShellCommand::Dismiss { dialog: *dialog });
        }
        for view in &views {
            self.test.displayed.remove(view);
            self.on_shell(ShellMessage::Close { view: view.clone() });
        }
        Ok(json!({ "closedViews": views, "refusedDialogs": dialogs }))
    }

    /// The conversation, each turn once and in order: the person's (`user`), the model's
    /// (`assistant`, its text whole), an App's message (`app`, with its View when it is open in
    /// this run), and each tool call of the model with its result (`tool`).
    fn conversation_record(&self) -> Value {
        let tools = self.test.tool_turns.lock().unwrap_or_else(|e| e.into_inner());
        conversation_turns(self.shell_page.history(), &tools)
    }

    /// The model's call of `entry` is about to be carried out: a runner reads it and its result
    /// as a turn. Returns where the call's outcome goes now (through here to `reply`).
    pub(super) fn test_tool_turn(
        &mut self,
        call: &str,
        entry: &ToolEntry,
        arguments: &Map<String, Value>,
        reply: oneshot::Sender<ToolOutcome>,
    ) -> oneshot::Sender<ToolOutcome> {
        if self.options.automation.test_requests.is_none() {
            return reply;
        }
        let turns: Vec<&ShellCommand> = self.shell_page.history().iter().filter(|c| is_turn(c)).collect();
        let offset = match turns.last() {
            Some(ShellCommand::ChatText { text }) => Some(text.len()),
            _ => None,
        };
        let turn = json!({ "role": "tool", "call": call, "server": entry.server, "name": entry.name(),
                           "arguments": arguments });
        let list = self.test.tool_turns.clone();
        let index = {
            let mut list = list.lock().unwrap_or_else(|e| e.into_inner());
            list.push(ToolTurn { at: turns.len(), offset, turn });
            list.len() - 1
        };
        let (tx, rx) = oneshot::channel::<ToolOutcome>();
        tokio::spawn(async move {
            // Dropped unanswered: the call is cancelled, as it would have been.
            let Ok(outcome) = rx.await else { return };
            if let Some(t) = list.lock().unwrap_or_else(|e| e.into_inner()).get_mut(index) {
                t.turn["result"] = json!({ "content": outcome.content, "structuredContent": outcome.structured,
                                           "isError": outcome.is_error });
            }
            let _ = reply.send(outcome);
        });
        tx
    }

    /// Each View's model context, as last set (none once cleared).
    fn conversation_context(&self) -> Value {
        let mut latest: Vec<(String, Value)> = Vec::new();
        for command in self.shell_page.history() {
            if let ShellCommand::Context { view, from, text } = command {
                latest.retain(|(v, _)| v != view);
                if let Some(text) = text {
                    latest.push((view.clone(), json!({ "view": view, "from": from, "text": text })));
                }
            }
        }
        json!({ "contexts": latest.into_iter().map(|(_, c)| c).collect::<Vec<_>>() })
    }

    /// Changes the host context of one View (`view`) or of every open one.
    fn change_host_context(&mut self, params: &Value) -> Result<Value, String> {
        let context = params.get("context").filter(|c| c.is_object()).ok_or("`context` (an object) is missing")?;
        serde_json::from_value::<crate::protocol::HostContext>(context.clone())
            .map_err(|e| format!("not a host context: {e}"))?;
        let views: Vec<ViewId> = match params["view"].as_str() {
            Some(v) if self.views.contains_key(v) => vec![v.to_owned()],
            Some(v) => return Err(format!("no View {v}")),
            None => self.views.iter().filter(|(_, v)| v.phase.is_open()).map(|(id, _)| id.clone()).collect(),
        };
        for view in &views {
            self.on_shell(ShellMessage::DevContext { view: view.clone(), context: context.clone() });
        }
        Ok(json!({ "views": views }))
    }

    /// Answers the oldest open consent dialog (or `dialog`) as the person would.
    fn confirm_action(&mut self, params: &Value) -> Result<Value, String> {
        let accept = params["accept"].as_bool().unwrap_or(true);
        let dialog = match params["dialog"].as_u64() {
            Some(d) if self.questions.consent_owner(d).is_some() => d,
            Some(d) => return Err(format!("no dialog {d} is open")),
            None => self.questions.consent_dialogs().into_iter().min().ok_or("no consent dialog is open")?,
        };
        let view = self.questions.consent_owner(dialog);
        self.on_shell(ShellMessage::Answer { dialog, accepted: accept, remember: false });
        self.shell(ShellCommand::Dismiss { dialog });
        Ok(json!({ "dialog": dialog, "view": view, "accepted": accept }))
    }

    fn send_message(&mut self, params: &Value) -> Result<Value, String> {
        let text = text_of(params, "text")?;
        if !self.conversation.is_on() {
            return Err("no model is configured: the conversation takes no message (run with --model)".into());
        }
        self.on_shell(ShellMessage::Prompt { text, attach: Vec::new(), edit: false });
        Ok(json!({}))
    }

    /// Calls a server's tool as the host; answers with its result.
    fn test_call_tool(&mut self, params: &Value, reply: oneshot::Sender<Result<Value, String>>) {
        let (tool, arguments) = match (text_of(params, "name"), arguments_of(params)) {
            (Ok(t), Ok(a)) => (t, a),
            (Err(e), _) | (_, Err(e)) => {
                let _ = reply.send(Err(e));
                return;
            }
        };
        let entry = match self.servers.find_tool(params["server"].as_str(), &tool) {
            Ok(e) => e,
            Err(e) => {
                let _ = reply.send(Err(e.to_string()));
                return;
            }
        };
        let (servers, trace) = (self.servers.clone(), self.trace.clone());
        tokio::spawn(async move {
            let outcome = super::views::call_tool_traced(&servers, &trace, None, &entry.server, &tool, arguments).await;
            let _ = reply.send(outcome.map_err(|e| e.to_string()));
        });
    }

    /// The tools a model would be offered: every server tool whose visibility includes the model.
    fn model_tool_list(&self) -> Value {
        let tools: Vec<Value> = self
            .servers
            .tools()
            .into_iter()
            .filter(|t| t.ui.as_ref().map_or(true, |u| u.visibility.model))
            .map(|t| json!({ "server": t.server, "name": t.name() }))
            .collect();
        json!({ "tools": tools })
    }

    /// One acting step of an interaction session in a View (`{"view", "step"}`): a click or keys
    /// with real input events, a text it must show, a screenshot.
    fn interact(&mut self, params: &Value, reply: oneshot::Sender<Result<Value, String>>) {
        let view = match params["view"].as_str() {
            Some(v) if self.views.contains_key(v) => v.to_owned(),
            Some(v) => {
                let _ = reply.send(Err(format!("no View {v}")));
                return;
            }
            None => match self.views.keys().next() {
                Some(v) => v.clone(),
                None => {
                    let _ = reply.send(Err("no View is open".into()));
                    return;
                }
            },
        };
        let pictures = std::env::temp_dir();
        let script = json!({ "steps": [params["step"].clone()] }).to_string();
        let step = match Interaction::parse("interact", &script, &pictures) {
            Ok(s) => s,
            Err(e) => {
                let _ = reply.send(Err(e));
                return;
            }
        };
        let ui = self.ui.clone();
        tokio::spawn(async move {
            let outcome =
                interaction::act(&step, &view, &ui).await.map(|detail| json!({ "view": view, "detail": detail }));
            let _ = reply.send(outcome);
        });
    }

    /// The View a request names (`view`), else the first open one.
    fn named_view(&self, params: &Value) -> Result<ViewId, String> {
        match params["view"].as_str() {
            Some(v) if self.views.get(v).is_some_and(|v| v.phase.is_open()) => Ok(v.to_owned()),
            Some(v) => Err(format!("no View {v} is open")),
            None => self
                .views
                .iter()
                .filter(|(_, v)| v.phase.is_open())
                .map(|(id, _)| id.clone())
                .min_by_key(|v| (v.len(), v.clone()))
                .ok_or_else(|| "no View is open".into()),
        }
    }

    /// The iframes of the document that holds the View's frame: its proxy page (the View's
    /// `<iframe sandbox>` is there; the top document holds the proxy's frame, given as `top`).
    fn inspect_frame(&mut self, params: &Value, reply: oneshot::Sender<Result<Value, String>>) {
        let view = match self.named_view(params) {
            Ok(v) => v,
            Err(e) => {
                let _ = reply.send(Err(e));
                return;
            }
        };
        let ui = self.ui.clone();
        tokio::spawn(async move {
            let outcome = ask_window(&ui, |done| InputOp::InspectFrame { view: view.clone(), done })
                .await
                .and_then(|answer| frame_report(&view, &answer));
            let _ = reply.send(outcome);
        });
    }

    /// Test only: a runner's script evaluated in the frame of a View the runner displayed; its
    /// value as JSON (a promise's once settled). The value is the View's word, like anything
    /// its frame computes: it is bounded and parsed, and answers this request alone.
    fn evaluate_in_view(&mut self, params: &Value, reply: oneshot::Sender<Result<Value, String>>) {
        let checked = text_of(params, "view").and_then(|view| {
            let script = text_of(params, "script")?;
            if script.len() > MAX_SCRIPT_BYTES {
                return Err(format!("the script is over {MAX_SCRIPT_BYTES} bytes"));
            }
            if !self.test.displayed.contains(&view) {
                return Err(format!(
                    "the View {view} was not displayed by this runner (displayTestApp): only those are evaluated in"
                ));
            }
            if !self.views.get(&view).is_some_and(|v| v.phase.is_open()) {
                return Err(format!("the View {view} is not open"));
            }
            Ok((view, script))
        });
        let (view, script) = match checked {
            Ok(c) => c,
            Err(e) => {
                let _ = reply.send(Err(e));
                return;
            }
        };
        let ui = self.ui.clone();
        tokio::spawn(async move {
            let asked = ask_window(&ui, |done| InputOp::Evaluate { view: view.clone(), script, done });
            let outcome = match tokio::time::timeout(EVALUATE_WAIT, asked).await {
                Ok(answer) => answer.and_then(|a| evaluation_value(&a)).map(|value| json!({ "value": value })),
                Err(_) => Err(format!("the View {view} did not answer in {} s", EVALUATE_WAIT.as_secs())),
            };
            let _ = reply.send(outcome);
        });
    }
}

/// Asks the window (the UI thread) and waits for its answer.
async fn ask_window(
    ui: &super::window::Ui,
    op: impl FnOnce(oneshot::Sender<Result<String, String>>) -> InputOp,
) -> Result<String, String> {
    let (tx, rx) = oneshot::channel();
    ui.send_event(UserEvent::Input(op(tx))).map_err(|_| "the window is gone".to_owned())?;
    rx.await.unwrap_or_else(|_| Err("the window dropped the request".into()))
}

/// `inspectFrame`'s answer from the extension's: the proxy page's iframes, and the top document's.
fn frame_report(view: &str, answer: &str) -> Result<Value, String> {
    let answer: Value = serde_json::from_str(answer).map_err(|e| format!("the View's page answered no JSON: {e}"))?;
    if let Some(e) = answer["error"].as_str() {
        return Err(format!("the View {view}: {e}"));
    }
    let holder = &answer["holder"];
    Ok(json!({ "view": view, "total": holder["total"], "sandboxed": holder["sandboxed"],
               "firstSandbox": holder["firstSandbox"], "origin": holder["origin"], "top": answer["top"] }))
}

/// An evaluation's answer from the extension: `v` and the value's JSON (nothing: undefined,
/// read as null), or `e` and why it failed.
fn evaluation_value(answer: &str) -> Result<Value, String> {
    match answer.split_at_checked(1) {
        Some(("v", "")) => Ok(Value::Null),
        Some(("v", json)) => serde_json::from_str(json).map_err(|e| format!("the View's value is not JSON: {e}")),
        Some(("e", why)) => Err(why.to_owned()),
        _ => Err("the View's page gave no answer (is the web process extension loaded?)".into()),
    }
}

/// The turns of `history`, with the model's tool calls (`tools`) where they fell.
fn conversation_turns(history: &[ShellCommand], tools: &[ToolTurn]) -> Value {
    let mut turns: Vec<Value> = Vec::new();
    // The model's answer under way (its text grows until its turn ends).
    let mut answering: Option<usize> = None;
    // An App's message is listed from its card; the same message taken as a turn of the
    // conversation (with a model) is not listed again.
    let mut unmatched: HashMap<&str, usize> = HashMap::new();
    let tool_turn = |turns: &mut Vec<Value>, answering: &mut Option<usize>, at: usize| {
        // How much of the answer's text the calls before split off.
        let mut consumed = 0;
        for t in tools.iter().filter(|t| t.at == at) {
            // The answer's text after the call is another piece of the answer.
            if let (Some(i), Some(offset)) = (*answering, t.offset) {
                let text = turns[i]["text"].as_str().unwrap_or_default().to_owned();
                let here = offset.wrapping_sub(consumed);
                if offset >= consumed && here < text.len() && text.is_char_boundary(here) {
                    turns[i]["text"] = json!(text[..here]);
                    turns.push(t.turn.clone());
                    turns.push(json!({ "role": "assistant", "text": text[here..] }));
                    *answering = Some(turns.len() - 1);
                    consumed = offset;
                    continue;
                }
            }
            turns.push(t.turn.clone());
            *answering = None;
        }
    };
    let mut count = 0;
    for (at, command) in history.iter().filter(|c| is_turn(c)).enumerate() {
        tool_turn(&mut turns, &mut answering, at);
        count = at + 1;
        match command {
            ShellCommand::Message { view, from, text, .. } => {
                *unmatched.entry(from.as_str()).or_default() += 1;
                turns.push(json!({ "role": "app", "from": from, "view": view, "text": text }));
            }
            ShellCommand::Chat { from: Some(app), text, .. } => match unmatched.get_mut(app.as_str()) {
                Some(n) if *n > 0 => *n -= 1,
                // A reopened conversation's App turn: its View is not of this run.
                _ => turns.push(json!({ "role": "app", "from": app, "text": text })),
            },
            ShellCommand::Chat { role, from: None, text } => {
                answering = None;
                turns.push(json!({ "role": role, "text": text }));
            }
            ShellCommand::ChatText { text } => match answering {
                Some(i) => {
                    let whole = format!("{}{text}", turns[i]["text"].as_str().unwrap_or_default());
                    turns[i]["text"] = json!(whole);
                }
                None => {
                    turns.push(json!({ "role": "assistant", "text": text }));
                    answering = Some(turns.len() - 1);
                }
            },
            ShellCommand::ChatEnd { error } => {
                if let Some(error) = error {
                    match answering {
                        Some(i) => turns[i]["error"] = json!(error),
                        None => turns.push(json!({ "role": "assistant", "text": "", "error": error })),
                    }
                }
                answering = None;
            }
            _ => {}
        }
    }
    tool_turn(&mut turns, &mut answering, count);
    json!({ "messages": turns })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(role: &str, from: Option<&str>, text: &str) -> ShellCommand {
        ShellCommand::Chat { role: role.into(), from: from.map(str::to_owned), text: text.into() }
    }

    fn text(t: &str) -> ShellCommand {
        ShellCommand::ChatText { text: t.into() }
    }

    /// Each turn once with its own role: the model's answer is not glued onto the prompt, an
    /// App's message (its card, then its turn to the model) is listed once, with its View, and
    /// a tool call falls between the answer's text before and after it.
    #[test]
    fn each_turn_is_listed_once_with_its_role_in_order() {
        let app = "get-time · basic";
        let history = vec![
            ShellCommand::Message { view: "v1".into(), from: app.into(), role: "user".into(), text: "hi".into() },
            chat("user", Some(app), "hi"),
            text("Noted"),
            ShellCommand::ChatEnd { error: None },
            chat("user", None, "what time is it?"),
            // The answer's pieces before and after the call, kept as one command.
            text("Calling get-time.The tool answered: noon"),
            ShellCommand::ChatEnd { error: None },
            chat("user", None, "again"),
            ShellCommand::ChatEnd { error: Some("the model failed".into()) },
        ];
        let tools = vec![ToolTurn {
            at: 6,
            offset: Some("Calling get-time.".len()),
            turn: json!({"role": "tool", "name": "get-time", "result": {"isError": false}}),
        }];
        let record = conversation_turns(&history, &tools);
        let turns = record["messages"].as_array().unwrap();
        let said: Vec<(&str, &str)> =
            turns.iter().map(|t| (t["role"].as_str().unwrap(), t["text"].as_str().unwrap_or_default())).collect();
        assert_eq!(
            said,
            [
                ("app", "hi"),
                ("assistant", "Noted"),
                ("user", "what time is it?"),
                ("assistant", "Calling get-time."),
                ("tool", ""),
                ("assistant", "The tool answered: noon"),
                ("user", "again"),
                ("assistant", ""),
            ],
            "{record:#}"
        );
        assert_eq!(turns[0]["view"], "v1");
        assert_eq!(turns[4]["name"], "get-time");
        assert_eq!(turns[7]["error"], "the model failed");
    }

    /// A reopened conversation's App turn has no card of this run: listed once, without a View.
    #[test]
    fn a_reopened_app_turn_is_listed_without_a_view() {
        let record = conversation_turns(&[chat("user", Some("app · s"), "stored")], &[]);
        assert_eq!(record["messages"], json!([{"role": "app", "from": "app · s", "text": "stored"}]));
    }

    #[test]
    fn an_evaluation_answer_is_a_value_or_why_not() {
        assert_eq!(evaluation_value("v"), Ok(Value::Null));
        assert_eq!(evaluation_value(r#"v{"a":[1]}"#), Ok(json!({"a": [1]})));
        assert_eq!(evaluation_value("ethe script threw: x"), Err("the script threw: x".into()));
        assert!(evaluation_value("v{not json").is_err());
        assert!(evaluation_value("").is_err());
    }
}
