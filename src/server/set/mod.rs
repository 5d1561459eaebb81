//! Many servers at once: each with a status, restarted with backoff when it is needed again after
//! a failure, and a tool index that keeps same-named tools of different servers apart.
//!
//! A failed server is not restarted in a loop: it is restarted *on demand* (a View calls one of
//! its tools, a person opens one, or [`ServerSet::restart`] is called) once its backoff has passed.
//! Each failure doubles the backoff ([`BACKOFF_START`] up to [`BACKOFF_MAX`]); a connection that
//! succeeds resets it. One server's failure never touches the others.
//!
//! **Names and labels.** Every server has a *name*, its key here: fixed when the server set is
//! made (the config key, or what [`ServerSpec::from_command_line`] / [`ServerSpec::from_url`]
//! made up, made unique with ` (2)`, ` (3)`...), never changed. Everything that finds a server
//! uses it: `--tool SERVER/TOOL`, [`ServerSet::find_tool`], [`ServerSet::port`], the shell's
//! restart and sign-in buttons. A server's *label*, what a person sees (the picker, a View's
//! card, dialogs, approval questions, log lines) and what the model's tool descriptions name it
//! by, is that same name: a server may not rename itself. Its own `serverInfo.title` (else
//! `serverInfo.name`) is untrusted text; it is kept apart as [`ServerInfo::calls_itself`] and
//! shown *beside* the label (`notes (calls itself "Vault")`), never instead of it, so a server
//! that calls itself `host` or the name of another configured server cannot pass for either. A
//! name the host made up (`index` for `node dist/index.js`) stands too: it is unique, and the
//! server's own name beside it says what it is. Renaming the key instead would break every
//! lookup made with the name the person typed, and the key would change under a running View.
//!
//! **Identity.** What tells programs apart (see [`ServerSpec::identity`]) is taken when the
//! set is made and again at each connection, from the program that connection started:
//! trust kept for one program never passes to another started under the same entry.

use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use crate::error::Error;
use crate::server::config::ServerSpec;
use crate::server::connection::ConnectOptions;
use entries::{unique, Entry};

mod connect;
mod entries;
mod events;
mod lifecycle;
mod port;
mod tools;

pub use connect::START_CANCELLED;
pub use entries::ServerInfo;
pub use events::{ServerEvent, ServerEventKind, ServerStatus};
pub use lifecycle::{backoff, BACKOFF_MAX, BACKOFF_START};
pub use tools::{ServerInstructions, ToolEntry};

/// The servers of one host.
pub struct ServerSet {
    entries: Mutex<Vec<Entry>>,
    options: ConnectOptions,
    events: broadcast::Sender<ServerEvent>,
}

impl std::fmt::Debug for ServerSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.lock().iter().map(|e| e.name.clone()).collect();
        f.debug_struct("ServerSet").field("servers", &names).finish_non_exhaustive()
    }
}

impl ServerSet {
    /// A server set of these servers (not yet connected: see [`ServerSet::start`]). Servers with the
    /// same display name get ` (2)`, ` (3)`... appended so every name is unique.
    pub fn new(specs: Vec<ServerSpec>, options: ConnectOptions) -> Arc<Self> {
        let mut entries: Vec<Entry> = Vec::new();
        for spec in specs {
            let name = unique(spec.name(), entries.iter().map(|e| e.name.as_str()));
            entries.push(Entry::starting(name, spec));
        }
        let (events, _) = broadcast::channel(256);
        Arc::new(Self { entries: Mutex::new(entries), options, events })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn with_entry<T>(&self, name: &str, f: impl FnOnce(&mut Entry) -> T) -> Option<T> {
        self.lock().iter_mut().find(|e| e.name == name).map(f)
    }

    fn unknown(&self, name: &str) -> Error {
        Error::Request {
            server: name.to_owned(),
            method: "connect".into(),
            reason: format!("no such server (configured: {})", self.names().join(", ")),
        }
    }
}

#[cfg(test)]
mod tests;
