//! Many servers at once: each with a status, restarted with backoff when it is needed again after
//! a failure, and a tool index that keeps same-named tools of different servers apart.
//!
//! A failed server is not restarted in a loop: it is restarted *on demand* (a View calls one of
//! its tools, a person opens one, or [`Registry::restart`] is called) once its backoff has passed.
//! Each failure doubles the backoff ([`BACKOFF_START`] up to [`BACKOFF_MAX`]); a connection that
//! succeeds resets it. One server's failure never touches the others.
//!
//! **Names and labels.** Every server has a *name*, its key here: fixed when the registry is
//! made (the config key, or what [`ServerSpec::from_command_line`] / [`ServerSpec::from_url`]
//! made up, made unique with ` (2)`, ` (3)`...), never changed. Everything that finds a server
//! uses it: `--tool SERVER/TOOL`, [`Registry::find_tool`], [`Registry::port`], the shell's
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
//! registry is made and again at each connection, from the program that connection started:
//! trust kept for one program never passes to another started under the same entry.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::sync::broadcast;

use super::config::ServerSpec;
use super::connection::{auth_challenge_of, ConnectOptions, Connection, Negotiation, ServerChange};
use crate::bridge::{BoxFuture, CallControl, ServerPort};
use crate::error::{Error, Result};
use crate::protocol::jsonrpc::code;
use crate::protocol::RpcError;
use crate::ui_resource::{ToolUi, UiLinkError};

/// The wait before the first restart after a failure.
pub const BACKOFF_START: Duration = Duration::from_secs(1);
/// The longest wait between restarts.
pub const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// How often a ready connection is checked for a closed transport (a crashed process).
const LIVENESS_POLL: Duration = Duration::from_millis(250);

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerStatus {
    /// Connecting for the first time.
    Starting,
    /// Connected; its tools are indexed.
    Ready,
    /// Not connected, and why. It is restarted when next needed, not before `retry_at`.
    Failed {
        /// What went wrong, as one sentence.
        reason: String,
        /// The earliest restart on demand.
        retry_at: Instant,
    },
    /// Connecting again after a failure.
    Reconnecting {
        /// Which restart this is (1 for the first).
        attempt: u32,
    },
    /// A remote server that wants sign-in first: [`Registry::sign_in`] (or any call to one of
    /// its tools) starts it.
    SignInRequired {
        /// The server's `WWW-Authenticate` challenge.
        challenge: String,
    },
    /// A person is signing in (the browser is open).
    SigningIn,
    /// Shut down by the host.
    Stopped,
}

impl ServerStatus {
    /// A short word for displays: `starting`, `ready`, `failed`, `reconnecting`, `stopped`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Ready => "ready",
            Self::Failed { .. } => "failed",
            Self::Reconnecting { .. } => "reconnecting",
            Self::SignInRequired { .. } => "sign-in required",
            Self::SigningIn => "signing in",
            Self::Stopped => "stopped",
        }
    }
}

/// Something that happened to one server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerEvent {
    /// The server's name in the registry.
    pub server: String,
    /// What happened.
    pub kind: ServerEventKind,
}

/// What happened to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEventKind {
    /// Its status changed.
    Status(ServerStatus),
    /// It announced a change (tool and resource lists are re-read before `Tools` is sent).
    Change(ServerChange),
}

/// A server's `instructions`, as the registry has them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerInstructions {
    /// The server's name in the registry.
    pub server: String,
    /// Its identity.
    pub identity: String,
    /// How a person knows it.
    pub label: String,
    /// The instructions, as the server wrote them.
    pub text: String,
}

/// One tool of one server, as the index holds it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolEntry {
    /// The server's name in the registry.
    pub server: String,
    /// The server as a person sees it named (see [`Registry::label`]).
    pub label: String,
    /// The server's stable identity (its command line or URL: see `ServerSpec::identity`).
    pub identity: String,
    /// The tool's definition, as the server gave it.
    pub tool: Value,
    /// What it says about its UI, read once when the server listed it.
    pub ui: Result<ToolUi, UiLinkError>,
    /// The View that offers it, for an App's own tool (the spec's View-registered tools, called
    /// on the View, not the server); none for a server's tool.
    pub app_view: Option<String>,
}

impl ToolEntry {
    /// An entry for `tool` of `server` (its UI link read now).
    pub fn new(server: impl Into<String>, tool: Value) -> Self {
        let ui = crate::ui_resource::tool_ui(&tool);
        let server = server.into();
        Self { label: server.clone(), identity: server.clone(), server, tool, ui, app_view: None }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        self.tool.get("name").and_then(Value::as_str).unwrap_or_default()
    }
}

/// A snapshot of one server for displays.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerInfo {
    /// The name in the registry (unique, stable: what lookups take).
    pub name: String,
    /// What a person sees (unique too): see [`Registry::label`].
    pub label: String,
    /// What the server calls itself (its `serverInfo` title or name, one line), when that is
    /// not its label: shown beside the label, never instead of it.
    pub calls_itself: Option<String>,
    /// Its stable identity (the sandbox origin is derived from it).
    pub identity: String,
    /// Where it is.
    pub status: ServerStatus,
    /// How many tools it has (0 unless ready).
    pub tools: usize,
}

struct Entry {
    name: String,
    /// What a person sees: the name (see the module docs).
    label: String,
    /// The server's own name, once connected, when it differs from the label.
    calls_itself: Option<String>,
    spec: ServerSpec,
    /// The program's identity: at first as the spec says now, then the last connection's.
    identity: String,
    status: ServerStatus,
    connection: Option<Arc<Connection>>,
    /// The last connection that worked, kept after a failure for its tool list: a failed
    /// server's tools stay known (and callable, which restarts it).
    last: Option<Arc<Connection>>,
    failures: u32,
    /// Held while connecting, so concurrent demands share one attempt.
    connecting: Arc<tokio::sync::Mutex<()>>,
    /// Bumped on each new connection, so a watcher of an old one stops.
    generation: u64,
    /// Wakes a sign-in in progress to give it up (the person cancelled).
    cancel_sign_in: Arc<tokio::sync::Notify>,
}

impl Entry {
    /// A server not yet connected, named (and labelled) `name`.
    fn starting(name: String, spec: ServerSpec) -> Self {
        Self {
            label: name.clone(),
            calls_itself: None,
            name,
            identity: spec.identity(),
            spec,
            status: ServerStatus::Starting,
            connection: None,
            last: None,
            failures: 0,
            connecting: Arc::default(),
            generation: 0,
            cancel_sign_in: Arc::default(),
        }
    }

    /// Takes the live connection out, keeping it as `last` for its tool list.
    fn retire(&mut self) -> Option<Arc<Connection>> {
        let old = self.connection.take();
        if let Some(c) = &old {
            self.last = Some(c.clone());
        }
        old
    }
}

/// The servers of one host.
pub struct Registry {
    entries: Mutex<Vec<Entry>>,
    options: ConnectOptions,
    events: broadcast::Sender<ServerEvent>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.lock().iter().map(|e| e.name.clone()).collect();
        f.debug_struct("Registry").field("servers", &names).finish_non_exhaustive()
    }
}

impl Registry {
    /// A registry of these servers (not yet connected: see [`Registry::start`]). Servers with the
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

    fn set_status(&self, name: &str, status: ServerStatus) {
        if self.with_entry(name, |e| e.status = status.clone()).is_some() {
            let _ = self.events.send(ServerEvent { server: name.to_owned(), kind: ServerEventKind::Status(status) });
        }
    }

    /// Every status change and server announcement, from now on.
    pub fn events(&self) -> broadcast::Receiver<ServerEvent> {
        self.events.subscribe()
    }

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

    /// Connects every server, all at once; returns when each is ready, failed, or waits for
    /// sign-in (which is not started: see [`Registry::start_signing_in`]).
    pub async fn start(self: &Arc<Self>) {
        self.start_with(false).await;
    }

    /// [`Registry::start`], and servers that want sign-in get it right away (the person asked
    /// for something on them, such as a tool named on the command line).
    pub async fn start_signing_in(self: &Arc<Self>) {
        self.start_with(true).await;
    }

    async fn start_with(self: &Arc<Self>, sign_in: bool) {
        let mut set = tokio::task::JoinSet::new();
        for name in self.names() {
            let me = self.clone();
            set.spawn(async move {
                let first = me.connect(&name, false).await;
                if sign_in && matches!(first, Err(Error::AuthRequired { .. })) {
                    let _ = me.connect(&name, true).await;
                }
            });
        }
        while set.join_next().await.is_some() {}
    }

    /// The server's connection: the live one, or a new one when the server is not connected and
    /// its backoff has passed (concurrent callers share one attempt). A server still in backoff
    /// answers with its failure and when it may be tried again.
    pub async fn connection(self: &Arc<Self>, name: &str) -> Result<Arc<Connection>> {
        self.connect(name, true).await
    }

    /// Signs in to a server that asked for it (the options' authorizer takes the person through
    /// it), then connects.
    pub async fn sign_in(self: &Arc<Self>, name: &str) -> Result<Arc<Connection>> {
        self.connect(name, true).await
    }

    /// Connects a server; one that wants sign-in gets it only when `sign_in` (on demand, never
    /// at start: a browser should not pop up unasked).
    async fn connect(self: &Arc<Self>, name: &str, sign_in: bool) -> Result<Arc<Connection>> {
        let lock = self.with_entry(name, |e| e.connecting.clone()).ok_or_else(|| self.unknown(name))?;
        if let Some(conn) = self.live(name) {
            return Ok(conn);
        }
        let _guard = lock.lock().await;
        // Someone else may have connected while this caller waited.
        if let Some(conn) = self.live(name) {
            return Ok(conn);
        }
        let (spec, status, failures, known_legacy) = self
            .with_entry(name, |e| {
                let legacy = e.last.as_ref().is_some_and(|c| c.negotiation() == Some(Negotiation::Initialize));
                (e.spec.clone(), e.status.clone(), e.failures, legacy)
            })
            .ok_or_else(|| self.unknown(name))?;
        // The connection (and every request it brings to the host: sampling, elicitation) goes
        // by this registry's unique name: two servers a config calls `index` must not share
        // one name in a dialog or one sampling budget.
        let spec = spec.named(name);
        match status {
            ServerStatus::Stopped => {
                return Err(Error::Request {
                    server: name.to_owned(),
                    method: "connect".into(),
                    reason: "the server was stopped".into(),
                })
            }
            ServerStatus::Failed { reason, retry_at } if Instant::now() < retry_at => {
                let wait = retry_at.saturating_duration_since(Instant::now()).as_secs_f32().ceil();
                return Err(Error::Request {
                    server: name.to_owned(),
                    method: "connect".into(),
                    reason: format!("{reason} (next restart in {wait} s, or restart it now)"),
                });
            }
            ServerStatus::SignInRequired { challenge } => {
                if !sign_in || self.options.authorizer.is_none() {
                    return Err(Error::AuthRequired { server: name.to_owned(), challenge });
                }
                let cancel = self.with_entry(name, |e| e.cancel_sign_in.clone()).ok_or_else(|| self.unknown(name))?;
                // Registered before the status says "signing in", so no cancel can slip past.
                let cancelled = cancel.notified();
                tokio::pin!(cancelled);
                cancelled.as_mut().enable();
                self.set_status(name, ServerStatus::SigningIn);
                let signed_in = tokio::select! {
                    r = Connection::sign_in(&spec, self.options.clone(), Some(&challenge)) => r,
                    () = &mut cancelled => {
                        // Back to where it was: the person may sign in later.
                        tracing::info!(server = %name, "sign-in cancelled");
                        self.set_status(name, ServerStatus::SignInRequired { challenge: challenge.clone() });
                        return Err(Error::Request {
                            server: name.to_owned(),
                            method: "sign-in".into(),
                            reason: "sign-in was cancelled".into(),
                        });
                    }
                };
                return self.connected(name, signed_in);
            }
            ServerStatus::Starting => {}
            _ => self.set_status(name, ServerStatus::Reconnecting { attempt: failures.max(1) }),
        }
        // A server that spoke a 2025 revision before is not probed again: see `known_legacy`.
        let mut options = self.options.clone();
        options.known_legacy = known_legacy;
        let connected = Connection::connect_with(&spec, options).await;
        self.connected(name, connected)
    }

    /// Records the outcome of connecting `name`.
    fn connected(self: &Arc<Self>, name: &str, outcome: Result<Arc<Connection>>) -> Result<Arc<Connection>> {
        match outcome {
            Ok(conn) => {
                let generation = {
                    let mut entries = self.lock();
                    entries
                        .iter_mut()
                        .find(|e| e.name == name)
                        .map(|e| {
                            e.calls_itself = calls_itself(&e.label, conn.server_title().as_deref());
                            // The program this connection started is the one its tools run on.
                            e.identity = conn.identity().to_owned();
                            e.connection = Some(conn.clone());
                            e.last = None;
                            e.failures = 0;
                            e.generation += 1;
                            e.generation
                        })
                        .unwrap_or_default()
                };
                let label = self.label(name).unwrap_or_default();
                tracing::info!(server = %name, label = %label, tools = conn.tools().len(), "connected");
                self.set_status(name, ServerStatus::Ready);
                self.watch(name.to_owned(), conn.clone(), generation);
                Ok(conn)
            }
            Err(Error::AuthRequired { server, challenge }) => {
                tracing::info!(server = %name, "sign-in required");
                self.set_status(name, ServerStatus::SignInRequired { challenge: challenge.clone() });
                Err(Error::AuthRequired { server, challenge })
            }
            Err(e) => {
                let reason = e.to_string();
                self.failed(name, &reason);
                Err(e)
            }
        }
    }

    /// Gives up a sign-in in progress (the person closed the browser tab, or changed their mind):
    /// the server goes back to "sign-in required", and whoever waited gets an error.
    pub fn cancel_sign_in(&self, name: &str) {
        let signing_in = self.with_entry(name, |e| (e.status == ServerStatus::SigningIn, e.cancel_sign_in.clone()));
        if let Some((true, cancel)) = signing_in {
            cancel.notify_waiters();
        }
    }

    /// A live connection's request was refused for want of (more) sign-in: the server goes back
    /// to "sign-in required" with the new challenge (for step-up, the wider scope).
    pub async fn needs_sign_in(&self, name: &str, challenge: &str) {
        let old = self.with_entry(name, Entry::retire);
        self.set_status(name, ServerStatus::SignInRequired { challenge: challenge.to_owned() });
        if let Some(old) = old.flatten() {
            old.shutdown().await;
        }
    }

    fn live(&self, name: &str) -> Option<Arc<Connection>> {
        let conn = self.with_entry(name, |e| e.connection.clone()).flatten()?;
        if conn.is_alive() {
            return Some(conn);
        }
        // The watcher may not have noticed yet.
        self.dead(name, &conn);
        None
    }

    /// Marks a server failed and schedules its earliest restart.
    fn failed(&self, name: &str, reason: &str) {
        let failures = self
            .with_entry(name, |e| {
                e.retire();
                e.failures += 1;
                e.failures
            })
            .unwrap_or(1);
        let backoff = backoff(failures);
        tracing::warn!(server = %name, "server failed: {reason} (restart on demand after {} s)", backoff.as_secs());
        self.set_status(name, ServerStatus::Failed { reason: reason.to_owned(), retry_at: Instant::now() + backoff });
    }

    /// The connection `conn` of `name` closed: mark the server failed (once).
    fn dead(&self, name: &str, conn: &Arc<Connection>) {
        let current = self.with_entry(name, |e| e.connection.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)));
        if current != Some(true) {
            return;
        }
        let tail = conn.stderr_tail();
        let mut reason = if conn.process_id().is_some() {
            "the server process ended".to_owned()
        } else {
            "the connection to the server closed".to_owned()
        };
        if let Some(last) = tail.last() {
            reason.push_str(&format!("; its last words: {last}"));
        }
        self.failed(name, &reason);
    }

    /// Forwards a connection's announcements and notices when it dies.
    fn watch(self: &Arc<Self>, name: String, conn: Arc<Connection>, generation: u64) {
        let me = Arc::downgrade(self);
        let mut changes = conn.changes();
        tokio::spawn(async move {
            let mut poll = tokio::time::interval(LIVENESS_POLL);
            loop {
                let change = tokio::select! {
                    change = changes.recv() => change,
                    _ = poll.tick() => {
                        let Some(me) = me.upgrade() else { return };
                        if me.with_entry(&name, |e| e.generation) != Some(generation) {
                            return;
                        }
                        if !conn.is_alive() {
                            me.dead(&name, &conn);
                            return;
                        }
                        continue;
                    }
                };
                let Some(me) = me.upgrade() else { return };
                match change {
                    Ok(change) => {
                        if change == ServerChange::Tools || change == ServerChange::Resources {
                            if let Err(e) = conn.refresh().await {
                                tracing::warn!(server = %name, "re-reading lists after {change:?} failed: {e}");
                            }
                        }
                        let _ =
                            me.events.send(ServerEvent { server: name.clone(), kind: ServerEventKind::Change(change) });
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(server = %name, "{n} server announcements were dropped; re-reading lists");
                        let _ = conn.refresh().await;
                        let _ = me.events.send(ServerEvent {
                            server: name.clone(),
                            kind: ServerEventKind::Change(ServerChange::Tools),
                        });
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    /// Restarts a server now, ignoring its backoff: the old connection (if any) is shut down.
    pub async fn restart(self: &Arc<Self>, name: &str) -> Result<Arc<Connection>> {
        let old = self
            .with_entry(name, |e| {
                e.status = ServerStatus::Failed { reason: "restarting".into(), retry_at: Instant::now() };
                e.retire()
            })
            .ok_or_else(|| self.unknown(name))?;
        if let Some(old) = old {
            old.shutdown().await;
        }
        self.connection(name).await
    }

    /// Adds a server to a running registry (the person added it in the app) and starts
    /// connecting it: its status goes out as for the servers of the start, `starting` first.
    /// Returns its name (the spec's, made unique).
    pub fn add(self: &Arc<Self>, spec: ServerSpec) -> String {
        let name = {
            let mut entries = self.lock();
            let name = unique(spec.name(), entries.iter().map(|e| e.name.as_str()));
            entries.push(Entry::starting(name.clone(), spec));
            name
        };
        let _ = self
            .events
            .send(ServerEvent { server: name.clone(), kind: ServerEventKind::Status(ServerStatus::Starting) });
        let me = self.clone();
        let started = name.clone();
        tokio::spawn(async move {
            let _ = me.connect(&started, false).await;
        });
        name
    }

    /// Takes a server out (the person removed or disabled it): it leaves the list at once, its
    /// connection shuts down behind, and a last `stopped` status goes out. False when there is
    /// no such server.
    pub fn remove(&self, name: &str) -> bool {
        let removed = {
            let mut entries = self.lock();
            let Some(at) = entries.iter().position(|e| e.name == name) else { return false };
            entries.remove(at)
        };
        if let Some(conn) = removed.connection {
            tokio::spawn(async move { conn.shutdown().await });
        }
        let _ = self
            .events
            .send(ServerEvent { server: name.to_owned(), kind: ServerEventKind::Status(ServerStatus::Stopped) });
        true
    }

    /// Gives a server a new spec (its entry in the config file changed) and restarts it on it.
    pub async fn replace(self: &Arc<Self>, name: &str, spec: ServerSpec) -> Result<Arc<Connection>> {
        self.with_entry(name, |e| {
            e.spec = spec;
            e.failures = 0;
        })
        .ok_or_else(|| self.unknown(name))?;
        self.restart(name).await
    }

    /// One server's spec, as the registry runs it.
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

    /// Shuts every server down (their processes stop); they stay stopped.
    pub async fn shutdown(&self) {
        let connections: Vec<(String, Arc<Connection>)> = self
            .lock()
            .iter_mut()
            .filter_map(|e| {
                e.status = ServerStatus::Stopped;
                e.connection.take().map(|c| (e.name.clone(), c))
            })
            .collect();
        let mut set = tokio::task::JoinSet::new();
        for (name, conn) in connections {
            set.spawn(async move {
                conn.shutdown().await;
                name
            });
        }
        while let Some(done) = set.join_next().await {
            if let Ok(name) = done {
                let _ = self
                    .events
                    .send(ServerEvent { server: name, kind: ServerEventKind::Status(ServerStatus::Stopped) });
            }
        }
    }

    /// The tool index: every tool of every server, in server order. A failed server keeps its
    /// last known tools: calling one restarts it on demand.
    pub fn tools(&self) -> Vec<ToolEntry> {
        let entries = self.lock();
        entries
            .iter()
            .filter(|e| e.status != ServerStatus::Stopped)
            .filter_map(|e| {
                let conn = e.connection.as_ref().or(e.last.as_ref())?;
                Some((e.name.clone(), e.label.clone(), e.identity.clone(), conn.listed_tools()))
            })
            .flat_map(|(server, label, identity, tools)| {
                tools.into_iter().map(move |t| ToolEntry {
                    server: server.clone(),
                    label: label.clone(),
                    identity: identity.clone(),
                    tool: t.definition,
                    ui: t.ui,
                    app_view: None,
                })
            })
            .collect()
    }

    /// Every connected server's `instructions` (its own words about using it), in server
    /// order.
    pub fn instructions(&self) -> Vec<ServerInstructions> {
        let entries = self.lock();
        entries
            .iter()
            .filter(|e| e.status != ServerStatus::Stopped)
            .filter_map(|e| {
                let text = e.connection.as_ref().or(e.last.as_ref())?.instructions()?;
                Some(ServerInstructions {
                    server: e.name.clone(),
                    identity: e.identity.clone(),
                    label: e.label.clone(),
                    text,
                })
            })
            .collect()
    }

    /// Finds a tool: on `server` when given, else the one server that has it. Two servers with a
    /// tool of that name make the name ambiguous, and the error lists them.
    pub fn find_tool(&self, server: Option<&str>, tool: &str) -> Result<ToolEntry> {
        let all = self.tools();
        if let Some(server) = server {
            if !self.names().iter().any(|n| n == server) {
                return Err(self.unknown(server));
            }
            return all.into_iter().find(|t| t.server == server && t.name() == tool).ok_or_else(|| {
                let available = self.tools().into_iter().filter(|t| t.server == server).map(|t| t.name().to_owned());
                Error::NoSuchTool {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    available: available.collect::<Vec<_>>().join(", "),
                }
            });
        }
        let matching: Vec<ToolEntry> = all.iter().filter(|t| t.name() == tool).cloned().collect();
        match matching.as_slice() {
            [one] => Ok(one.clone()),
            [] => {
                // With one server, its tool names; with several, `server/tool`.
                let single = self.names().len() == 1;
                let name =
                    |t: &ToolEntry| if single { t.name().to_owned() } else { format!("{}/{}", t.server, t.name()) };
                Err(Error::NoSuchTool {
                    server: self.names().join(", "),
                    tool: tool.to_owned(),
                    available: all.iter().map(name).collect::<Vec<_>>().join(", "),
                })
            }
            several => Err(Error::Request {
                server: several.iter().map(|t| t.server.clone()).collect::<Vec<_>>().join(", "),
                method: format!("tool `{tool}`"),
                reason: "several servers have a tool of this name; say which server".into(),
            }),
        }
    }

    /// The current connection of a server, if it is connected (no restart).
    pub fn current(&self, name: &str) -> Option<Arc<Connection>> {
        self.with_entry(name, |e| e.connection.clone()).flatten()
    }

    /// A [`ServerPort`] for a View of `name`: every call goes to the server's current connection,
    /// restarting it on demand, so a View outlives a crash of its server.
    pub fn port(self: &Arc<Self>, name: &str) -> Arc<dyn ServerPort> {
        Arc::new(RegistryPort { registry: self.clone(), server: name.to_owned() })
    }

    fn unknown(&self, name: &str) -> Error {
        Error::Request {
            server: name.to_owned(),
            method: "connect".into(),
            reason: format!("no such server (configured: {})", self.names().join(", ")),
        }
    }
}

/// `wanted`, or `wanted (2)`, `wanted (3)`... : the first that is not `taken`.
fn unique<'a>(wanted: &str, taken: impl Iterator<Item = &'a str> + Clone) -> String {
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
fn calls_itself(label: &str, own: Option<&str>) -> Option<String> {
    let own = crate::consent::one_line_max(own?.trim(), LABEL_CHARS);
    (!own.trim().is_empty() && own != label).then_some(own)
}

/// The wait before restart number `failures` (1-based).
pub fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    (BACKOFF_START * 2u32.pow(doublings)).min(BACKOFF_MAX)
}

struct RegistryPort {
    registry: Arc<Registry>,
    server: String,
}

fn unavailable(e: Error) -> RpcError {
    RpcError::new(code::UNAVAILABLE, e.to_string())
}

impl ServerPort for RegistryPort {
    fn call_tool(
        &self,
        name: String,
        arguments: Option<Map<String, Value>>,
        control: CallControl,
    ) -> BoxFuture<Result<Value, RpcError>> {
        let (registry, server) = (self.registry.clone(), self.server.clone());
        Box::pin(async move {
            let conn = registry.connection(&server).await.map_err(unavailable)?;
            let CallControl { progress, cancelled, meta } = control;
            let again = CallControl { progress: progress.clone(), cancelled: None, meta: meta.clone() };
            let first =
                conn.call_tool(name.clone(), arguments.clone(), CallControl { progress, cancelled, meta }).await;
            // Refused for want of sign-in (an expired session, step-up): sign in, then once more.
            let Some(challenge) = first.as_ref().err().and_then(auth_challenge_of).map(str::to_owned) else {
                return first;
            };
            registry.needs_sign_in(&server, &challenge).await;
            let conn = registry.connection(&server).await.map_err(unavailable)?;
            conn.call_tool(name, arguments, again).await
        })
    }

    fn request(&self, method: &str, params: Value) -> BoxFuture<Result<Value, RpcError>> {
        let (registry, server, method) = (self.registry.clone(), self.server.clone(), method.to_owned());
        Box::pin(async move {
            let conn = registry.connection(&server).await.map_err(unavailable)?;
            conn.request(&method, params).await
        })
    }

    fn tool(&self, name: &str) -> Option<Value> {
        // A failed server's last known tools: the call itself restarts it.
        let known = self.registry.with_entry(&self.server, |e| e.connection.clone().or_else(|| e.last.clone()));
        known.flatten().and_then(|c| c.tool(name))
    }

    fn listed_tool(&self, name: &str) -> Option<crate::ui_resource::ListedTool> {
        let known = self.registry.with_entry(&self.server, |e| e.connection.clone().or_else(|| e.last.clone()));
        known.flatten().and_then(|c| c.listed_tool(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(4), Duration::from_secs(8));
        assert_eq!(backoff(7), BACKOFF_MAX);
        assert_eq!(backoff(u32::MAX), BACKOFF_MAX);
    }

    #[test]
    fn a_server_may_not_rename_itself_its_own_name_goes_beside_the_label() {
        // The server's own name, when it says something else, is kept to be shown beside.
        assert_eq!(
            calls_itself("index", Some("Everything Reference Server")).as_deref(),
            Some("Everything Reference Server")
        );
        assert_eq!(calls_itself("notes", Some(" Vault ")).as_deref(), Some("Vault"));
        // The same as the label, nothing at all, or only blanks: nothing beside it.
        assert_eq!(calls_itself("notes", Some("notes")), None);
        assert_eq!(calls_itself("index", None), None);
        assert_eq!(calls_itself("index", Some("  \t ")), None);
        // Untrusted text: one line, bounded.
        let own = calls_itself("index", Some("Evil\nsecond line")).unwrap();
        assert!(!own.contains('\n'), "{own}");
        assert!(calls_itself("index", Some(&"x".repeat(500))).unwrap().chars().count() < 100);
    }

    #[tokio::test]
    async fn a_given_name_is_the_label_and_lookups_take_the_name() {
        // A built-in server's name is given, not made up: its label stays (a stdio server's
        // made-up name giving way is proven end to end, tests/e2e_servers.rs).
        let registry = Registry::new(vec![ServerSpec::builtin("demo")], ConnectOptions::default());
        registry.start().await;
        assert_eq!(registry.label("demo").as_deref(), Some("demo"));
        assert_eq!(registry.servers()[0].label, "demo");
        assert!(registry.find_tool(Some("demo"), "weather").is_ok());
        registry.shutdown().await;
    }

    #[test]
    fn same_names_are_told_apart() {
        let specs = vec![ServerSpec::builtin("demo"), ServerSpec::builtin("demo"), ServerSpec::builtin("demo")];
        let registry = Registry::new(specs, ConnectOptions::default());
        assert_eq!(registry.names(), ["demo", "demo (2)", "demo (3)"]);
        assert_eq!(registry.status("demo (2)"), Some(ServerStatus::Starting));
    }

    #[tokio::test]
    async fn two_servers_with_the_same_tool_are_kept_apart() {
        let registry =
            Registry::new(vec![ServerSpec::builtin("demo"), ServerSpec::builtin("demo")], ConnectOptions::default());
        registry.start().await;
        assert!(registry.servers().iter().all(|s| s.status == ServerStatus::Ready), "{:?}", registry.servers());
        let err = registry.find_tool(None, "weather").unwrap_err().to_string();
        assert!(err.contains("several servers") && err.contains("demo (2)"), "{err}");
        let found = registry.find_tool(Some("demo (2)"), "weather").unwrap();
        assert_eq!(found.server, "demo (2)");
        let missing = registry.find_tool(Some("demo"), "nope").unwrap_err().to_string();
        assert!(missing.contains("weather"), "{missing}");
        assert!(registry.find_tool(Some("other"), "weather").unwrap_err().to_string().contains("no such server"));
        registry.shutdown().await;
        assert_eq!(registry.status("demo"), Some(ServerStatus::Stopped));
    }

    #[tokio::test]
    async fn a_server_that_cannot_start_fails_alone_and_waits_its_backoff() {
        let missing = ServerSpec::from_command_line("/nonexistent/mcp-server --stdio").unwrap();
        let registry = Registry::new(vec![missing, ServerSpec::builtin("demo")], ConnectOptions::default());
        let mut events = registry.events();
        registry.start().await;
        assert_eq!(registry.status("demo"), Some(ServerStatus::Ready));
        let Some(ServerStatus::Failed { reason, .. }) = registry.status("mcp-server") else {
            panic!("{:?}", registry.servers())
        };
        assert!(reason.contains("could not start"), "{reason}");
        // Asked again at once: still in backoff, and the error says so without spawning again.
        let again = registry.connection("mcp-server").await.unwrap_err().to_string();
        assert!(again.contains("next restart in"), "{again}");
        let mut seen = Vec::new();
        while let Ok(e) = events.try_recv() {
            seen.push((e.server, e.kind));
        }
        assert!(seen.contains(&("demo".into(), ServerEventKind::Status(ServerStatus::Ready))), "{seen:?}");
        // A restart ignores the backoff (and fails again, reported as such).
        assert!(registry.restart("mcp-server").await.is_err());
        assert!(matches!(registry.status("mcp-server"), Some(ServerStatus::Failed { .. })));
    }
}
