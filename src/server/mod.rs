//! The MCP client side: server configuration and connections.

pub mod config;
pub mod connection;

pub use config::ServerSpec;
pub use connection::Connection;
