//! Messages into the Views: the sessions' JSON texts reach each View's proxy by a script in
//! its webview's top document, batched per turn of the UI thread ([`post_line`]).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::webview::proxy_on_top;
use super::FrameLayer;
use crate::app::window::PostLine;

impl FrameLayer {
    /// Hands `msg` (JSON text) to the View's proxy, which posts it to the View.
    pub(super) fn post(&self, view: &str, msg: &str) {
        self.deliver(view, &[msg]);
    }

    /// Hands `msgs` (JSON texts, in order) to the View's proxy in one script.
    pub(super) fn deliver(&self, view: &str, msgs: &[&str]) {
        let Some(frame) = self.views.get(view) else { return };
        // The server's kept storage goes first, with the first message (the resource, which
        // makes the proxy load the View's document).
        let seed = frame.seed.borrow_mut().take();
        let with_seed: Vec<&str>;
        let msgs = match &seed {
            Some(seed) => {
                with_seed = std::iter::once(seed.as_str()).chain(msgs.iter().copied()).collect();
                &with_seed[..]
            }
            None => msgs,
        };
        // JSON text goes in as a string literal and is parsed by the proxy: an object literal
        // would give a `"__proto__"` key its special meaning. Several go as one JSON array
        // (each text is JSON the bridge serialized, so the array is too).
        let script = match (proxy_on_top(), msgs) {
            (true, [one]) => format!("window.__mcpProxy&&window.__mcpProxy.deliver({})", string_literal(one)),
            (true, _) => format!(
                "window.__mcpProxy&&window.__mcpProxy.deliverAll({})",
                string_literal(&format!("[{}]", msgs.join(",")))
            ),
            // Scripts run in the top document only: it posts the text to its proxy frame, which
            // takes it only from its parent on the host's frame origin (the View cannot post as
            // that window, nor read or script it).
            //
            // Not from the script itself: WebKit runs a script of the host's as a user gesture,
            // and a window's postMessage hands the gesture on, so the View would hear every
            // message of the host inside a gesture the person never made, and could write the
            // clipboard (measured) or do anything else a gesture allows. The text waits in a
            // queue of the top document's, and the post happens in a task of a MessageChannel's,
            // which carries no gesture; one channel per page and one queue keep the order.
            (false, _) => format!(
                "(function(t){{var w=window;if(!w.__mcpQueue){{var q=w.__mcpQueue=[],c=new MessageChannel();\
                 c.port1.onmessage=function(){{var f=document.querySelector(\"iframe\");while(q.length){{var m=q.shift();\
                 if(f&&f.contentWindow)f.contentWindow.postMessage(m,{})}}}};w.__mcpPing=c.port2}}\
                 w.__mcpQueue.push(t);w.__mcpPing.postMessage(0)}})({})",
                string_literal(&crate::sandbox::origin::sandbox_origin(&frame.label)),
                string_literal(&format!("[{}]", msgs.join(",")))
            ),
        };
        if let Err(e) = frame.webview.evaluate_script(&script) {
            tracing::warn!(view, "message for the View failed: {e}");
        }
    }

    /// Delivers what the sessions posted since the last turn: one script per View, its
    /// messages in the order they were posted.
    pub(super) fn deliver_batch(&self, batch: &[(String, String)]) {
        let mut by_view: Vec<(&str, Vec<&str>)> = Vec::new();
        for (view, msg) in batch {
            match by_view.iter_mut().find(|(v, _)| v == view) {
                Some((_, msgs)) => msgs.push(msg),
                None => by_view.push((view, vec![msg])),
            }
        }
        for (view, msgs) in by_view {
            self.deliver(view, &msgs);
        }
    }
}

/// `text` as a JavaScript string literal (JSON's string syntax is one).
pub(super) fn string_literal(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"null\"".into())
}

/// The most messages one turn of the post line delivers; the rest go the turn after, so the
/// UI thread gets to its other work between.
const MAX_POSTS_PER_TURN: usize = 512;

/// The post line into the Views' webviews ([`PostLine`]): the sessions' messages go on a
/// channel that a task on the GTK main context drains. Each wake-up delivers everything that
/// arrived since (one script per View), where an event loop event per message would cost a
/// wake-up and a script each (measured in BENCHMARKS.md).
pub(crate) fn post_line(frames: &Rc<RefCell<FrameLayer>>) -> PostLine {
    let (tx, mut rx) = mpsc::unbounded_channel::<(String, String)>();
    let weak = Rc::downgrade(frames);
    gtk::glib::MainContext::default().spawn_local(async move {
        let mut batch = Vec::new();
        while let Some(first) = rx.recv().await {
            batch.push(first);
            while batch.len() < MAX_POSTS_PER_TURN {
                let Ok(next) = rx.try_recv() else { break };
                batch.push(next);
            }
            let Some(frames) = weak.upgrade() else { return };
            // Held only by the UI thread's own handlers, never across a turn of the loop; a
            // nested loop (a modal dialog) could meet it held: try again shortly.
            loop {
                if let Ok(frames) = frames.try_borrow() {
                    frames.deliver_batch(&batch);
                    break;
                }
                gtk::glib::timeout_future(Duration::from_millis(2)).await;
            }
            // A full turn: give the loop back before the next (a ready channel would let this
            // task run on without yielding).
            let full = batch.len() == MAX_POSTS_PER_TURN;
            batch.clear();
            if full {
                gtk::glib::timeout_future(Duration::ZERO).await;
            }
        }
    });
    Arc::new(move |view, msg| {
        let _ = tx.send((view, msg));
    })
}
