//! Connecting a server on demand (one attempt shared by whoever asks) and signing in.

use std::sync::Arc;
use std::time::Instant;

use super::entries::{calls_itself, Entry};
use super::{ServerSet, ServerStatus};
use crate::error::{Error, Result};
use crate::server::connection::{Connection, Negotiation};

/// Why a server whose start the person cancelled is not running.
pub const START_CANCELLED: &str = "You stopped its start.";
impl ServerSet {
    /// Connects every server, all at once; returns when each is ready, failed, or waits for
    /// sign-in (which is not started: see [`ServerSet::start_signing_in`]).
    pub async fn start(self: &Arc<Self>) {
        self.start_with(false).await;
    }

    /// [`ServerSet::start`], and servers that want sign-in get it right away (the person asked
    /// for something on them, such as a tool named on the command line).
    pub async fn start_signing_in(self: &Arc<Self>) {
        self.start_with(true).await;
    }

    pub(super) async fn start_with(self: &Arc<Self>, sign_in: bool) {
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
    pub(super) async fn connect(self: &Arc<Self>, name: &str, sign_in: bool) -> Result<Arc<Connection>> {
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
        // by this server set's unique name: two servers a config calls `index` must not share
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
        let cancel = self.with_entry(name, |e| e.cancel_start.clone()).ok_or_else(|| self.unknown(name))?;
        let cancelled = cancel.notified();
        tokio::pin!(cancelled);
        cancelled.as_mut().enable();
        let connected = tokio::select! {
            connected = Connection::connect_with(&spec, options) => connected,
            // Dropping the attempt ends its process (children are killed on drop).
            () = &mut cancelled => {
                tracing::info!(server = %name, "start cancelled");
                self.with_entry(name, |e| e.retire());
                self.set_status(name, ServerStatus::Failed { reason: START_CANCELLED.to_owned(), retry_at: Instant::now() });
                return Err(Error::Request { server: name.to_owned(), method: "connect".into(), reason: START_CANCELLED.into() });
            }
        };
        self.connected(name, connected)
    }

    /// Gives up a start in progress (a first `npx` download the person will not wait for): the
    /// server's process ends, and it is failed with [`START_CANCELLED`], ready to retry at once.
    pub fn cancel_start(&self, name: &str) {
        let starting = self.with_entry(name, |e| {
            (matches!(e.status, ServerStatus::Starting | ServerStatus::Reconnecting { .. }), e.cancel_start.clone())
        });
        if let Some((true, cancel)) = starting {
            cancel.notify_waiters();
        }
    }

    /// Records the outcome of connecting `name`.
    pub(super) fn connected(self: &Arc<Self>, name: &str, outcome: Result<Arc<Connection>>) -> Result<Arc<Connection>> {
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

    pub(super) fn live(&self, name: &str) -> Option<Arc<Connection>> {
        let conn = self.with_entry(name, |e| e.connection.clone()).flatten()?;
        if conn.is_alive() {
            return Some(conn);
        }
        // The watcher may not have noticed yet.
        self.dead(name, &conn);
        None
    }

    /// The current connection of a server, if it is connected (no restart).
    pub fn current(&self, name: &str) -> Option<Arc<Connection>> {
        self.with_entry(name, |e| e.connection.clone()).flatten()
    }
}
