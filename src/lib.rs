//! # mcp-apps-host
//!
//! A native host for [MCP Apps] (the `io.modelcontextprotocol/ui` extension): it connects to MCP
//! servers, finds tools whose UI is a `ui://` HTML resource, and renders that UI (the *View*) in a
//! desktop webview behind a sandbox proxy on its own origin, speaking the MCP Apps protocol with it.
//!
//! | module | what | needs `desktop` |
//! |---|---|---|
//! | [`protocol`] | wire types and method names | no |
//! | [`ui_resource`] | tool -> UI linkage, visibility, resource metadata | no |
//! | [`sandbox`] | CSP header, frame permissions, origins | no |
//! | [`bridge`] | [`bridge::ViewSession`]: the per-View state machine | no |
//! | [`consent`] | what a person is shown before deciding, impossible to fake | no |
//! | [`server`] | MCP client connections (rmcp) | no |
//! | [`demo`] | the embedded demo MCP server | no |
//! | [`inspect`] | lints a server's tools and UI resources | no |
//! | [`conversation`] | a conversation with a model over the servers' tools, without a window | no |
//! | [`model`] | the models it runs on: OpenAI-compatible and Anthropic, streamed | no |
//! | [`profile`] | what another MCP Apps host tells a View and allows it, as data | no |
//! | [`error`] | [`Error`], the crate's one error type, and [`Result`] | no |
//! | `app` (internal) | the app without a display: opening tool calls, consent, exit goals | no |
//! | `desktop` (internal) | the app's window: tao, wry webview, custom protocols, IPC | yes |
//! | `host` | the embedding API: `Host::builder()`, `run()` or `mount()` in your window | yes |
//!
//! ## Features
//! | feature | default | what |
//! |---|---|---|
//! | `desktop` | yes | the tao/wry runtime (WebKitGTK on Linux) |
//!
//! [MCP Apps]: https://github.com/modelcontextprotocol/ext-apps

// Decides; the desktop runtime carries out. Built and tested without a display (see its docs).
#[cfg_attr(not(feature = "desktop"), allow(dead_code))]
mod app;
pub mod bridge;
/// The `mcp-apps-host` command line (the binary's `main`); not an embedding API.
#[doc(hidden)]
pub mod cli;
pub mod consent;
pub mod conversation;
pub mod demo;
pub mod error;
// Reading a server-sent event stream within bounds (the SSE transport's and the model's).
mod event_stream;
mod host_env;
pub mod inspect;
// Servers from where they are published (server.json, install links, .mcpb bundles) into the
// config file.
mod install;
pub mod model;
mod private_file;
pub mod profile;
pub mod protocol;
pub mod sandbox;
mod secrets;
pub mod server;
// Untrusted text shaped for a person: escaped, one line, bounded (re-exported by `consent`).
mod text;
pub mod ui_resource;

#[cfg(feature = "desktop")]
pub(crate) mod desktop;
#[cfg(feature = "desktop")]
pub mod host;

pub use error::{Error, Result};

/// The windowing crate the host is built on (re-exported so an embedder's window and event
/// loop are of the same version as the host's).
#[cfg(feature = "desktop")]
pub use tao;
/// The webview crate the host is built on.
#[cfg(feature = "desktop")]
pub use wry;
