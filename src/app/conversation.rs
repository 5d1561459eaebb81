//! The conversation in the window (see `crate::conversation` for the loop itself): the turns in
//! the stream, a UI tool's View mounted at its call as soon as the model names the tool (it gets
//! `tool-input-partial` while the arguments stream), the person asked before a tool that may
//! write runs, and the Apps' messages and model context sent on to the model.

use tokio::sync::watch;

use super::*;
use crate::conversation::store::Stored;

mod app_tools;
mod commands;
mod stored;
use crate::conversation::trust::CallReason;
use crate::conversation::{CallId, ConversationHandle, Input, Output, Question, ServerId, ToolOutcome};
pub(super) use app_tools::AppTools;

/// The most partial inputs a View gets per second while the model writes (each re-renders it).
const PARTIAL_GAP: Duration = Duration::from_millis(50);
/// A model's call made before its View was up waits this long for the View to show its result.
const VIEW_WAIT: Duration = Duration::from_secs(30);

/// A model's call to a UI tool whose View is open before the call is made.
struct DeferredCall {
    /// The arguments so far.
    partial: watch::Receiver<Option<Map<String, Value>>>,
    /// What to do once they are complete.
    go: oneshot::Receiver<Go>,
}

/// The call is decided.
enum Go {
    /// Call the tool with these arguments; the outcome goes to the View and the model.
    Run { arguments: Map<String, Value>, reply: oneshot::Sender<ToolOutcome> },
    /// The person said no: the View gets `tool-cancelled`, the model an error result.
    Refuse { reason: String, reply: oneshot::Sender<ToolOutcome> },
}

/// The conversation side of the app: the conversation, the Views of the model's calls, and the
/// Apps' own tools offered to the model.
#[derive(Default)]
pub(super) struct Conversation {
    /// The conversation with the model, when one is configured.
    chat: Option<Chat>,
    /// Every View opened for a model's call (never reopened before its call is made).
    model_views: HashSet<ViewId>,
    /// Where every conversation of this run sends its outputs (with its generation).
    chat_out: Option<mpsc::UnboundedSender<(u64, crate::conversation::Output)>>,
    /// Each live View's own tools, offered to the model.
    app_tools: AppTools,
}

impl Conversation {
    /// Whether a conversation with a model runs.
    pub(super) fn is_on(&self) -> bool {
        self.chat.is_some()
    }

    /// Whether turns were sent to the model and did not end yet.
    pub(super) fn awaits_answer(&self) -> bool {
        self.chat.as_ref().is_some_and(|c| c.turns > 0)
    }

    /// Where every conversation of this run sends its outputs.
    pub(super) fn set_outputs(&mut self, tx: mpsc::UnboundedSender<(u64, crate::conversation::Output)>) {
        self.chat_out = Some(tx);
    }

    /// Whether `view` was opened for a model's call.
    pub(super) fn is_model_view(&self, view: &str) -> bool {
        self.model_views.contains(view)
    }

    /// Whether the model is still writing the call `view` was opened for (its arguments come as
    /// the model writes them; the call is not made yet).
    pub(super) fn model_writing_call(&self, view: &str) -> bool {
        self.chat.as_ref().is_some_and(|chat| chat.calls.values().any(|c| c.view == view))
    }
}

/// The conversation of this window.
pub(super) struct Chat {
    pub(super) handle: ConversationHandle,
    /// Which conversation of this run it is (its outputs carry it).
    generation: u64,
    /// The model's calls to UI tools: the View, where partial input goes, where the decision goes.
    calls: HashMap<CallId, ChatCall>,
    /// Turns sent to the model and not yet ended.
    pub(super) turns: usize,
    /// The first prompt (from the command line) was sent.
    prompted: bool,
    /// A reopened conversation, shown again once the servers are connected.
    replay: Option<Stored>,
    /// It is in the picker's list (a reopened one is from the start).
    listed: bool,
    /// Open "run this tool?" dialogs: the question each asks, and the dialog (shown again in
    /// a restarted shell).
    asking: HashMap<u64, Question>,
    asking_cmds: HashMap<u64, ShellCommand>,
}

struct ChatCall {
    view: ViewId,
    /// The person closed the View's card before the call was made: it is not made.
    closed: bool,
    partial: watch::Sender<Option<Map<String, Value>>>,
    go: Option<oneshot::Sender<Go>>,
}

/// At most this many turns wait for the model; an App's message beyond is not sent.
const MAX_WAITING_TURNS: usize = 8;
/// The picker lists at most this many stored conversations.
const MAX_LISTED: usize = 20;

/// The person's answer to "run this tool?".
const DECLINED: &str = "The person declined to run this tool.";

impl Controller {
    /// Starts the conversation if a model is configured (a new one, or `--resume`'s); its
    /// outputs come out of `chat_out`'s receiver, with their generation.
    pub(super) fn start_chat(&mut self) {
        let Some(model) = self.options.conversation.model.clone() else { return };
        // Kept for a restarted shell, like the turns.
        let ready = ShellCommand::ChatReady { model: consent::one_line_max(&model.0.describe(), 120) };
        self.shell(ready.clone());
        self.remember(ready);
        let resume = self.options.conversation.resume.clone();
        if let Err(e) = self.begin_conversation(resume.as_deref()) {
            self.fail(&e);
            return;
        }
        self.show_conversations();
    }

    /// The conversation goes on with `model` (the settings page's): the next turn is answered
    /// by it; with no conversation yet, one starts.
    pub(super) fn use_model(&mut self, model: Arc<dyn crate::model::Model>) {
        let described = consent::one_line_max(&model.describe(), 120);
        self.options.conversation.model = Some(SharedModel(model.clone()));
        match self.conversation.chat.as_ref() {
            Some(chat) => {
                chat.handle.send(Input::SwitchModel(crate::conversation::SharedModel(model)));
                let ready = ShellCommand::ChatReady { model: described.clone() };
                self.shell_page.keep(|c| !matches!(c, ShellCommand::ChatReady { .. }));
                self.shell(ready.clone());
                self.remember(ready);
            }
            None => {
                self.options.conversation.resume = None;
                self.start_chat();
                if let Some(chat) = self.conversation.chat.as_mut() {
                    // The servers were tried long ago: nothing waits for a first prompt.
                    chat.prompted = self.server_list.all_tried();
                }
                self.show_commands();
                self.show_servers();
            }
        }
        self.status(&format!("The conversation goes on with {described}"), false);
    }

    /// Every server was tried: the prompt from the command line goes to the model now.
    pub(super) fn send_first_prompt(&mut self) {
        let Some(chat) = self.conversation.chat.as_mut().filter(|c| !c.prompted) else { return };
        chat.prompted = true;
        if let Some(stored) = chat.replay.take() {
            self.replay(stored);
        }
        if let Some(prompt) = self.options.conversation.prompt.clone() {
            self.prompt(prompt);
        }
        self.show_commands();
    }

    /// The person's prompt.
    pub(super) fn prompt(&mut self, text: String) {
        let Some(chat) = self.conversation.chat.as_mut() else {
            // Nothing the person typed is lost: it goes back into the composer, and the place
            // to choose a model opens.
            tracing::info!("a prompt with no model chosen: back in the composer, Model settings open");
            self.shell(ShellCommand::NoModel { text });
            self.open_model_settings();
            return;
        };
        if chat.handle.send(Input::Prompt(text)) {
            chat.turns += 1;
        }
    }

    /// The person switches the conversation to another model of the same endpoint (the key
    /// goes nowhere new); the next turn is answered by it.
    pub(super) fn switch_model(&mut self, name: &str) {
        let Some(current) = self.options.conversation.model.clone() else { return };
        let Some(model) = current.0.with_name(name) else {
            self.status("This model has no other to switch to (or the name is not a model's).", true);
            return;
        };
        if self.conversation.chat.is_some() {
            self.use_model(model);
        }
    }

    /// A turn made ready off the loop (see `commands.rs`).
    pub(super) fn chat_input(&mut self, input: Input) {
        let Some(chat) = self.conversation.chat.as_mut() else { return };
        if chat.handle.send(input) {
            chat.turns += 1;
        }
    }

    /// An App's `ui/message` (the person allowed it): a turn of the conversation. An App that
    /// sends message after message while the model is busy gets the rest refused (false).
    pub(super) fn chat_app_message(&mut self, view: &str, app: String, text: String) -> bool {
        let Some(chat) = self.conversation.chat.as_mut() else { return true };
        if chat.turns >= MAX_WAITING_TURNS {
            tracing::warn!(view, "an App's message is not sent to the model: {} turns are already waiting", chat.turns);
            return false;
        }
        let server = self.views.get(view).map(|v| self.server_id(&v.server));
        let Some(chat) = self.conversation.chat.as_mut() else { return true };
        if chat.handle.send(Input::AppMessage { view: view.to_owned(), app, server, text }) {
            chat.turns += 1;
        }
        true
    }

    /// The person stops the turn under way; its open "run this tool?" questions are withdrawn
    /// (a yes after the stop must not run anything).
    pub(super) fn stop_turn(&mut self) {
        let Some(chat) = self.conversation.chat.as_mut() else { return };
        tracing::info!("the person stopped the model's turn");
        chat.handle.stop();
        let asked: Vec<u64> = chat.asking.drain().map(|(d, _)| d).collect();
        chat.asking_cmds.clear();
        for dialog in asked {
            if let Some(reply) = self.questions.consent_closed(dialog) {
                let _ = reply.send(false);
            }
            self.shell(ShellCommand::Dismiss { dialog });
        }
    }

    /// The open "run this tool?" dialogs (a shell restart does not answer them).
    pub(super) fn model_questions(&self) -> HashSet<u64> {
        self.conversation.chat.as_ref().map(|c| c.asking.keys().copied().collect()).unwrap_or_default()
    }

    /// A restarted shell shows the open "run this tool?" dialogs again.
    pub(super) fn ask_model_questions_again(&mut self) {
        let cmds: Vec<ShellCommand> =
            self.conversation.chat.as_ref().map(|c| c.asking_cmds.values().cloned().collect()).unwrap_or_default();
        for cmd in cmds {
            self.shell(cmd);
        }
    }

    /// The person closed a View's card: if it waits for the model's call, the call is not made.
    pub(super) fn model_view_closed(&mut self, view: &str) {
        if let Some(c) =
            self.conversation.chat.as_mut().and_then(|chat| chat.calls.values_mut().find(|c| c.view == view))
        {
            c.closed = true;
        }
    }

    /// A View that is gone informs the model no more (a restored one gives its context again).
    pub(super) fn forget_context(&self, view: &str) {
        if let Some(chat) = &self.conversation.chat {
            chat.handle.set_context(view, "", None, None);
        }
    }

    /// An App's latest model context, for the model's next request: what the model is told
    /// (cut to its bound), none when it was cleared or there is no conversation.
    pub(super) fn chat_model_context(
        &mut self,
        view: &str,
        app: String,
        text: Option<String>,
    ) -> Option<crate::conversation::AppContext> {
        let server = self.views.get(view).map(|v| self.server_id(&v.server));
        self.conversation.chat.as_ref().and_then(|chat| chat.handle.set_context(view, &app, server, text))
    }

    /// A server as a party to the conversation.
    pub(super) fn server_id(&self, server: &str) -> ServerId {
        ServerId { server: server.to_owned(), identity: self.servers.identity(server).unwrap_or_default() }
    }

    /// Where the servers' approval modes are kept.
    pub(super) fn approvals(&self) -> Option<crate::conversation::trust::Approvals> {
        self.options.places.approvals.clone().or_else(crate::conversation::trust::Approvals::user)
    }

    /// The person set a server's approval mode (the servers panel): kept across runs, and in
    /// force for the conversation's next call.
    pub(super) fn set_approval(&mut self, server: &str, mode: crate::conversation::Approval) {
        let Some(identity) = self.servers.identity(server) else { return };
        let label = self.label(server);
        tracing::info!(server, mode = mode.as_str(), "the person set the server's approval mode");
        if let Some(approvals) = self.approvals() {
            if let Err(e) = approvals.set(&identity, &label, mode) {
                self.shell(ShellCommand::Status {
                    text: format!("The setting is not kept for next time: {}", say(&e.to_string())),
                    error: true,
                });
            }
        }
        if let Some(chat) = &self.conversation.chat {
            chat.handle.set_approval(&identity, mode);
        }
    }

    /// What the conversation says or asks (outputs of a conversation that was replaced are
    /// dropped; their calls' reply channels close, which ends their turn).
    pub(super) fn on_chat(&mut self, generation: u64, out: Output) {
        if self.conversation.chat.as_ref().is_none_or(|c| c.generation != generation) {
            return;
        }
        if let Some(events) = &self.options.conversation.events {
            let event = match &out {
                Output::UserTurn { text, from_app } => {
                    Some(crate::conversation::Event::UserTurn { text: text.clone(), from_app: from_app.clone() })
                }
                Output::Text(text) => Some(crate::conversation::Event::Text(text.clone())),
                Output::TurnEnded { text, error } => {
                    Some(crate::conversation::Event::TurnEnded { text: text.clone(), error: error.clone() })
                }
                _ => None,
            };
            if let Some(event) = event {
                let _ = events.send(event);
            }
        }
        match out {
            Output::UserTurn { text, from_app } => {
                self.chat_card(ShellCommand::Chat { role: "user".into(), from: from_app, text: consent::block(&text) });
            }
            Output::Request { step, items, tools, context, bytes, tokens, known_tools } => {
                self.trace.record(
                    None,
                    Direction::HostToModel,
                    &json!({"step": step, "items": items, "tools": tools, "context": context, "bytes": bytes,
                            "tokens": tokens, "known_tools": known_tools}),
                );
            }
            Output::Text(text) => self.chat_card(ShellCommand::ChatText { text: consent::block(&text) }),
            Output::ToolStarted { call, entry } => self.model_call_started(call, &entry),
            Output::ToolPartial { call, arguments } => {
                if let Some(c) = self.conversation.chat.as_ref().and_then(|chat| chat.calls.get(&call)) {
                    let _ = c.partial.send(Some(arguments));
                }
            }
            Output::ToolReady { call, entry, arguments, question, reply } => {
                let reply = self.test_tool_turn(&call, &entry, &arguments, reply);
                self.model_call_ready(call, entry, arguments, question, reply)
            }
            Output::ToolRefused { call, name, reason } => {
                // A View opened for it hears the call is not made.
                if let Some(chat) = self.conversation.chat.as_mut() {
                    chat.calls.remove(&call);
                }
                self.shell(ShellCommand::Text {
                    view: None,
                    title: format!("The model called {}", tool_label(&name)),
                    text: consent::block(&format!("Not run: {reason}")),
                    error: true,
                });
            }
            Output::Flagged { reason, .. } => {
                tracing::warn!("{}", say(&reason));
                self.shell(ShellCommand::Text {
                    view: None,
                    title: "A tool's result".into(),
                    text: consent::block(&reason),
                    error: true,
                });
            }
            Output::TurnEnded { text, error } => {
                self.trace.record(None, Direction::ModelToHost, &json!({"text": text, "error": error}));
                // Every call of the turn was carried out: a View still waiting belongs to a call
                // the model never completed (a broken stream, cut arguments); it is cancelled.
                if let Some(chat) = self.conversation.chat.as_mut() {
                    chat.calls.clear();
                }
                if let Some(e) = &error {
                    eprintln!("error: the model: {}", say(e));
                }
                self.chat_card(ShellCommand::ChatEnd { error: error.as_deref().map(consent::block) });
                // Idle: the prompt was sent (an App's turn can end before) and nothing waits.
                let idle = self.conversation.chat.as_mut().is_some_and(|chat| {
                    chat.turns = chat.turns.saturating_sub(1);
                    chat.turns == 0 && chat.prompted
                });
                // A new conversation is in the list once it has a turn: the list (a read of
                // every file's start) is made again then, not after every turn.
                if self.conversation.chat.as_mut().is_some_and(|chat| !std::mem::replace(&mut chat.listed, true)) {
                    self.show_conversations();
                }
                if idle && self.options.automation.exit_after == Some(ExitAfter::Answer) {
                    self.finish(i32::from(error.is_some()));
                }
            }
        }
    }

    /// Shows a turn's card and keeps it for a restarted shell (an answer's pieces kept as one).
    fn chat_card(&mut self, cmd: ShellCommand) {
        self.shell(cmd.clone());
        if let (ShellCommand::ChatText { text }, Some(ShellCommand::ChatText { text: kept })) =
            (&cmd, self.shell_page.last_remembered_mut())
        {
            // The shell shows at most this much of an answer; a restarted one gets no more.
            if kept.len() < 200_000 {
                kept.push_str(text);
            }
            return;
        }
        self.remember(cmd);
    }

    /// The model named a tool: a UI tool's View opens now, to show the arguments as they come.
    fn model_call_started(&mut self, call: CallId, entry: &ToolEntry) {
        // An App's own tool runs in its View: it opens none.
        let has_ui = entry.app_view.is_none() && entry.ui.as_ref().is_ok_and(|u| u.resource_uri.is_some());
        if !has_ui || self.conversation.chat.is_none() {
            return;
        }
        let view: ViewId = self.views.reserve_id();
        let (partial_tx, partial) = watch::channel(None);
        let (go_tx, go) = oneshot::channel();
        self.conversation.model_views.insert(view.clone());
        if let Err(e) = self.open(Some(&entry.server), entry.name(), Map::new(), Opening::Model(view.clone())) {
            tracing::warn!("the View of the model's call could not open: {e}");
            return;
        }
        // The call is made here once its arguments are complete (and allowed); its View gets
        // them as they come, and its result.
        if let Some(session) = self.views.take_model_session(&view) {
            self.spawn_deferred(DeferredCall { partial, go }, entry, view.clone(), session);
        }
        if let Some(chat) = self.conversation.chat.as_mut() {
            chat.calls.insert(call, ChatCall { view, closed: false, partial: partial_tx, go: Some(go_tx) });
        }
    }

    /// The model's call is complete: ask first if the conversation says so, then run it.
    fn model_call_ready(
        &mut self,
        call: CallId,
        entry: ToolEntry,
        arguments: Map<String, Value>,
        question: Option<Question>,
        reply: oneshot::Sender<ToolOutcome>,
    ) {
        let with_view = self.conversation.chat.as_mut().and_then(|chat| chat.calls.remove(&call));
        if let Some(c) = &with_view {
            // The View's record keeps the final arguments (a reload or a restart shows them).
            if let Some(v) = self.views.get_mut(&c.view) {
                v.arguments = arguments.clone();
            } else if let Some(pending) = self.views.pending_mut(&c.view) {
                pending.arguments = arguments.clone();
            }
        }
        if with_view.as_ref().is_some_and(|c| c.closed) {
            let reason = "The person closed the App's card before the call was made.";
            tracing::info!(tool = entry.name(), "the model's call is not made: its View was closed");
            let _ = reply.send(ToolOutcome::error(reason));
            return;
        }
        let (decided_tx, decided) = oneshot::channel::<bool>();
        if let Some(question) = question {
            self.trace.record(
                with_view.as_ref().map(|c| c.view.as_str()),
                Direction::Diagnostic,
                &json!({"kind": "tool-consent", "tool": entry.name(), "server": entry.server, "arguments": arguments,
                        "call": question.call.map(|r| format!("{r:?}")),
                        "data_from": question.data_from.iter().map(|(s, _)| &s.server).collect::<Vec<_>>()}),
            );
            match self.options.consent {
                Consent::Allow => {
                    let _ = decided_tx.send(true);
                }
                Consent::Deny => {
                    let _ = decided_tx.send(false);
                }
                Consent::Ask => {
                    let dialog = self.questions.next_id();
                    // The conversation's question, not the View's: a View that crashes or closes
                    // does not answer it.
                    let owner = format!("chat-{call}");
                    tracing::info!(dialog, tool = entry.name(), "asking the person before the model's call");
                    self.questions.consent_asked(dialog, owner, decided_tx);
                    let cmd = call_question(&entry, &arguments, &question, dialog);
                    if let Some(chat) = self.conversation.chat.as_mut() {
                        chat.asking.insert(dialog, question);
                        chat.asking_cmds.insert(dialog, cmd.clone());
                    }
                    self.shell(cmd);
                }
            }
        } else {
            let _ = decided_tx.send(true);
        }
        let (servers, trace, ui) = (self.servers.clone(), self.trace.clone(), self.ui.clone());
        let events = self.options.conversation.events.clone();
        // An App's own tool is called on its View.
        let app_view = entry.app_view.as_ref().map(|v| self.views.get(v).map(|v| v.handle.clone()));
        tokio::spawn(async move {
            let run = decided.await.unwrap_or(false);
            if let (true, Some(events)) = (run, &events) {
                let _ = events.send(crate::conversation::Event::ToolCall {
                    server: entry.server.clone(),
                    tool: entry.name().to_owned(),
                    arguments: arguments.clone(),
                });
            }
            let go = if run { Go::Run { arguments, reply } } else { Go::Refuse { reason: DECLINED.into(), reply } };
            // A View waits for the decision; without one (a plain tool, or its View could not
            // open) the call is made here and its result shown as text.
            let go = match with_view.and_then(|c| c.go) {
                Some(tx) => match tx.send(go) {
                    Ok(()) => return,
                    Err(go) => go,
                },
                None => go,
            };
            match go {
                Go::Refuse { reason, reply } => {
                    let _ = reply.send(ToolOutcome::error(reason));
                }
                Go::Run { arguments, reply } => {
                    let (outcome, _) = call_for_model(&servers, &trace, None, &entry, app_view, arguments).await;
                    let (text, error) = match &outcome.result {
                        Some(result) => result_for_person(result),
                        None => (dialogs::content_text(&outcome.content), true),
                    };
                    let _ = ui.send_event(UserEvent::Shell(result_card(entry.name(), &text, error)));
                    let _ = reply.send(outcome);
                }
            }
        });
    }

    /// A "run this tool?" dialog was answered; `remember`: yes for the rest of the
    /// conversation (the tool, and the data the question named reaching its server).
    pub(super) fn chat_consent_answered(&mut self, dialog: u64, remember: bool) {
        let Some(chat) = self.conversation.chat.as_mut() else { return };
        chat.asking_cmds.remove(&dialog);
        if let Some(question) = chat.asking.remove(&dialog) {
            if remember {
                tracing::info!(server = %question.owner.server.server, tool = %question.owner.tool,
                               "the person allowed the call for the rest of the conversation");
                chat.handle.remember(&question);
            }
        }
    }

    /// The task of a model's call whose View is open: partial input to the View until the call
    /// is decided, then the call (or the refusal) to the View and to the model.
    fn spawn_deferred(
        &self,
        deferred: DeferredCall,
        entry: &ToolEntry,
        view: ViewId,
        session: oneshot::Receiver<ViewHandle>,
    ) {
        let (servers, trace, entry, ui) = (self.servers.clone(), self.trace.clone(), entry.clone(), self.ui.clone());
        let results = self.views.channels().results;
        let DeferredCall { mut partial, mut go } = deferred;
        tokio::spawn(async move {
            // The call is decided whether or not the View is up yet (its setup may hang or
            // fail); partials wait in the watch (only the latest) until it is.
            let mut session = session;
            let (mut handle, mut starting) = (None::<ViewHandle>, true);
            let decision = loop {
                tokio::select! {
                    h = &mut session, if starting => {
                        handle = h.ok();
                        starting = false;
                    }
                    decision = &mut go => break decision.ok(),
                    changed = partial.changed(), if !starting => {
                        if changed.is_err() {
                            break (&mut go).await.ok();
                        }
                        let arguments = partial.borrow_and_update().clone();
                        if let (Some(h), Some(arguments)) = (&handle, arguments) {
                            h.tool_input_partial(arguments);
                        }
                        tokio::time::sleep(PARTIAL_GAP).await;
                    }
                }
            };
            match decision {
                None => {
                    // A View still starting hears it once it is up.
                    let handle = view_once_up(handle, starting, session).await;
                    if let Some(h) = &handle {
                        h.call_not_made(Some("the model's call was not made".into()));
                    }
                }
                Some(Go::Refuse { reason, reply }) => {
                    let _ = reply.send(ToolOutcome::error(reason.clone()));
                    let handle = view_once_up(handle, starting, session).await;
                    if let Some(h) = &handle {
                        h.call_not_made(Some(reason.clone()));
                    }
                    let _ = results.send((view, Err(reason)));
                }
                Some(Go::Run { arguments, reply }) => {
                    if let Some(h) = &handle {
                        h.tool_input(arguments.clone());
                    }
                    let (outcome, raw) =
                        call_for_model(&servers, &trace, Some(&view), &entry, None, arguments.clone()).await;
                    // The model does not wait for the View.
                    let text = outcome.result.as_ref().map(result_for_person);
                    let _ = reply.send(outcome);
                    let late = handle.is_none() && starting;
                    let handle = view_once_up(handle, starting, session).await;
                    if late {
                        if let Some(h) = &handle {
                            h.tool_input(arguments);
                        }
                    }
                    match (&handle, &raw) {
                        (Some(h), Ok(result)) => h.tool_result(result.clone()),
                        (Some(h), Err(e)) => h.tool_cancelled(Some(format!("tool call failed: {e}"))),
                        // No View came (its setup failed): the result as text, like a plain tool's.
                        (None, _) => {
                            let (text, error) = text.unwrap_or_else(|| (raw.clone().err().unwrap_or_default(), true));
                            let _ = ui.send_event(UserEvent::Shell(result_card(entry.name(), &text, error)));
                        }
                    }
                    let _ = results.send((view, raw));
                }
            }
        });
    }
}

/// A model's call whose View is still starting: the View once it is up (bounded wait), or none.
async fn view_once_up(
    handle: Option<ViewHandle>,
    starting: bool,
    session: oneshot::Receiver<ViewHandle>,
) -> Option<ViewHandle> {
    if handle.is_some() || !starting {
        return handle;
    }
    tokio::time::timeout(VIEW_WAIT, session).await.ok().and_then(Result::ok)
}

/// The card of a model call's result shown as text (a plain tool's, or a View that never came).
fn result_card(tool: &str, text: &str, error: bool) -> String {
    let title = format!("Result of {}", tool_label(tool));
    ShellCommand::Text { view: None, title, text: consent::block(text), error }.to_text()
}

/// Makes the model's call, the one place it is made (with or without a View for it): an App's
/// own tool on its View (`app_view`: `Some`, with the View's handle while it is open), else the
/// server's tool through its port (restart and sign-in on demand). Returns what the model gets,
/// and the result (or why it failed) for the View.
async fn call_for_model(
    servers: &Arc<ServerSet>,
    trace: &Trace,
    view: Option<&str>,
    entry: &ToolEntry,
    app_view: Option<Option<ViewHandle>>,
    arguments: Map<String, Value>,
) -> (ToolOutcome, Result<Value, String>) {
    match app_view {
        Some(Some(handle)) => {
            return match handle.call_view_tool(entry.name(), arguments).await {
                Ok(result) => (ToolOutcome::from_result(&result), Ok(result)),
                Err(e) => (ToolOutcome::failed(format!("the App's tool failed: {}", e.message)), Err(e.to_string())),
            };
        }
        Some(None) => {
            let reason = "the App's card is closed: its tools are gone";
            return (ToolOutcome::error(reason), Err(reason.to_owned()));
        }
        None => {}
    }
    match call_tool_traced(servers, trace, view, &entry.server, entry.name(), arguments).await {
        Ok(result) => (ToolOutcome::from_result(&result), Ok(result)),
        Err(e) => (ToolOutcome::failed(format!("the tool call failed: {}", e.message)), Err(e.to_string())),
    }
}

/// The dialog before a model's call: the tool and the server that would receive it, then the
/// servers whose data the arguments may carry, then the arguments.
fn call_question(entry: &ToolEntry, arguments: &Map<String, Value>, question: &Question, dialog: u64) -> ShellCommand {
    // An App's tool carries the App's label, which the host joined from the View's tool and its
    // server's label and checked part by part (`consent::app_label`): checking the joined label
    // again would flag the host's own ` · `. A server's label is checked here.
    let receiver = match entry.app_view {
        Some(_) => consent::one_line_max(&question.receiver, 200),
        None => consent::server_label(&question.receiver),
    };
    let mut subject = vec![format!("{} · {receiver}", tool_label(entry.name()))];
    subject
        .extend(question.data_from.iter().map(|(_, from)| format!("with data from {}", consent::server_label(from))));
    let pretty = serde_json::to_string_pretty(&Value::Object(arguments.clone())).unwrap_or_default();
    // Arguments longer than the dialog shows are said to be, before they are shown: padding
    // must not hide the part that matters below the cut.
    let hidden = pretty.chars().count().saturating_sub(consent::MAX_BLOCK_CHARS);
    let cut = if hidden > 0 {
        format!(" Only the start of the arguments is shown: {hidden} more characters are not.")
    } else {
        String::new()
    };
    let why = match question.call {
        Some(CallReason::EveryCall) => "You asked to be asked before every call to this server.".to_owned(),
        Some(CallReason::MayDestroy) => "The server says it may destroy data.".to_owned(),
        Some(CallReason::MayChange) => "The server does not say it only reads.".to_owned(),
        None => String::new(),
    };
    let flows = if question.data_from.is_empty() {
        String::new()
    } else {
        let from: Vec<String> = question.data_from.iter().map(|(_, l)| consent::server_label(l)).collect();
        format!(
            " The conversation holds what {} returned or showed; these arguments may carry it to {receiver}.",
            from.join(", ")
        )
    };
    let remember = question.can_remember().then(|| {
        let tool = tool_label(entry.name());
        match (question.data_from.is_empty(), question.call.is_some()) {
            (true, _) => format!("Run {tool} without asking for the rest of this conversation"),
            (false, false) => format!("Let {receiver} receive this data for the rest of this conversation"),
            (false, true) => {
                format!("Run {tool} and let {receiver} receive this data for the rest of this conversation")
            }
        }
    });
    let title = if question.data_from.is_empty() {
        "Run this tool for the model?"
    } else {
        "Send data to another server for the model?"
    };
    ShellCommand::Confirm {
        dialog,
        title: title.into(),
        subject,
        source: consent::one_line_max(
            &format!("The model wants to call it with these arguments.{cut}{flows} {why}"),
            600,
        ),
        detail: consent::block(&pretty),
        accept: if question.data_from.is_empty() { "Run".into() } else { "Send".into() },
        remember,
        asker: Some("the conversation".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Owner;

    fn asked(entry: &ToolEntry, data_from: &[&str]) -> (Vec<String>, String) {
        let question = Question {
            owner: Owner::of(entry),
            receiver: entry.label.clone(),
            call: Some(CallReason::MayChange),
            data_from: data_from
                .iter()
                .map(|l| (ServerId { server: (*l).into(), identity: format!("stdio:{l}") }, (*l).to_owned()))
                .collect(),
        };
        match call_question(entry, &Map::new(), &question, 1) {
            ShellCommand::Confirm { subject, source, .. } => (subject, source),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_hosts_own_app_label_does_not_trip_the_non_ascii_warning_and_a_servers_does() {
        let mut app_tool = ToolEntry::new("notes", json!({"name": "save"}));
        app_tool.label = consent::app_label("show", "notes");
        app_tool.app_view = Some("v1".into());
        let (subject, source) = asked(&app_tool, &["vault"]);
        assert_eq!(subject, ["save · show · notes", "with data from vault"]);
        assert!(!source.contains("not plain ASCII"), "{source}");
        // A server whose own name is not plain ASCII is flagged, as a server and behind an App.
        let mut lookalike = ToolEntry::new("files", json!({"name": "read"}));
        lookalike.label = "f\u{456}les".into();
        let (subject, _) = asked(&lookalike, &["f\u{456}les2"]);
        assert!(subject.iter().all(|s| s.contains("[not plain ASCII: f\\u{456}les")), "{subject:?}");
        let mut its_app = ToolEntry::new("files", json!({"name": "save"}));
        its_app.label = consent::app_label("show", "f\u{456}les");
        its_app.app_view = Some("v2".into());
        let (subject, _) = asked(&its_app, &[]);
        assert_eq!(subject[0].matches("not plain ASCII").count(), 1, "{subject:?}");
        assert!(!subject[0].contains("\\u{b7}"), "{subject:?}");
    }
}
