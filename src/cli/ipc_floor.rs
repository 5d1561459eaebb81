//! `__ipc-floor N`: the bare page <-> Rust round trip of this WebKit, for the benchmarks' floor.
//!
//! One window, one webview, a page that posts to Rust N times; each post is answered from the
//! IPC handler (on the UI thread) with one `evaluate_script`, which makes the page post again.
//! No MCP, no bridge, no channel: what a round trip costs in this engine before the host adds
//! anything. The intervals between posts arriving in Rust (Rust's clock) are the round trips;
//! their median and 99th percentile go to stdout as JSON.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use crate::tao::event::{Event, WindowEvent};
use crate::tao::event_loop::{ControlFlow, EventLoopBuilder};
use crate::tao::platform::run_return::EventLoopExtRunReturn;
use crate::tao::window::WindowBuilder;
use crate::wry::WebViewBuilder;

const PAGE: &str = r#"<!doctype html><meta charset="utf-8"><script>
window.__pong = function () { window.ipc.postMessage("p"); };
window.addEventListener("load", function () { window.ipc.postMessage("p"); });
</script>"#;

/// Runs `n` round trips; prints `{"n", "medianMs", "p99Ms"}`.
pub fn run(n: usize) -> anyhow::Result<i32> {
    let n = n.max(2);
    let mut event_loop = EventLoopBuilder::<()>::with_user_event().build();
    let window = match WindowBuilder::new().with_title("ipc floor").build(&event_loop) {
        Ok(w) => w,
        Err(e) => anyhow::bail!("cannot open a window: {e}"),
    };
    let arrivals: Rc<RefCell<Vec<Instant>>> = Rc::default();
    let webview: Rc<RefCell<Option<crate::wry::WebView>>> = Rc::default();
    let (seen, answer, done) = (arrivals.clone(), webview.clone(), event_loop.create_proxy());
    // A web context of its own, made the way the host makes its one (see `host_env`).
    let mut context = crate::desktop::first_web_context();
    let builder = WebViewBuilder::new_with_web_context(&mut context).with_html(PAGE).with_ipc_handler(move |_| {
        let count = {
            let mut seen = seen.borrow_mut();
            seen.push(Instant::now());
            seen.len()
        };
        if count < n {
            if let Some(w) = answer.borrow().as_ref() {
                let _ = w.evaluate_script("window.__pong()");
            }
        } else {
            let _ = done.send_event(());
        }
    });
    let built = {
        use crate::tao::platform::unix::WindowExtUnix;
        use crate::wry::WebViewBuilderExtUnix;
        match window.default_vbox() {
            Some(vbox) => builder.build_gtk(vbox),
            None => anyhow::bail!("the window has no GTK box"),
        }
    };
    match built {
        Ok(w) => *webview.borrow_mut() = Some(w),
        Err(e) => anyhow::bail!("cannot create the webview: {e}"),
    }
    let deadline = Instant::now() + std::time::Duration::from_secs(120);
    event_loop.run_return(|event, _, flow| {
        *flow = ControlFlow::WaitUntil(deadline);
        match event {
            Event::UserEvent(()) | Event::WindowEvent { event: WindowEvent::CloseRequested, .. } => {
                *flow = ControlFlow::Exit;
            }
            _ if Instant::now() >= deadline => *flow = ControlFlow::Exit,
            _ => {}
        }
    });
    let times = arrivals.borrow();
    let mut rtt: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]).as_secs_f64() * 1000.0).collect();
    if rtt.len() + 1 < n {
        anyhow::bail!("only {} of {n} round trips in 120 s", rtt.len() + 1);
    }
    rtt.sort_by(f64::total_cmp);
    let at = |p: f64| rtt[((rtt.len() as f64 - 1.0) * p).round() as usize];
    println!("{}", serde_json::json!({"n": n, "medianMs": at(0.5), "p99Ms": at(0.99)}));
    Ok(0)
}
