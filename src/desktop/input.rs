//! An interaction session's input in a View's webview (`crate::app::interaction`): where an
//! element is (asked of the web process, `webext/session.c`), and clicks and keys delivered
//! through GTK's own event dispatch, as the display server's would be. A click reaches the
//! webview's handlers as the person's does (so it is the person's gesture in the View, and the
//! View may take the keyboard after it, as after the person's click); keys go where the window's
//! keyboard focus is, so a step that types into a View the keyboard rules keep out fails.

use std::cell::RefCell;
use std::rc::Rc;

use gtk::gdk;
use gtk::prelude::*;

use super::frames::FrameLayer;
use crate::app::interaction::Found;
use crate::app::window::InputOp;

/// The message names of `webext/session.c`.
const FIND: &str = "mcp-apps-host:find";
const TEXT: &str = "mcp-apps-host:text";
const INSPECT: &str = "mcp-apps-host:inspect-frame";
const EVALUATE: &str = "mcp-apps-host:evaluate";

/// Carries out one input operation; each answers on its own channel.
pub(crate) fn apply(frames: &Rc<RefCell<FrameLayer>>, op: InputOp) {
    match op {
        InputOp::Find { view, target, done } => match webview_of(frames, &view) {
            Ok(webview) => ask_page(&webview, FIND, Some(&target.clone()), move |answer| {
                let _ = done.send(answer.and_then(|a| Found::from_answer(&a, &target)));
            }),
            Err(e) => {
                let _ = done.send(Err(e));
            }
        },
        InputOp::Text { view, done } => match webview_of(frames, &view) {
            Ok(webview) => ask_page(&webview, TEXT, None, move |answer| {
                let _ = done.send(answer);
            }),
            Err(e) => {
                let _ = done.send(Err(e));
            }
        },
        // The test interface's: any View with a webview, in sight or not (a runner reads it as
        // soon as it initialized).
        InputOp::InspectFrame { view, done } => match frames.borrow().webview_of(&view) {
            Ok(webview) => ask_page(&webview, INSPECT, None, move |answer| {
                let _ = done.send(answer);
            }),
            Err(e) => {
                let _ = done.send(Err(e));
            }
        },
        InputOp::Evaluate { view, script, done } => match frames.borrow().webview_of(&view) {
            Ok(webview) => ask_page(&webview, EVALUATE, Some(&script), move |answer| {
                let _ = done.send(answer);
            }),
            Err(e) => {
                let _ = done.send(Err(e));
            }
        },
        InputOp::Click { view, x, y, done } => {
            let _ = done.send(webview_of(frames, &view).and_then(|w| click(&w, x, y)));
        }
        InputOp::Keys { view, text, done } => {
            let _ = done.send(
                webview_of(frames, &view).and_then(|w| text.chars().try_for_each(|c| key(&w, keyval_of_char(c)))),
            );
        }
        InputOp::Key { view, key: name, done } => {
            let _ = done.send(webview_of(frames, &view).and_then(|w| key(&w, keyval_of_name(&name))));
        }
    }
}

fn webview_of(frames: &Rc<RefCell<FrameLayer>>, view: &str) -> Result<webkit2gtk::WebView, String> {
    frames.borrow().webview_in_sight(view)
}

/// Sends `name` (with `param`) to the webview's page and hands its string answer to `done`.
fn ask_page(
    webview: &webkit2gtk::WebView,
    name: &str,
    param: Option<&str>,
    done: impl FnOnce(Result<String, String>) + 'static,
) {
    use gtk::glib::ToVariant;
    use webkit2gtk::{UserMessageExt, WebViewExt};
    let message = webkit2gtk::UserMessage::new(name, param.map(|p| p.to_variant()).as_ref());
    webview.send_message_to_page(&message, None::<&gtk::gio::Cancellable>, move |reply| {
        done(match reply {
            Ok(reply) => Ok(reply.parameters().and_then(|p| p.str().map(str::to_owned)).unwrap_or_default()),
            Err(e) => Err(format!("the View's web process did not answer: {e}")),
        })
    });
}

/// Milliseconds for an event's time (GDK's clock: the monotonic one).
fn now() -> u32 {
    (gtk::glib::monotonic_time() / 1000) as u32
}

/// A pointer move, a press and a release of the primary button at (x, y) of the webview.
fn click(webview: &webkit2gtk::WebView, x: f64, y: f64) -> Result<(), String> {
    let alloc = webview.allocation();
    let (w, h) = (f64::from(alloc.width()), f64::from(alloc.height()));
    if !(0.0..w).contains(&x) || !(0.0..h).contains(&y) {
        return Err(format!("the element is outside the View's webview ({x:.0}, {y:.0} in {w:.0}×{h:.0})"));
    }
    let window = webview.window().ok_or("the View's webview is not on screen")?;
    // A webview drawn into its parent's window has its place there.
    let (ex, ey) = if webview.has_window() { (x, y) } else { (x + f64::from(alloc.x()), y + f64::from(alloc.y())) };
    let (rx, ry) = {
        let (_, ox, oy) = window.origin();
        (f64::from(ox) + ex, f64::from(oy) + ey)
    };
    let pointer = webview.display().default_seat().and_then(|s| s.pointer());
    let time = now();
    let mut motion =
        raw::pointer(gdk::EventType::MotionNotify, &window, time, (ex, ey, rx, ry), 0, gdk::ModifierType::empty());
    motion.set_device(pointer.as_ref());
    gtk::main_do_event(&mut motion);
    for (kind, state) in [
        (gdk::EventType::ButtonPress, gdk::ModifierType::empty()),
        (gdk::EventType::ButtonRelease, gdk::ModifierType::BUTTON1_MASK),
    ] {
        let mut event = raw::pointer(kind, &window, time, (ex, ey, rx, ry), 1, state);
        event.set_device(pointer.as_ref());
        gtk::main_do_event(&mut event);
    }
    Ok(())
}

/// A press and a release of the key `keyval`, where the window's keyboard focus is (the person's
/// keys go to the window, which hands them to its focus).
fn key(webview: &webkit2gtk::WebView, keyval: Option<gdk::keys::Key>) -> Result<(), String> {
    let keyval = keyval.ok_or("no key for that character")?;
    if !webview.is_focus() {
        return Err("the keyboard is not in the View (click into it first)".into());
    }
    let toplevel = webview.toplevel().ok_or("the View's webview has no window")?;
    let window = toplevel.window().ok_or("the window is not on screen")?;
    let display = webview.display();
    let keyboard = display.default_seat().and_then(|s| s.keyboard());
    let keycode = gdk::Keymap::for_display(&display)
        .and_then(|m| m.entries_for_keyval(*keyval).first().map(|k| k.keycode()))
        .unwrap_or(0);
    let text = keyval.to_unicode().filter(|c| !c.is_control()).map(String::from).unwrap_or_default();
    for kind in [gdk::EventType::KeyPress, gdk::EventType::KeyRelease] {
        let mut event = raw::key(kind, &window, now(), *keyval, keycode as u16, &text);
        event.set_device(keyboard.as_ref());
        gtk::main_do_event(&mut event);
    }
    Ok(())
}

fn keyval_of_char(c: char) -> Option<gdk::keys::Key> {
    match c {
        '\n' => Some(gdk::keys::constants::Return),
        '\t' => Some(gdk::keys::constants::Tab),
        c => Some(gdk::keys::Key::from_unicode(c)).filter(|k| *k != gdk::keys::constants::VoidSymbol),
    }
}

fn keyval_of_name(name: &str) -> Option<gdk::keys::Key> {
    use gdk::keys::constants as k;
    Some(match name {
        "Enter" => k::Return,
        "Tab" => k::Tab,
        "Escape" => k::Escape,
        "Backspace" => k::BackSpace,
        "Delete" => k::Delete,
        "Space" => k::space,
        "ArrowUp" => k::Up,
        "ArrowDown" => k::Down,
        "ArrowLeft" => k::Left,
        "ArrowRight" => k::Right,
        "Home" => k::Home,
        "End" => k::End,
        one => return one.chars().next().and_then(keyval_of_char),
    })
}

/// Events with the fields the `gdk` crate has no setters for.
///
/// A reviewed exception to the crate's `unsafe_code = "deny"`: each function makes an event of
/// one kind with `gdk_event_new` and writes the fields of that kind's member of the `GdkEvent`
/// union (`gdk/gdkevents.h`); the window reference and the string are the event's own, which
/// `gdk_event_free` releases.
#[allow(unsafe_code)]
mod raw {
    use gtk::gdk;
    use gtk::glib::translate::{IntoGlib, ToGlibPtr, ToGlibPtrMut};

    /// A motion (button 0) or button event at `at` = (x, y in the window, x, y on the screen).
    pub(super) fn pointer(
        kind: gdk::EventType,
        window: &gdk::Window,
        time: u32,
        at: (f64, f64, f64, f64),
        button: u32,
        state: gdk::ModifierType,
    ) -> gdk::Event {
        let mut event = gdk::Event::new(kind);
        let ptr: *mut gdk::ffi::GdkEvent = ToGlibPtrMut::to_glib_none_mut(&mut event).0;
        // SAFETY: `ptr` is the event just made, of `kind`; only that kind's member is written.
        unsafe {
            if kind == gdk::EventType::MotionNotify {
                let m = &mut (*ptr).motion;
                m.window = window.to_glib_full();
                m.time = time;
                (m.x, m.y, m.x_root, m.y_root) = at;
                m.state = state.into_glib();
            } else {
                let b = &mut (*ptr).button;
                b.window = window.to_glib_full();
                b.time = time;
                (b.x, b.y, b.x_root, b.y_root) = at;
                b.button = button;
                b.state = state.into_glib();
            }
        }
        event
    }

    /// A key press or release of `keyval` that types `text` (empty for a key that types nothing).
    pub(super) fn key(
        kind: gdk::EventType,
        window: &gdk::Window,
        time: u32,
        keyval: u32,
        keycode: u16,
        text: &str,
    ) -> gdk::Event {
        let mut event = gdk::Event::new(kind);
        let text = std::ffi::CString::new(text).unwrap_or_default();
        let ptr: *mut gdk::ffi::GdkEvent = ToGlibPtrMut::to_glib_none_mut(&mut event).0;
        // SAFETY: `ptr` is the key event just made; the string is a copy the event owns.
        unsafe {
            let k = &mut (*ptr).key;
            k.window = window.to_glib_full();
            k.time = time;
            k.keyval = keyval;
            k.hardware_keycode = keycode;
            k.length = text.as_bytes().len() as i32;
            k.string = gtk::glib::ffi::g_strdup(text.as_ptr());
        }
        event
    }
}
