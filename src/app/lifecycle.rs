//! One View's life in the app, as types: [`Pending`] while its UI is read and its session starts,
//! then a [`Phase`] that only moves forward (mounted, initialized, closing, gone), and the
//! [`Milestones`] it reached on the way, which the run's exit goals read.

use serde_json::{Map, Value};

/// A View being prepared: its tool call started, its UI resource is being read and its session
/// started. It has a card with a spinner (and a Cancel button) but no webview yet.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// The server it belongs to.
    pub server: String,
    /// The arguments of its tool call (a model's call may still complete them).
    pub arguments: Map<String, Value>,
    /// The task reading the UI and starting the session (cancelled from the card).
    pub task: Option<tokio::task::AbortHandle>,
    /// The result it is known to have before its session exists: a reopened View's last
    /// result. Kept with the View from its mount, so a stop before the result reached the
    /// View reopens it with that result again instead of calling the tool.
    pub result: Option<Value>,
}

/// Where a mounted View is. The order is the only order a View goes through; it never goes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    /// Its card and webview exist; the App has not finished the handshake.
    Mounted,
    /// `ui/notifications/initialized` came: it gets input, results and the host context.
    Initialized,
    /// Its teardown is under way (it asked to close, the person closed it, a reload replaced
    /// it): nothing new is started for it.
    Closing,
    /// Torn down and unmounted. Kept for the exit goals and the restart record.
    Gone,
}

impl Phase {
    /// Whether the View still has its webview (until its teardown ended).
    pub fn is_open(self) -> bool {
        self != Phase::Gone
    }

    /// Whether it may still change: mounted or initialized, not on its way out.
    pub fn is_live(self) -> bool {
        self < Phase::Closing
    }

    /// `self` moved to `to`, or `self` when that would go back (a late `initialized` after the
    /// teardown began stays closing).
    pub fn advanced(self, to: Phase) -> Phase {
        self.max(to)
    }
}

/// What a View reached, whatever its phase now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Milestones {
    /// It completed the handshake.
    pub initialized: bool,
    /// Its tool result reached it.
    pub result_delivered: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_only_moves_forward() {
        assert_eq!(Phase::Mounted.advanced(Phase::Initialized), Phase::Initialized);
        assert_eq!(Phase::Closing.advanced(Phase::Initialized), Phase::Closing);
        assert_eq!(Phase::Gone.advanced(Phase::Closing), Phase::Gone);
        assert!(Phase::Closing.is_open() && !Phase::Closing.is_live());
        assert!(Phase::Initialized.is_live() && !Phase::Gone.is_open());
    }
}
