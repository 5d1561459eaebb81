//! Where each View's webview goes: over its card's slot in the shell, clipped like the stream,
//! out of sight (keeping its size) while it has no slot or its proxy page has not loaded.

use std::cell::RefCell;
use std::time::Duration;

use super::{FrameLayer, ViewFrame};
use crate::app::window::{Rect, Slot};

impl FrameLayer {
    /// The shell's report of where the Views' slots are, in the clip rectangle `clip`. A View
    /// without a slot (in a closed dialog's shadow, another View's fullscreen, scrolled far
    /// away) is moved out of sight but keeps its size, so it does not lay itself out again.
    pub(crate) fn place(&mut self, clip: Rect, slots: &[Slot]) {
        use gtk::prelude::*;
        use wry::WebViewExtUnix;
        let round = |v: f64| v.round() as i32;
        let clip_px = (round(clip.x), round(clip.y), round(clip.w).max(1), round(clip.h).max(1));
        if self.clip != Some(clip_px) {
            self.clip = Some(clip_px);
            self.layer.set_margin_start(clip_px.0.max(0));
            self.layer.set_margin_top(clip_px.1.max(0));
            self.layer.set_size_request(clip_px.2, clip_px.3);
        }
        let mut seen = std::collections::HashSet::new();
        for slot in slots {
            let Some(frame) = self.views.get_mut(&slot.view) else { continue };
            seen.insert(slot.view.as_str());
            let r = slot.rect;
            let want = (round(r.x) - clip_px.0, round(r.y) - clip_px.1, round(r.w).max(1), round(r.h).max(1));
            if frame.loaded.get() {
                put(&self.layer, frame, want);
            } else {
                // Its size now (the page lays itself out for it), its place once it loaded.
                frame.wanted = Some(want);
                put(&self.layer, frame, (-10_000 - want.2, 0, want.2, want.3));
            }
        }
        for (id, frame) in self.views.iter_mut() {
            if seen.contains(id.as_str()) {
                continue;
            }
            frame.wanted = None;
            if let Some(p) = frame.placed {
                if p.0 > -10_000 {
                    let away = (-10_000 - p.2, 0, p.2, p.3);
                    self.layer.move_(&frame.webview.webview(), away.0, away.1);
                    frame.placed = Some(away);
                }
            }
        }
    }

    /// A View's proxy page loaded: it goes where the shell wanted it meanwhile.
    pub(super) fn reveal(&mut self, view: &str) {
        let Some(frame) = self.views.get_mut(view) else { return };
        frame.loaded.set(true);
        if let Some(want) = frame.wanted.take() {
            put(&self.layer, frame, want);
        }
    }

    /// The Views' webviews that are in sight, with where they are in the window.
    pub(super) fn visible(&self) -> Vec<(webkit2gtk::WebView, (i32, i32))> {
        use wry::WebViewExtUnix;
        let Some(clip) = self.clip else { return Vec::new() };
        self.views
            .values()
            .filter_map(|f| {
                let p = f.placed?;
                (p.0 > -10_000).then(|| (f.webview.webview(), (clip.0 + p.0, clip.1 + p.1)))
            })
            .collect()
    }

    /// The webview of `view`, wherever it is.
    pub(crate) fn webview_of(&self, view: &str) -> Result<webkit2gtk::WebView, String> {
        use wry::WebViewExtUnix;
        self.views.get(view).map(|f| f.webview.webview()).ok_or_else(|| format!("the View {view} has no webview"))
    }

    /// The webview of a View, once it is in sight where the shell placed it (for an
    /// interaction session's input, `crate::desktop::input`): before, its page is laid out in a 1 px box.
    pub(crate) fn webview_in_sight(&self, view: &str) -> Result<webkit2gtk::WebView, String> {
        use wry::WebViewExtUnix;
        let frame = self.views.get(view).ok_or_else(|| format!("the View {view} has no webview"))?;
        match frame.placed {
            Some((x, _, w, h)) if x > -10_000 && w > 1 && h > 1 && frame.loaded.get() => Ok(frame.webview.webview()),
            // What an interaction session is told until it is (it asks again).
            _ => Err("the View is not in sight yet".into()),
        }
    }
}

/// How far a wheel event scrolls, in CSS pixels (a notch is 50 px, as in the engine itself).
pub(super) fn wheel_px(event: &gtk::gdk::EventScroll) -> (f64, f64) {
    const NOTCH: f64 = 50.0;
    match event.direction() {
        gtk::gdk::ScrollDirection::Up => (0.0, -NOTCH),
        gtk::gdk::ScrollDirection::Down => (0.0, NOTCH),
        gtk::gdk::ScrollDirection::Left => (-NOTCH, 0.0),
        gtk::gdk::ScrollDirection::Right => (NOTCH, 0.0),
        _ => {
            let (dx, dy) = event.delta();
            (dx * NOTCH, dy * NOTCH)
        }
    }
}

/// Moves (and sizes) a View's webview to `want`, layer coordinates, if it is not there.
pub(super) fn put(layer: &gtk::Layout, frame: &mut ViewFrame, want: (i32, i32, i32, i32)) {
    use gtk::prelude::*;
    use wry::WebViewExtUnix;
    if frame.placed == Some(want) {
        return;
    }
    let widget = frame.webview.webview();
    if frame.placed.is_none_or(|p| (p.2, p.3) != (want.2, want.3)) {
        widget.set_size_request(want.2, want.3);
    }
    layer.move_(&widget, want.0, want.1);
    frame.placed = Some(want);
}

/// [`FrameLayer::reveal`] from the main loop, once the layer is free (it is in use when the
/// load is reported from inside one of its own calls).
pub(super) fn reveal_soon(me: std::rc::Weak<RefCell<FrameLayer>>, view: String) {
    gtk::glib::idle_add_local_once(move || {
        let Some(frames) = me.upgrade() else { return };
        let busy = match frames.try_borrow_mut() {
            Ok(mut layer) => {
                layer.reveal(&view);
                false
            }
            Err(_) => true,
        };
        if busy {
            gtk::glib::timeout_add_local_once(Duration::from_millis(5), move || reveal_soon(me, view));
        }
    });
}
