//! What a server is doing, and the events a server set sends when that changes.

use std::time::Instant;

use tokio::sync::broadcast;

use super::ServerSet;
use crate::server::connection::ServerChange;

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
    /// A remote server that wants sign-in first: [`ServerSet::sign_in`] (or any call to one of
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
    /// The server's name in the server set.
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

impl ServerSet {
    pub(super) fn set_status(&self, name: &str, status: ServerStatus) {
        let set = |e: &mut super::entries::Entry| {
            e.status = status.clone();
            e.since = std::time::Instant::now();
        };
        if self.with_entry(name, set).is_some() {
            let _ = self.events.send(ServerEvent { server: name.to_owned(), kind: ServerEventKind::Status(status) });
        }
    }

    /// Every status change and server announcement, from now on.
    pub fn events(&self) -> broadcast::Receiver<ServerEvent> {
        self.events.subscribe()
    }
}
