//! One entry per server: its name, label and identity, and the snapshots displays show.

use std::sync::Arc;

use super::{ServerSet, ServerStatus};
use crate::server::config::ServerSpec;
use crate::server::connection::Connection;

/// A snapshot of one server for displays.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerInfo {
    /// The name in the server set (unique, stable: what lookups take).
    pub name: String,
    /// What a person sees (unique too): see [`ServerSet::label`].
    pub label: String,
    /// What the server calls itself (its `serverInfo` title or name, one line), when that is
    /// not its label: shown beside the label, never instead of it.
    pub calls_itself: Option<String>,
    /// Its stable identity (the sandbox origin is derived from it).
    pub identity: String,
    /// Where it is.
    pub status: ServerStatus,
    /// Since when it is there (a display says how long a server has been starting).
    pub since: std::time::Instant,
    /// How many tools it has (0 unless ready).
    pub tools: usize,
}

pub(super) struct Entry {
    pub(super) name: String,
    /// What a person sees: the name (see the module docs).
    pub(super) label: String,
    /// The server's own name, once connected, when it differs from the label.
    pub(super) calls_itself: Option<String>,
    pub(super) spec: ServerSpec,
    /// The program's identity: at first as the spec says now, then the last connection's.
    pub(super) identity: String,
    pub(super) status: ServerStatus,
    /// When `status` was last set.
    pub(super) since: std::time::Instant,
    pub(super) connection: Option<Arc<Connection>>,
    /// The last connection that worked, kept after a failure for its tool list: a failed
    /// server's tools stay known (and callable, which restarts it).
    pub(super) last: Option<Arc<Connection>>,
    pub(super) failures: u32,
    /// Held while connecting, so concurrent demands share one attempt.
    pub(super) connecting: Arc<tokio::sync::Mutex<()>>,
    /// Bumped on each new connection, so a watcher of an old one stops.
    pub(super) generation: u64,
    /// Wakes a sign-in in progress to give it up (the person cancelled).
    pub(super) cancel_sign_in: Arc<tokio::sync::Notify>,
    /// Wakes a start in progress to give it up (the person cancelled).
    pub(super) cancel_start: Arc<tokio::sync::Notify>,
}

impl Entry {
    /// A server not yet connected, named (and labelled) `name`.
    pub(super) fn starting(name: String, spec: ServerSpec) -> Self {
        Self {
            label: name.clone(),
            calls_itself: None,
            name,
            identity: spec.identity(),
            spec,
            status: ServerStatus::Starting,
            since: std::time::Instant::now(),
            connection: None,
            last: None,
            failures: 0,
            connecting: Arc::default(),
            generation: 0,
            cancel_sign_in: Arc::default(),
            cancel_start: Arc::default(),
        }
    }

    /// Takes the live connection out, keeping it as `last` for its tool list.
    pub(super) fn retire(&mut self) -> Option<Arc<Connection>> {
        let old = self.connection.take();
        if let Some(c) = &old {
            self.last = Some(c.clone());
        }
        old
    }
}

impl ServerSet {
    /// The servers' names, in configuration order.
    pub fn names(&self) -> Vec<String> {
        self.lock().iter().map(|e| e.name.clone()).collect()
    }

    /// A snapshot of every server.
    pub fn servers(&self) -> Vec<ServerInfo> {
        self.lock()
            .iter()
            .map(|e| ServerInfo {
                name: e.name.clone(),
                label: e.label.clone(),
                calls_itself: e.calls_itself.clone(),
                identity: e.identity.clone(),
                status: e.status.clone(),
                since: e.since,
                tools: e.connection.as_ref().or(e.last.as_ref()).map_or(0, |c| c.tools().len()),
            })
            .collect()
    }

    /// One server's status.
    pub fn status(&self, name: &str) -> Option<ServerStatus> {
        self.with_entry(name, |e| e.status.clone())
    }

    /// What a person sees for server `name` (the picker, a View's card, dialogs, log lines):
    /// the name the person, the config or the host gave it, never one the server chose (see the
    /// module docs). Lookups never take a label: they take the name.
    pub fn label(&self, name: &str) -> Option<String> {
        self.with_entry(name, |e| e.label.clone())
    }

    /// What server `name` calls itself, when that differs from its label (shown beside it).
    pub fn calls_itself(&self, name: &str) -> Option<String> {
        self.with_entry(name, |e| e.calls_itself.clone()).flatten()
    }

    /// One server's identity: its program's (see [`ServerSpec::identity`]), as last connected.
    pub fn identity(&self, name: &str) -> Option<String> {
        self.with_entry(name, |e| e.identity.clone())
    }

    /// One server's spec, as the server set runs it.
    pub fn spec(&self, name: &str) -> Option<ServerSpec> {
        self.with_entry(name, |e| e.spec.clone())
    }

    /// The last lines a local server wrote on stderr (its live connection's, else its last
    /// one's), as it wrote them: untrusted text.
    pub fn stderr_tail(&self, name: &str) -> Vec<String> {
        self.with_entry(name, |e| e.connection.as_ref().or(e.last.as_ref()).map(|c| c.stderr_tail()))
            .flatten()
            .unwrap_or_default()
    }
}

/// `wanted`, or `wanted (2)`, `wanted (3)`... : the first that is not `taken`.
pub(super) fn unique<'a>(wanted: &str, taken: impl Iterator<Item = &'a str> + Clone) -> String {
    let mut candidate = wanted.to_owned();
    let mut n = 2;
    while taken.clone().any(|t| t == candidate) {
        candidate = format!("{wanted} ({n})");
        n += 1;
    }
    candidate
}

/// The longest label, in characters (a server's own name is untrusted text).
const LABEL_CHARS: usize = 60;

/// What a server calls itself (`own`, its `serverInfo` title or name) as one line of at most
/// [`LABEL_CHARS`], when it says something other than its `label`: shown beside the label,
/// never instead of it (see the module docs).
pub(super) fn calls_itself(label: &str, own: Option<&str>) -> Option<String> {
    let own = crate::consent::one_line_max(own?.trim(), LABEL_CHARS);
    (!own.trim().is_empty() && own != label).then_some(own)
}
