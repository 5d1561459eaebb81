//! The window's keyboard shortcuts, as GNOME apps have them: Ctrl+Q quits, Ctrl+W closes the
//! window (the app's one window, so it quits too), Ctrl+N starts a new conversation, Ctrl+comma
//! opens the settings, F1 and Ctrl+? show the shortcuts. They are the window's accelerators,
//! which GTK runs before the focused widget sees the key: they work wherever the keyboard is,
//! in the shell or in a View's webview (a View cannot keep Ctrl+Q from the person, as a web page
//! cannot keep Ctrl+W from a browser).

use gtk::gdk;
use gtk::prelude::*;
use tokio::sync::mpsc;

use crate::app::window::{HostInput, Shortcut};

/// Each shortcut: its key, its modifiers, what it does.
fn table() -> [(gdk::keys::Key, gdk::ModifierType, Shortcut); 6] {
    use gdk::keys::constants as key;
    let ctrl = gdk::ModifierType::CONTROL_MASK;
    [
        (key::q, ctrl, Shortcut::Quit),
        (key::w, ctrl, Shortcut::Quit),
        (key::n, ctrl, Shortcut::NewConversation),
        (key::comma, ctrl, Shortcut::Settings),
        (key::F1, gdk::ModifierType::empty(), Shortcut::Shortcuts),
        (key::question, ctrl | gdk::ModifierType::SHIFT_MASK, Shortcut::Shortcuts),
    ]
}

/// Puts the shortcuts on the host's own window (never on an embedder's: their window, their keys).
pub(super) fn install(window: &tao::window::Window, to_controller: &mpsc::UnboundedSender<HostInput>) {
    use tao::platform::unix::WindowExtUnix;
    let group = gtk::AccelGroup::new();
    for (key, mods, shortcut) in table() {
        let line = to_controller.clone();
        group.connect_accel_group(*key, mods, gtk::AccelFlags::VISIBLE, move |_, _, _, _| {
            let _ = line.send(HostInput::Shortcut(shortcut));
            true
        });
    }
    window.gtk_window().add_accel_group(&group);
}
