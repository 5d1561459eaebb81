//! A server failing, being watched, restarted with backoff, added, replaced, removed and shut down.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use super::entries::{unique, Entry};
use super::{ServerEvent, ServerEventKind, ServerSet, ServerStatus};
use crate::error::Result;
use crate::server::config::ServerSpec;
use crate::server::connection::{Connection, ServerChange};

/// The wait before the first restart after a failure.
pub const BACKOFF_START: Duration = Duration::from_secs(1);

/// The longest wait between restarts.
pub const BACKOFF_MAX: Duration = Duration::from_secs(60);

/// How often a ready connection is checked for a closed transport (a crashed process).
const LIVENESS_POLL: Duration = Duration::from_millis(250);

impl ServerSet {
    /// Marks a server failed and schedules its earliest restart.
    pub(super) fn failed(&self, name: &str, reason: &str) {
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
    pub(super) fn dead(&self, name: &str, conn: &Arc<Connection>) {
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
    pub(super) fn watch(self: &Arc<Self>, name: String, conn: Arc<Connection>, generation: u64) {
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

    /// Adds a server to a running server set (the person added it in the app) and starts
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
}

/// The wait before restart number `failures` (1-based).
pub fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    (BACKOFF_START * 2u32.pow(doublings)).min(BACKOFF_MAX)
}
