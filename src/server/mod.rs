//! The MCP client side: server configuration and connections.

pub mod auth;
pub mod config;
pub mod connection;
pub mod registry;
pub mod requests;
pub mod sse;

pub use config::ServerSpec;
pub use connection::Connection;
pub use registry::{Registry, ServerStatus};
