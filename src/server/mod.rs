//! The MCP client side: server configuration and connections.

pub mod auth;
pub mod config;
pub mod connection;
pub mod failure;
pub mod requests;
pub mod set;
pub mod sse;

pub use config::ServerSpec;
pub use connection::Connection;
pub use set::{ServerSet, ServerStatus};
