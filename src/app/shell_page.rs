//! The shell's page as the app keeps it: commands wait until it is ready, and the
//! conversation's record is sent again when it reloads.

use super::*;

/// The shell's page: whether it is ready, what waits for it, what it gets again after a reload.
#[derive(Default)]
pub(super) struct ShellPage {
    /// The page said it is ready (set again after each reload).
    pub(super) ready: bool,
    /// Commands sent before it was ready, in order.
    pub(super) backlog: Vec<String>,
    /// Shell commands that are the conversation's record (messages, model context): sent again
    /// to a reloaded shell.
    pub(super) history: Vec<ShellCommand>,
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
}
