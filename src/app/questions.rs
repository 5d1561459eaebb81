//! The questions put to the person and waiting for an answer: consent dialogs of Views,
//! servers' elicitations, and the install dialog for a server opened from outside.

use super::*;

/// The open questions, and where new ones come from.
pub(super) struct Questions {
    /// Where servers and Views ask the person (see `dialogs.rs`).
    pub(super) asks: mpsc::UnboundedSender<Ask>,
    /// Open consent dialogs: their View and where the answer goes (one per View at a time).
    pub(super) dialogs: HashMap<u64, (ViewId, oneshot::Sender<bool>)>,
    /// The id of the next dialog (every dialog of the shell, of any kind).
    pub(super) next_dialog: u64,
    /// Open elicitation dialogs: their server and where the answer goes.
    pub(super) elicits: HashMap<u64, (String, oneshot::Sender<ElicitAnswer>)>,
    /// The shell commands of open elicitation dialogs, to show them again in a restarted shell.
    pub(super) elicit_cmds: HashMap<u64, ShellCommand>,
    /// The install dialog shown for a server opened from outside, and what it installs.
    pub(super) pending_install: Option<(u64, install_request::InstallRequest)>,
}

impl Questions {
    pub(super) fn new(asks: mpsc::UnboundedSender<Ask>) -> Self {
        Self {
            asks,
            dialogs: HashMap::new(),
            next_dialog: 1,
            elicits: HashMap::new(),
            elicit_cmds: HashMap::new(),
            pending_install: None,
        }
    }
}
