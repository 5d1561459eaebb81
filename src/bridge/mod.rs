//! One [`ViewSession`] per View: the MCP Apps state machine between a View and its server.
//!
//! The bridge knows no webview and no window. It reads the View's messages as JSON text from a
//! channel and writes JSON text back ([`ViewOutput::Post`]), and it reaches the View's server
//! through the [`ServerPort`] trait. So every protocol rule is testable without a display, and any
//! webview (ours, Tauri's, a browser over a WebSocket) can drive a session.

mod server_port;
mod session;
pub mod trace;

pub use server_port::{BoxFuture, ServerPort};
pub use session::{
    TeardownOutcome, ViewConfig, ViewEvent, ViewHandle, ViewId, ViewOutput, ViewSession,
    MAX_VIEW_MESSAGE_BYTES,
};
pub use trace::{Direction, Trace};

#[cfg(test)]
mod tests;
