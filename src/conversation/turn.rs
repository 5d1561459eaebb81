//! The loop: one turn after another, each a run of model requests and tool calls until the
//! model answers without calling a tool.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::handle::{stopped, Stop};
use super::messages::Contexts;
use super::request::server_labels;
use super::{
    app_message_for_model, store, tools, words, CallId, Input, InstructionsSource, ModelTools, Names, Output, ServerId,
    ToolOutcome, Trust, FIND_TOOLS, MAX_CALLS_PER_ANSWER, MAX_STEPS, STOPPED,
};
use crate::model::{partial_json, ChatItem, Model, ModelEvent, ModelRequest, ToolCall};
use crate::server::set::ToolEntry;

/// At most one partial input per call this often (the View re-renders each one).
const PARTIAL_EVERY: Duration = Duration::from_millis(50);

pub(super) struct Conversation {
    pub(super) model: Arc<dyn Model>,
    pub(super) tools: Arc<dyn Fn() -> Vec<ToolEntry> + Send + Sync>,
    pub(super) out: mpsc::UnboundedSender<Output>,
    pub(super) items: Vec<ChatItem>,
    pub(super) store: Option<store::Writer>,
    pub(super) stop: Arc<Stop>,
    /// The stop count when the turn began.
    pub(super) since: u64,
    /// View -> its App's latest model context.
    pub(super) context: Contexts,
    pub(super) next_call: u64,
    /// The model-facing tool names given in this conversation.
    pub(super) names: Names,
    /// The servers whose data reached the model, with their labels.
    pub(super) seen: BTreeMap<ServerId, String>,
    /// The servers' modes and what the person allowed.
    pub(super) trust: Arc<std::sync::Mutex<Trust>>,
    /// Where the servers' instructions come from.
    pub(super) instructions: Option<InstructionsSource>,
    /// Tools the model found or called, most recent first (offered when not every tool can be).
    pub(super) found: Vec<String>,
    /// The App tools offered in the last request (the model is told when they go).
    pub(super) app_names: BTreeSet<String>,
}

impl Conversation {
    pub(super) async fn run(mut self, mut inbox: mpsc::UnboundedReceiver<Input>) {
        // Turns that come while the model answers wait in the inbox.
        while let Some(input) = inbox.recv().await {
            let (text, from_app) = match input {
                Input::Prompt(text) => (text, None),
                Input::Retry => match self.rewind_to_last_turn(true) {
                    Some(turn) => {
                        let (text, from_app) = match &turn {
                            ChatItem::User { text, from_app } => (text.clone(), from_app.clone()),
                            _ => (String::new(), None),
                        };
                        let _ = self.out.send(Output::UserTurn { text, from_app });
                        self.turn().await;
                        continue;
                    }
                    None => {
                        let _ = self.out.send(Output::TurnEnded {
                            text: String::new(),
                            error: Some("there is no answer to retry".into()),
                        });
                        continue;
                    }
                },
                Input::SwitchModel(model) => {
                    tracing::info!("the conversation goes on with {}", model.0.describe());
                    self.model = model.0;
                    continue;
                }
                Input::Edit(text) => {
                    self.rewind_to_last_turn(false);
                    (text, None)
                }
                Input::AppMessage { app, text, server, .. } => {
                    if let Some(server) = server {
                        let entries = (self.tools)();
                        let label = server_labels(&entries).get(server.server.as_str()).map(|l| (*l).to_owned());
                        self.saw(server.clone(), label.as_deref().unwrap_or(&server.server));
                    }
                    (text, Some(app))
                }
                Input::WithServerData { text, servers } => {
                    for (server, label) in servers {
                        self.saw(server, &label);
                    }
                    (text, None)
                }
            };
            let _ = self.out.send(Output::UserTurn { text: text.clone(), from_app: from_app.clone() });
            // The model is told who said it.
            let text = match &from_app {
                Some(app) => app_message_for_model(app, &text),
                None => text,
            };
            self.push(ChatItem::User { text, from_app });
            self.turn().await;
            if self.out.is_closed() {
                return;
            }
        }
    }

    /// Goes back to the person's last turn: keeping it (`keep`, a retry) or not (an edit). The
    /// turn, if there is one.
    fn rewind_to_last_turn(&mut self, keep: bool) -> Option<ChatItem> {
        let at = self.items.iter().rposition(|i| matches!(i, ChatItem::User { .. }))?;
        let to = if keep { at + 1 } else { at };
        let turn = self.items[at].clone();
        self.items.truncate(to);
        self.keep(&store::Record::Rewind { to });
        Some(turn)
    }

    /// Adds `item` to the conversation and its file.
    fn push(&mut self, item: ChatItem) {
        self.keep(&store::Record::Item { item: item.clone() });
        self.items.push(item);
    }

    pub(super) fn keep(&mut self, record: &store::Record) {
        if let Some(store) = &mut self.store {
            if let Err(e) = store.write(record) {
                tracing::warn!(conversation = store.id(), "the conversation is no longer saved: {e}");
                self.store = None;
            }
        }
    }

    /// The server `server` (known to the person as `label`: the server's label, never an App's,
    /// which the host joined and checked already) has had its data reach the model.
    fn saw(&mut self, server: ServerId, label: &str) {
        if self.seen.contains_key(&server) {
            return;
        }
        let label = crate::consent::one_line_max(label, 80);
        self.keep(&store::Record::Seen { server: server.clone(), label: label.clone() });
        self.seen.insert(server, label);
    }

    async fn turn(&mut self) {
        let mut said = String::new();
        self.since = self.stop.count();
        for step in 0..MAX_STEPS {
            let entries = (self.tools)();
            let (offered, searching) = self.offer(&entries);
            // App tools offered last time and gone now: the model is told, once.
            let apps: BTreeSet<String> =
                offered.all().filter(|(_, e)| e.app_view.is_some()).map(|(n, _)| n.clone()).collect();
            let gone: Vec<String> = self.app_names.difference(&apps).cloned().collect();
            self.app_names = apps;
            let contexts = self.contexts();
            // What the Apps show reaches the model now: their servers are seen.
            let labels = server_labels(&entries);
            for c in &contexts {
                if let Some(server) = &c.server {
                    let label = labels.get(server.server.as_str()).copied().unwrap_or(&server.server).to_owned();
                    self.saw(server.clone(), &label);
                }
            }
            let system = self.system(&contexts, searching, &gone);
            let request = ModelRequest::new(system, self.items.clone(), offered.specs.clone());
            let bytes = request.system.len()
                + serde_json::to_string(&request.items).map_or(0, |t| t.len())
                + request
                    .tools
                    .iter()
                    .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len())
                    .sum::<usize>();
            let _ = self.out.send(Output::Request {
                step,
                items: request.items.len(),
                tools: offered.specs.iter().map(|t| t.name.clone()).collect(),
                context: contexts,
                bytes,
                tokens: bytes.div_ceil(4),
                known_tools: offered.all().count(),
            });
            let answer = match self.answer(&offered, request).await {
                Ok(answer) => answer,
                Err(e) => {
                    let _ = self.out.send(Output::TurnEnded { text: said, error: Some(e) });
                    return;
                }
            };
            said.push_str(&answer.text);
            let calls: Vec<ToolCall> = answer.calls.iter().map(|c| c.call.clone()).collect();
            // An empty answer is not kept: both APIs refuse an assistant turn with nothing in it.
            if !answer.text.is_empty() || !calls.is_empty() {
                self.push(ChatItem::Assistant { text: answer.text, tool_calls: calls });
            }
            if answer.calls.is_empty() {
                let _ = self.out.send(Output::TurnEnded { text: said, error: None });
                return;
            }
            for call in answer.calls {
                let outcome = self.carry_out(&offered, call.ours.clone(), &call).await;
                if let Some(entry) = offered.get(&call.call.name).filter(|_| outcome.from_server) {
                    let label = labels.get(entry.server.as_str()).copied().unwrap_or(&entry.server).to_owned();
                    self.saw(ServerId::of(entry), &label);
                }
                if let (Some(entry), Ok(arguments)) = (offered.get(&call.call.name), &call.arguments) {
                    let record = store::Record::Call {
                        call_id: call.call.id.clone(),
                        server: entry.server.clone(),
                        tool: entry.name().to_owned(),
                        arguments: arguments.clone(),
                        result: outcome.result.clone(),
                    };
                    self.keep(&record);
                }
                self.push(ChatItem::ToolResult {
                    call_id: call.call.id.clone(),
                    content: outcome.content,
                    structured: outcome.structured,
                    is_error: outcome.is_error,
                });
            }
            if self.stop.count() != self.since {
                let _ = self.out.send(Output::TurnEnded { text: said, error: Some(STOPPED.into()) });
                return;
            }
        }
        let error = format!("the model kept calling tools for {MAX_STEPS} steps; the turn was ended");
        let _ = self.out.send(Output::TurnEnded { text: said, error: Some(error) });
    }

    /// One model request, streamed: its text and its tool calls (the host hears of each call
    /// as it starts and as its arguments grow).
    async fn answer(&mut self, offered: &ModelTools, request: ModelRequest) -> Result<Answer, String> {
        let mut events = self.model.stream(request);
        let mut answer = Answer::default();
        // Per model index: our call, its arguments so far, the last partial sent and when.
        let mut open: BTreeMap<usize, Pending> = BTreeMap::new();
        let (stop, since) = (self.stop.clone(), self.since);
        loop {
            let event = tokio::select! {
                event = events.recv() => event,
                () = stopped(&stop, since) => return Err(STOPPED.into()),
            };
            let Some(event) = event else {
                return Err("the model's answer ended without its end".into());
            };
            match event.map_err(|e| e.to_string())? {
                ModelEvent::Text(text) => {
                    answer.text.push_str(&text);
                    let _ = self.out.send(Output::Text(text));
                }
                ModelEvent::ToolCallStart { index, id, name } => {
                    let ours = format!("call-{}", self.next_call);
                    self.next_call += 1;
                    let within = open.len() < MAX_CALLS_PER_ANSWER;
                    if let Some(entry) = offered.get(&name).filter(|_| within) {
                        let _ = self.out.send(Output::ToolStarted { call: ours.clone(), entry: entry.clone() });
                    }
                    open.insert(index, Pending { ours, id, name, arguments: String::new(), sent: None, within });
                }
                ModelEvent::ToolCallArguments { index, fragment } => {
                    let Some(p) = open.get_mut(&index) else {
                        return Err("the model sent arguments for a call it did not start".into());
                    };
                    p.arguments.push_str(&fragment);
                    if offered.get(&p.name).is_none() || p.sent.is_some_and(|t| t.elapsed() < PARTIAL_EVERY) {
                        continue;
                    }
                    if let Some(arguments) = partial_json::complete(&p.arguments) {
                        p.sent = Some(Instant::now());
                        let _ = self.out.send(Output::ToolPartial { call: p.ours.clone(), arguments });
                    }
                }
                ModelEvent::End { .. } => break,
            }
        }
        for (_, p) in open {
            let arguments = if p.arguments.trim().is_empty() {
                Ok(Map::new())
            } else {
                match serde_json::from_str::<Value>(&p.arguments) {
                    Ok(Value::Object(map)) => Ok(map),
                    Ok(_) => Err("its arguments are not a JSON object".to_owned()),
                    Err(e) => Err(format!("its arguments are not valid JSON ({e})")),
                }
            };
            let call = ToolCall {
                id: p.id,
                name: p.name,
                arguments: arguments.clone().map(Value::Object).unwrap_or_else(|_| json!({})),
            };
            answer.calls.push(MadeCall { ours: p.ours, call, arguments, beyond_bound: !p.within });
        }
        Ok(answer)
    }

    async fn carry_out(&mut self, offered: &ModelTools, ours: CallId, call: &MadeCall) -> ToolOutcome {
        let name = &call.call.name;
        if self.stop.count() != self.since {
            return ToolOutcome::error("the person stopped the turn: the call was not made");
        }
        if name == FIND_TOOLS && offered.specs.iter().any(|s| s.name == FIND_TOOLS) {
            return match &call.arguments {
                Ok(arguments) => self.find_tools(offered, arguments),
                Err(reason) => ToolOutcome::error(format!("the call was not made: {reason}")),
            };
        }
        if call.beyond_bound {
            let reason = format!("more than {MAX_CALLS_PER_ANSWER} tool calls in one answer: this one was not made");
            let _ =
                self.out.send(Output::ToolRefused { call: ours.clone(), name: name.clone(), reason: reason.clone() });
            return ToolOutcome::error(reason);
        }
        let Some(entry) = offered.get(name) else {
            let reason = match self.names.owner(name) {
                Some(owner) => format!(
                    "the tool {name:?} (the tool {:?} of the server {:?}) is not available now",
                    owner.tool, owner.server.server
                ),
                None => format!("there is no tool {name:?} (the tools are named SERVER__TOOL)"),
            };
            let _ =
                self.out.send(Output::ToolRefused { call: ours.clone(), name: name.clone(), reason: reason.clone() });
            return ToolOutcome::error(reason);
        };
        let arguments = match &call.arguments {
            Ok(arguments) => arguments.clone(),
            Err(reason) => {
                let _ = self.out.send(Output::ToolRefused {
                    call: ours.clone(),
                    name: name.clone(),
                    reason: reason.clone(),
                });
                return ToolOutcome::error(format!("the call was not made: {reason}"));
            }
        };
        // A tool the model used stays offered when not every tool can be.
        self.found.retain(|f| f != name);
        self.found.insert(0, name.clone());
        let question = self.trust.lock().unwrap_or_else(|e| e.into_inner()).question(entry, &self.seen);
        let (reply, outcome) = oneshot::channel();
        let _ =
            self.out.send(Output::ToolReady { call: ours.clone(), entry: entry.clone(), arguments, question, reply });
        let stop = self.stop.clone();
        let mut outcome = tokio::select! {
            outcome = outcome => outcome.unwrap_or_else(|_| ToolOutcome::error("the call was cancelled")),
            () = stopped(&stop, self.since) => ToolOutcome::error("the person stopped the turn before the call's outcome came"),
        };
        if outcome.from_server {
            // The result is the server's words, unquoted: a copy of the host's markers in it is
            // defused, so the host's note below is the only one.
            for block in &mut outcome.content {
                if let Some(Value::String(text)) = block.get_mut("text") {
                    if let std::borrow::Cow::Owned(defused) = words::defuse(text) {
                        *text = defused;
                    }
                }
            }
        }
        if !outcome.is_error {
            if let Some(reason) = tools::output_mismatch(&entry.tool, outcome.structured.as_ref()) {
                let _ = self.out.send(Output::Flagged { call: ours, reason: reason.clone() });
                outcome.content.push(json!({"type": "text", "text": words::host_note(&reason)}));
            }
        }
        outcome
    }
}

#[derive(Default)]
struct Answer {
    text: String,
    calls: Vec<MadeCall>,
}

struct MadeCall {
    ours: CallId,
    call: ToolCall,
    arguments: Result<Map<String, Value>, String>,
    /// Past [`MAX_CALLS_PER_ANSWER`]: answered with an error, not made.
    beyond_bound: bool,
}

struct Pending {
    ours: CallId,
    id: String,
    name: String,
    arguments: String,
    sent: Option<Instant>,
    /// Started within [`MAX_CALLS_PER_ANSWER`] (the host heard of it).
    within: bool,
}
