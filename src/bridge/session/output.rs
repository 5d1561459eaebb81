//! What a session reports: messages for the View and events for the host.

use serde_json::Value;

use crate::protocol::{DisplayMode, Implementation};

/// What a session produces.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ViewOutput {
    /// JSON text to post into the View's proxy frame.
    Post(String),
    /// Something the embedding host should know or act on.
    Event(ViewEvent),
}

/// Things that happen to a View, for the host around the bridge.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ViewEvent {
    /// The proxy is up and the resource was sent to it.
    ResourceSent,
    /// The View completed the handshake.
    Initialized {
        /// The version the View asked for.
        protocol_version: String,
        /// The View's name and version.
        app_info: Implementation,
        /// The View's `appCapabilities`.
        app_capabilities: Value,
    },
    /// `tool-input` reached the View.
    ToolInputDelivered,
    /// `tool-result` reached the View.
    ToolResultDelivered,
    /// `tool-cancelled` reached the View.
    ToolCancelledDelivered {
        /// Why.
        reason: Option<String>,
    },
    /// The View's content size changed (px).
    SizeChanged {
        /// New width, if reported.
        width: Option<f64>,
        /// New height, if reported.
        height: Option<f64>,
    },
    /// The display mode in effect changed (after the policy agreed).
    DisplayModeChanged {
        /// The new mode.
        mode: DisplayMode,
    },
    /// The View logged something (`notifications/message`).
    Log {
        /// MCP logging level.
        level: String,
        /// Logger name.
        logger: Option<String>,
        /// Payload.
        data: Value,
    },
    /// The View replaced its model context (`None`: cleared).
    ModelContext {
        /// `{content?, structuredContent?}` as the View sent it.
        context: Option<Value>,
    },
    /// The View's own tool list changed (`notifications/tools/list_changed` from the View).
    ViewToolsChanged,
    /// The View sent something else where its handshake should start, and will not start:
    /// what it sent and what the spec expects, for the person.
    NotStarted {
        /// One sentence.
        message: String,
    },
    /// The View asked to be closed.
    TeardownRequested,
    /// A message was dropped; the reason is for the log.
    Rejected {
        /// Why.
        reason: String,
    },
    /// The session ended; no more output follows.
    Closed,
}

/// How a teardown ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TeardownOutcome {
    /// The View answered `ui/resource-teardown`.
    Answered,
    /// The View did not answer in time; it is unmounted anyway.
    TimedOut,
    /// The View never initialized, so nothing could be sent to it.
    NotInitialized,
}
