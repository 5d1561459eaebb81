//! The shell's page as the app keeps it: commands wait until it is ready, and the
//! conversation's record is sent again when it reloads.

use super::*;

/// The most commands the record keeps (the oldest go first).
const MAX_HISTORY: usize = 1000;

/// The shell's page: whether it is ready, what waits for it, what it gets again after a reload.
#[derive(Default)]
pub(super) struct ShellPage {
    /// The page said it is ready (set again after each reload).
    ready: bool,
    /// Commands sent before it was ready, in order.
    backlog: Vec<String>,
    /// Shell commands that are the conversation's record (messages, model context): sent again
    /// to a reloaded shell.
    history: Vec<ShellCommand>,
}

impl ShellPage {
    /// Sends `text` (a command) to the page, or keeps it until the page is ready.
    pub(super) fn send(&mut self, ui: &Ui, text: String) {
        if self.ready {
            let _ = ui.send_event(UserEvent::Shell(text));
        } else {
            self.backlog.push(text);
        }
    }

    /// The page said it is ready: what waits for it may be sent.
    pub(super) fn became_ready(&mut self) {
        self.ready = true;
    }

    /// Sends what waited for the page, in order.
    pub(super) fn flush(&mut self, ui: &Ui) {
        for text in std::mem::take(&mut self.backlog) {
            let _ = ui.send_event(UserEvent::Shell(text));
        }
    }

    /// The page reloads (in a fresh web process): commands wait again until it is ready.
    pub(super) fn reloading(&mut self) {
        self.ready = false;
    }

    pub(super) fn is_ready(&self) -> bool {
        self.ready
    }

    /// Keeps a command of the conversation's record for a reloaded page (bounded).
    pub(super) fn remember(&mut self, cmd: ShellCommand) {
        if self.history.len() >= MAX_HISTORY {
            self.history.remove(0);
        }
        self.history.push(cmd);
    }

    /// Keeps of the record only the commands for which `keep` is true.
    pub(super) fn keep(&mut self, keep: impl FnMut(&ShellCommand) -> bool) {
        self.history.retain(keep);
    }

    /// The record's last command (an answer's pieces are kept as one).
    pub(super) fn last_remembered_mut(&mut self) -> Option<&mut ShellCommand> {
        self.history.last_mut()
    }

    /// The conversation's record, in order.
    pub(super) fn history(&self) -> &[ShellCommand] {
        &self.history
    }
}

impl Controller {
    /// Keeps a shell command of the conversation's record for a reloaded shell (bounded).
    pub(super) fn remember(&mut self, cmd: ShellCommand) {
        self.shell_page.remember(cmd);
    }
}
