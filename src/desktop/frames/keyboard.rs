//! Who has the keyboard: the person gives it to a View by a click or Tab, a View's own
//! `focus()` takes nothing, and a dialog of the shell takes it from every View.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::FrameLayer;

/// The name of every View's webview widget (how the keyboard guard tells them from the shell).
const VIEW_WIDGET: &str = "mcp-apps-host-view";
/// How long after the person's click on a View (or Tab into it) the View may take the keyboard.
const PERSON_FOCUS: Duration = Duration::from_secs(1);

/// The keyboard is the person's: a View takes it only when the person clicks into it or moves
/// into it with Tab, and never while the shell shows a dialog (consent, a server's question),
/// which takes it from every View. A View's own `focus()` moves nothing (UI thread only).
#[derive(Default)]
pub(super) struct Keyboard {
    /// A dialog of the shell is open.
    dialog: Cell<bool>,
    /// When the person last pressed a button on a View or moved into one with the keyboard.
    person: Cell<Option<Instant>>,
    shell: RefCell<Option<webkit2gtk::WebView>>,
    /// The View the person last gave the keyboard to, while it has it.
    kept: RefCell<Option<gtk::glib::WeakRef<gtk::Widget>>>,
    /// Counts the moves into a View the person asked for: a move back to the shell decided
    /// before one of them is not carried out after it.
    asked_moves: Rc<Cell<u64>>,
}

impl Keyboard {
    /// The guard takes `shell`'s window: every move of its focus passes it, and the keyboard
    /// goes back to `shell` when a View took it without the person.
    pub(super) fn guard(keyboard: &Rc<Keyboard>, shell: &webkit2gtk::WebView) {
        use gtk::prelude::*;
        // Every move of the window's focus passes the keyboard guard.
        if let Some(window) = shell.toplevel().and_then(|w| w.downcast::<gtk::Window>().ok()) {
            let keyboard = Rc::downgrade(keyboard);
            window.connect_set_focus(move |_, widget| {
                if let (Some(keyboard), Some(widget)) = (keyboard.upgrade(), widget) {
                    keyboard.focus_moves_to(widget);
                }
            });
        }
        *keyboard.shell.borrow_mut() = Some(shell.clone());
    }

    /// The person's click on the View whose webview is `widget`, or Tab into it: the View may
    /// take the keyboard now.
    pub(super) fn follow_person(keyboard: &Rc<Keyboard>, widget: &webkit2gtk::WebView) {
        use gtk::prelude::*;
        widget.set_widget_name(VIEW_WIDGET);
        let weak = Rc::downgrade(keyboard);
        widget.connect_button_press_event(move |_, _| {
            if let Some(keyboard) = weak.upgrade() {
                keyboard.person.set(Some(Instant::now()));
            }
            gtk::glib::Propagation::Proceed
        });
        let weak = Rc::downgrade(keyboard);
        widget.connect_focus(move |_, _| {
            if let Some(keyboard) = weak.upgrade() {
                keyboard.person.set(Some(Instant::now()));
            }
            gtk::glib::Propagation::Proceed
        });
    }

    /// The keyboard goes back to the shell (from a handler of the focus change: a moment later),
    /// unless the person moved it into a View meanwhile (measured: on a busy machine the moment
    /// came after the person's click into the View, and undid it).
    fn to_shell_soon(&self) {
        use gtk::prelude::*;
        if let Some(shell) = self.shell.borrow().clone() {
            let (moves, at) = (self.asked_moves.clone(), self.asked_moves.get());
            gtk::glib::idle_add_local_once(move || {
                if moves.get() == at {
                    shell.grab_focus();
                }
            });
        }
    }

    /// The window's focus moves to `widget`: a View's webview may have it only if the person
    /// just asked for it, and no dialog is open; otherwise the shell takes it back.
    fn focus_moves_to(&self, widget: &gtk::Widget) {
        use gtk::prelude::*;
        if widget.widget_name() != VIEW_WIDGET {
            *self.kept.borrow_mut() = None;
            return;
        }
        // The View the person gave the keyboard keeps it until it goes elsewhere: the engine
        // takes the focus for it again (measured: twice for one click, while another window of
        // the display had the input focus), and that is no new move.
        let kept = self.kept.borrow().as_ref().and_then(|w| w.upgrade()).is_some_and(|w| &w == widget);
        let asked = kept || self.person.take().is_some_and(|t| t.elapsed() < PERSON_FOCUS);
        if asked && !self.dialog.get() {
            self.asked_moves.set(self.asked_moves.get() + 1);
            *self.kept.borrow_mut() = Some(widget.downgrade());
        }
        if self.dialog.get() || !asked {
            *self.kept.borrow_mut() = None;
            tracing::debug!(
                dialog = self.dialog.get(),
                "a View took the keyboard without the person: back to the shell"
            );
            self.to_shell_soon();
        }
    }
}

impl FrameLayer {
    /// The shell opened a dialog (`dialog`), or closed its last one: an open dialog takes the
    /// keyboard from every View now, and keeps it until it closes.
    pub(crate) fn keyboard(&self, dialog: bool) {
        use gtk::prelude::*;
        self.keyboard.dialog.set(dialog);
        if dialog {
            *self.keyboard.kept.borrow_mut() = None;
        }
        if let (true, Some(shell)) = (dialog, &self.shell) {
            shell.grab_focus();
        }
    }
}
