//! What comes into a conversation and what it tells its host.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use super::{Question, ServerId};
use crate::model::Model;
use crate::server::set::ToolEntry;

/// Our id for a tool call (unique in the conversation).
pub type CallId = String;

/// What comes into the conversation.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Input {
    /// The person's prompt.
    Prompt(String),
    /// An App's `ui/message` (after the person allowed it): a user turn from that App.
    AppMessage {
        /// The View that sent it.
        view: String,
        /// The App, for the person and the model (`tool · server`).
        app: String,
        /// The App's server (its data is that server's; see [`trust`](super::trust)).
        server: Option<ServerId>,
        /// What it said.
        text: String,
    },
    /// The person asks for the last answer again: everything after their last turn is dropped
    /// (from what the model is sent, and from the file) and that turn is answered anew.
    Retry,
    /// The person edited their last prompt: everything from it on is dropped and this is sent
    /// instead.
    Edit(String),
    /// The conversation goes on with another model (its history goes along).
    SwitchModel(SharedModel),
    /// A turn the person chose whose words are partly a server's: an MCP prompt they ran (a
    /// slash command), or their prompt with a server's resource attached. The model reads it as
    /// the person's turn; the server's data is in the conversation from then on (see
    /// [`trust`](super::trust)).
    WithServerData {
        /// What the model is sent.
        text: String,
        /// Whose data is in it, with how the person knows them.
        servers: Vec<(ServerId, String)>,
    },
}

/// A model, shareable and printable (its description).
#[derive(Clone)]
pub struct SharedModel(pub Arc<dyn Model>);

impl std::fmt::Debug for SharedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedModel({})", self.0.describe())
    }
}

/// One App's latest model context, as the model gets it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AppContext {
    /// The App, for the person and the model (`tool · server`).
    pub app: String,
    /// Its server.
    pub server: Option<ServerId>,
    /// The text, at most [`MAX_CONTEXT_BYTES`](super::MAX_CONTEXT_BYTES).
    pub text: String,
    /// How many bytes of it were cut.
    pub cut: usize,
}

/// Each View's latest model context. Shared, not queued: a View that updates its context
/// thousands of times while the model answers leaves one entry.
pub(super) type Contexts = Arc<std::sync::Mutex<BTreeMap<String, AppContext>>>;

/// The outcome of a tool call, for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// MCP content blocks.
    pub content: Vec<Value>,
    /// The result's `structuredContent`.
    pub structured: Option<Value>,
    /// Whether it failed or was refused.
    pub is_error: bool,
    /// The whole `CallToolResult` (kept with the conversation: a reopened one shows the View
    /// from it); none when the call failed or was refused.
    pub result: Option<Value>,
    /// Whether the server said any of it (a result, or its error): then the model has read the
    /// server's words.
    pub from_server: bool,
}

impl ToolOutcome {
    /// An MCP `CallToolResult`.
    pub fn from_result(result: &Value) -> Self {
        Self {
            content: result.get("content").and_then(Value::as_array).cloned().unwrap_or_default(),
            structured: result.get("structuredContent").cloned(),
            is_error: result.get("isError").and_then(Value::as_bool).unwrap_or(false),
            result: Some(result.clone()),
            from_server: true,
        }
    }

    /// A call refused or not made, with the host's why.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            content: vec![json!({"type": "text", "text": text.into()})],
            structured: None,
            is_error: true,
            result: None,
            from_server: false,
        }
    }

    /// A call that failed on its server, with the server's why.
    pub fn failed(text: impl Into<String>) -> Self {
        Self { from_server: true, ..Self::error(text) }
    }

    /// The host's own tool's outcome: not an error, nobody else's words.
    pub(super) fn succeeded(self) -> Self {
        Self { is_error: false, from_server: false, ..self }
    }
}

/// What the conversation asks of its host and tells it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Output {
    /// A turn of the person's or an App's starts.
    UserTurn {
        /// What was said.
        text: String,
        /// The App, if an App said it.
        from_app: Option<String>,
    },
    /// A request goes to the model (for the trace: how many items, which tools, the context).
    Request {
        /// The turn's step.
        step: usize,
        /// The items sent.
        items: usize,
        /// The tools offered (model names).
        tools: Vec<String>,
        /// The Apps' model context sent.
        context: Vec<AppContext>,
        /// The request's size in bytes (system prompt, items and tools as JSON).
        bytes: usize,
        /// A rough token count (bytes / 4).
        tokens: usize,
        /// Every model-visible tool, offered or not.
        known_tools: usize,
    },
    /// More of the model's text.
    Text(String),
    /// The model started calling a tool.
    ToolStarted {
        /// Our id for the call.
        call: CallId,
        /// The server's tool.
        entry: ToolEntry,
    },
    /// The arguments so far.
    ToolPartial {
        /// The call.
        call: CallId,
        /// What they hold so far.
        arguments: Map<String, Value>,
    },
    /// The arguments are complete: carry the call out (asking the person first when there is
    /// a `question`) and answer on `reply`.
    ToolReady {
        /// The call.
        call: CallId,
        /// The server's tool.
        entry: ToolEntry,
        /// Its arguments.
        arguments: Map<String, Value>,
        /// What the person must be asked before it runs (see [`trust`](super::trust)); none: it runs.
        question: Option<Question>,
        /// Where the outcome goes (dropped: the call is reported cancelled).
        reply: oneshot::Sender<ToolOutcome>,
    },
    /// The model called a tool it was not offered, or with arguments that are not an object
    /// (a View opened at [`Output::ToolStarted`] for it gets `tool-cancelled`).
    ToolRefused {
        /// Our id for the call.
        call: CallId,
        /// The name it used.
        name: String,
        /// Why.
        reason: String,
    },
    /// A result did not match its tool's `outputSchema` (the model is told too).
    Flagged {
        /// The call.
        call: CallId,
        /// What is wrong.
        reason: String,
    },
    /// The model's turn is over: its whole text, or what went wrong.
    TurnEnded {
        /// The answer's text (all steps).
        text: String,
        /// The error that ended it early.
        error: Option<String>,
    },
}

/// What an embedder hears of the conversation (see `HostBuilder::conversation_events`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// A turn of the person's, or an App's (`from_app`).
    UserTurn {
        /// What was said.
        text: String,
        /// The App, if an App said it.
        from_app: Option<String>,
    },
    /// More of the model's answer.
    Text(String),
    /// A tool call of the model is about to run (after the person allowed it, if asked).
    ToolCall {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// Its arguments.
        arguments: Map<String, Value>,
    },
    /// The model's turn ended.
    TurnEnded {
        /// Its whole text.
        text: String,
        /// What ended it early.
        error: Option<String>,
    },
}
