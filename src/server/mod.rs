//! The MCP client side: server configuration and connections.

pub mod auth;
pub mod config;
pub mod connection;
mod host_client;
mod lifecycle;
pub mod registry;
pub mod requests;
pub mod sse;
mod subscriptions;
mod ui_cache;

pub use config::ServerSpec;
pub use connection::Connection;
pub use registry::{Registry, ServerStatus};
