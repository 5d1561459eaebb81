//! The test interface for conformance runners: the shape the MCP Apps conformance work proposes
//! a host offer (`HostTestInterface` of ext-apps issue #743: display a test App, reset, read the
//! conversation and the model context, change the host context, confirm an action, send a
//! message, call a tool), plus `readModelToolList` and `interact` (a real click or keys in a
//! View, `super::interaction`). A runner drives it through `run --test-interface` (JSON lines on
//! stdin and stdout) or the embedding API ([`crate::host::TestInterface`]).
//!
//! Every request goes the way the person's action would (a tool picked, a dialog answered, a
//! prompt sent) and is answered on its own channel; nothing here reaches past the app's rules.

use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::interaction::{self, Interaction};
use super::shell::{ShellCommand, ShellMessage};
use super::{Controller, Opening};
use crate::bridge::ViewId;

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
];

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

/// Runner requests waiting on a View: its id, and the answer once it initialized.
pub(super) type Waiting = std::collections::HashMap<ViewId, oneshot::Sender<Result<Value, String>>>;

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
                    self.test_waiting.insert(view, reply);
                    return;
                }
                Err(e) => Err(e),
            },
            "resetEnvironment" => Ok(self.reset_environment()),
            "getConversation" => Ok(self.conversation_record()),
            "getConversationContext" => Ok(self.conversation_context()),
            "changeHostContext" => self.change_host_context(&params),
            "confirmAction" => self.confirm_action(&params),
            "sendMessage" => self.send_message(&params),
            "callTool" => return self.test_call_tool(&params, reply),
            "readModelToolList" => Ok(self.model_tool_list()),
            "interact" => return self.interact(&params, reply),
            other => Err(format!("unknown method {other:?} (one of: {})", METHODS.join(", "))),
        };
        let _ = reply.send(outcome);
    }

    /// A View that a runner waits for initialized: its answer.
    pub(super) fn test_view_initialized(&mut self, view: &str) {
        if let Some(reply) = self.test_waiting.remove(view) {
            let tool = self.views.get(view).map(|v| v.tool.clone()).unwrap_or_default();
            let _ = reply.send(Ok(json!({ "view": view, "tool": tool })));
        }
    }

    /// A View that a runner waits for went before it initialized.
    pub(super) fn test_view_gone(&mut self, view: &str, why: &str) {
        if let Some(reply) = self.test_waiting.remove(view) {
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

    /// Closes every View and refuses every open question, as the person's closing would.
    fn reset_environment(&mut self) -> Value {
        let dialogs = self.questions.consent_dialogs();
        for dialog in &dialogs {
            self.on_shell(ShellMessage::Answer { dialog: *dialog, accepted: false, remember: false });
            self.shell(ShellCommand::Dismiss { dialog: *dialog });
        }
        let views: Vec<ViewId> = self.views.keys().chain(self.views.pending_ids()).cloned().collect();
        for view in &views {
            self.on_shell(ShellMessage::Close { view: view.clone() });
        }
        json!({ "closedViews": views, "refusedDialogs": dialogs })
    }

    /// The conversation as the person sees it: each App's message, and each turn of the person,
    /// an App or the model (its text whole).
    fn conversation_record(&self) -> Value {
        let mut turns: Vec<Value> = Vec::new();
        for command in self.shell_page.history() {
            match command {
                ShellCommand::Message { view, from, role, text } => {
                    turns.push(json!({ "role": role, "from": from, "view": view, "text": text }))
                }
                ShellCommand::Chat { role, from, text } => {
                    turns.push(json!({ "role": role, "from": from, "text": text }))
                }
                ShellCommand::ChatText { text } => {
                    if let Some(Value::String(t)) = turns.last_mut().and_then(|t| t.get_mut("text")) {
                        t.push_str(text);
                    }
                }
                _ => {}
            }
        }
        json!({ "messages": turns })
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
}
