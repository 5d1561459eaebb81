//! Starting a conversation, and the handle its host keeps: the inbox, "stop", the Apps' context
//! and the person's approvals.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::messages::Contexts;
use super::turn::Conversation;
use super::{bound_context, store, AppContext, Approval, Input, Names, Output, Owner, Question, ServerId, Trust};
use crate::model::{ChatItem, Model};
use crate::server::set::{ServerInstructions, ServerSet, ToolEntry};

/// Where the servers' `instructions` come from (the server set's, or an embedder's).
#[derive(Clone)]
pub struct InstructionsSource(pub Arc<dyn Fn() -> Vec<ServerInstructions> + Send + Sync>);

impl std::fmt::Debug for InstructionsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InstructionsSource(..)")
    }
}

/// How a conversation starts.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Start {
    /// The items of a reopened conversation (the model gets them again with the next turn).
    pub history: Vec<ChatItem>,
    /// Where every item and tool call is appended.
    pub store: Option<store::Writer>,
    /// The tool names a reopened conversation gave (they keep their owners).
    pub names: Vec<(String, Owner)>,
    /// The servers whose data a reopened conversation holds, with their labels.
    pub seen: Vec<(ServerId, String)>,
    /// The servers' `instructions` (see [`start`], which takes them from the server set).
    pub instructions: Option<InstructionsSource>,
}

impl Start {
    /// A conversation that goes on from `history`, kept in `store`.
    pub fn new(history: Vec<ChatItem>, store: Option<store::Writer>) -> Self {
        Self { history, store, ..Self::default() }
    }

    /// A reopened conversation: its items, names and seen servers from its file.
    pub fn reopened(stored: &store::Stored, store: Option<store::Writer>) -> Self {
        let mut start = Self::new(stored.items(), store);
        for record in &stored.records {
            match record {
                store::Record::Name { name, owner } => start.names.push((name.clone(), owner.clone())),
                store::Record::Seen { server, label } => start.seen.push((server.clone(), label.clone())),
                _ => {}
            }
        }
        start
    }
}

/// The person's "stop": a count of presses, and a wake-up for a turn that waits.
#[derive(Debug, Default)]
pub(super) struct Stop {
    presses: std::sync::atomic::AtomicU64,
    notify: tokio::sync::Notify,
}

impl Stop {
    pub(super) fn count(&self) -> u64 {
        self.presses.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Resolves once "stop" was pressed after the count `since`.
pub(super) async fn stopped(stop: &Stop, since: u64) {
    loop {
        let notified = stop.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if stop.count() != since {
            return;
        }
        notified.await;
    }
}

/// Why a turn the person stopped ended.
pub const STOPPED: &str = "stopped by the person";

/// The conversation's inbox.
#[derive(Debug, Clone)]
pub struct ConversationHandle {
    tx: mpsc::UnboundedSender<Input>,
    context: Contexts,
    stop: Arc<Stop>,
    trust: Arc<std::sync::Mutex<Trust>>,
    /// The stored conversation's id, if it is kept.
    id: Option<String>,
}

impl ConversationHandle {
    /// Sends `input` (false once the conversation is gone).
    pub fn send(&self, input: Input) -> bool {
        self.tx.send(input).is_ok()
    }

    /// Stops the turn under way: the model's answer is cut off, a call waiting for its outcome
    /// gets an error result (a call already running on its server still finishes there), and
    /// no further request is made. Turns waiting behind it go on.
    pub fn stop(&self) {
        self.stop.presses.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.stop.notify.notify_waiters();
    }

    /// An App's latest `ui/update-model-context` as text (`None` or blank: cleared): it goes
    /// into every later request, cut to [`MAX_CONTEXT_BYTES`](super::MAX_CONTEXT_BYTES). Returns what the model is told.
    pub fn set_context(
        &self,
        view: &str,
        app: &str,
        server: Option<ServerId>,
        text: Option<String>,
    ) -> Option<AppContext> {
        let mut context = self.context.lock().unwrap_or_else(|e| e.into_inner());
        match text {
            Some(text) if !text.trim().is_empty() => {
                let (text, cut) = bound_context(&text);
                let told = AppContext { app: app.to_owned(), server, text, cut };
                context.insert(view.to_owned(), told.clone());
                Some(told)
            }
            _ => {
                context.remove(view);
                None
            }
        }
    }

    /// The id of the stored conversation (none when it is not kept).
    pub fn id(&self) -> Option<String> {
        self.id.clone()
    }

    /// Sets a server's approval mode (by its identity) for the calls to come.
    pub fn set_approval(&self, identity: &str, mode: Approval) {
        self.trust.lock().unwrap_or_else(|e| e.into_inner()).set_mode(identity, mode);
    }

    /// The person said yes to `question` for the rest of this conversation.
    pub fn remember(&self, question: &Question) {
        self.trust.lock().unwrap_or_else(|e| e.into_inner()).remember(question);
    }
}

/// Starts a conversation on `model` over `servers`' tools; it lives until the handle and the
/// output receiver are dropped.
pub fn start(
    model: Arc<dyn Model>,
    servers: Arc<ServerSet>,
    mut start: Start,
) -> (ConversationHandle, mpsc::UnboundedReceiver<Output>) {
    if start.instructions.is_none() {
        let set = servers.clone();
        start.instructions = Some(InstructionsSource(Arc::new(move || set.instructions())));
    }
    start_with(model, Arc::new(move || servers.tools()), start)
}

/// [`start`] with the tools from a function (embedders, tests).
pub fn start_with(
    model: Arc<dyn Model>,
    tools: Arc<dyn Fn() -> Vec<ToolEntry> + Send + Sync>,
    start: Start,
) -> (ConversationHandle, mpsc::UnboundedReceiver<Output>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (out, out_rx) = mpsc::unbounded_channel();
    let context = Contexts::default();
    let stop = Arc::new(Stop::default());
    let trust = Arc::new(std::sync::Mutex::new(Trust::default()));
    let id = start.store.as_ref().map(|w| w.id().to_owned());
    let mut names = Names::default();
    for (name, owner) in start.names {
        names.restore(&name, owner);
    }
    let conversation = Conversation {
        stop: stop.clone(),
        since: 0,
        model,
        tools,
        out,
        items: start.history,
        store: start.store,
        context: context.clone(),
        next_call: 1,
        names,
        seen: start.seen.into_iter().collect(),
        trust: trust.clone(),
        instructions: start.instructions,
        found: Vec::new(),
        app_names: BTreeSet::new(),
    };
    tokio::spawn(conversation.run(rx));
    (ConversationHandle { tx, context, stop, trust, id }, out_rx)
}
