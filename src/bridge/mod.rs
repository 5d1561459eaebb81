//! One [`ViewSession`] per View: the MCP Apps state machine between a View and its server.
//!
//! The bridge knows no webview and no window. It reads the View's messages as JSON text from a
//! channel and writes JSON text back ([`ViewOutput::Post`]), it reaches the View's server through
//! the [`ServerPort`] trait, and it asks a [`HostPolicy`] whenever a person (or an embedder)
//! should decide. So every protocol rule is testable without a display, and any webview (ours,
//! Tauri's, a browser over a WebSocket) can drive a session.

mod policy;
mod server_port;
mod session;
pub mod trace;

pub use policy::{safe_file_name, Decision, DefaultPolicy, HostPolicy, PolicyCapabilities, ViewInfo};
pub use server_port::{BoxFuture, CallControl, ServerPort};
pub use session::{
    PostSink, TeardownOutcome, ViewConfig, ViewEvent, ViewHandle, ViewId, ViewOutput, ViewSession, MAX_DOWNLOAD_BYTES,
    MAX_VIEW_MESSAGE_BYTES, MAX_VIEW_REQUESTS_IN_FLIGHT, VIEW_TOOL_TIMEOUT,
};
pub use trace::{Direction, Trace};

#[cfg(test)]
mod tests;
