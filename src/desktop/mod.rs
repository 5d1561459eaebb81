//! The desktop runtime (feature `desktop`): a tao window, a wry webview, the custom schemes, the
//! shell's IPC, and the controller that connects servers, bridges and the shell.
//!
//! Threads: the tao event loop and the webview own the main thread; a tokio runtime runs servers
//! and bridge sessions. They meet only through channels and `EventLoopProxy<UserEvent>`. JSON
//! crosses into the page as a serialized argument, never spliced into code by hand.

mod controller;
mod ipc;
mod policy;
mod schemes;
mod snapshot;

pub use controller::{ExitAfter, RunOptions, SharedPolicy};
pub use policy::Consent;

use std::time::Instant;

use tao::event::{Event, WindowEvent};
use tao::event_loop::{ControlFlow, EventLoopBuilder, EventLoopProxy};
use tao::platform::run_return::EventLoopExtRunReturn;
use tao::window::WindowBuilder;
use tokio::sync::mpsc;
use wry::WebViewBuilder;

use crate::error::{Error, Result};
use crate::sandbox::{HOST_ORIGIN, HOST_SCHEME, SANDBOX_SCHEME};
use ipc::{IpcSecret, ShellMessage};
use schemes::ProxyRegistry;

/// Events the tokio side sends to the UI thread.
#[derive(Debug)]
pub(crate) enum UserEvent {
    /// A shell command (JSON) for `window.__mcpShell.dispatch`.
    Shell(String),
    /// Evaluate an automation script in the shell.
    Eval(String),
    /// Change the window itself.
    Window(WindowOp),
    /// Write a screenshot of the webview to this PNG file.
    Screenshot(std::path::PathBuf, tokio::sync::oneshot::Sender<std::result::Result<std::path::PathBuf, String>>),
    /// Leave the event loop with this exit code.
    Exit(i32),
}

/// Window changes for display modes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WindowOp {
    /// A small always-on-top window showing one View.
    Pip,
    /// Back to the normal window.
    Restore,
}

/// What the UI thread tells the controller.
#[derive(Debug)]
pub(crate) enum HostInput {
    /// A message from the shell page.
    Shell(ShellMessage),
    /// The user closed the window.
    CloseRequested,
    /// The window's inner size changed (logical px).
    Resized {
        /// Width.
        width: f64,
        /// Height.
        height: f64,
    },
    /// The system theme changed.
    SystemTheme(crate::protocol::Theme),
}

fn theme_of(theme: tao::window::Theme) -> crate::protocol::Theme {
    match theme {
        tao::window::Theme::Dark => crate::protocol::Theme::Dark,
        _ => crate::protocol::Theme::Light,
    }
}

/// True for navigations the webview may perform: the shell, the proxy page of a mounted View (on
/// its own origin) and the frames a proxy writes into. Everything else (a View trying to navigate
/// anywhere, including other pages of its sandbox origin) is refused.
fn navigation_allowed(url: &str, registry: &ProxyRegistry) -> bool {
    url.starts_with(&format!("{HOST_ORIGIN}/"))
        || registry.is_proxy_url(url)
        || url == "about:blank"
        || url == "about:srcdoc"
}

/// On Linux the webview goes into tao's GTK box (an X11 child window would not paint under every
/// window system, and Wayland has none); elsewhere it is built on the window itself.
#[cfg(target_os = "linux")]
fn build_webview(builder: WebViewBuilder<'_>, window: &tao::window::Window) -> Result<wry::WebView> {
    use tao::platform::unix::WindowExtUnix;
    use wry::WebViewBuilderExtUnix;
    let vbox = window.default_vbox().ok_or_else(|| Error::Desktop("the window has no GTK box".into()))?;
    builder.build_gtk(vbox).map_err(|e| Error::Desktop(format!("cannot create the webview: {e}")))
}

#[cfg(not(target_os = "linux"))]
fn build_webview(builder: WebViewBuilder<'_>, window: &tao::window::Window) -> Result<wry::WebView> {
    builder.build(window).map_err(|e| Error::Desktop(format!("cannot create the webview: {e}")))
}

/// Opens the window and runs `run` until the controller exits; returns the exit code.
pub fn run(options: RunOptions) -> Result<i32> {
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("mcp-apps-host")
        .build()
        .map_err(|e| Error::Desktop(format!("cannot start the async runtime: {e}")))?;

    let mut event_loop = EventLoopBuilder::<UserEvent>::with_user_event().build();
    let window = WindowBuilder::new()
        .with_title("mcp-apps-host")
        .with_inner_size(tao::dpi::LogicalSize::new(1200.0, 820.0))
        .build(&event_loop)
        .map_err(|e| Error::Desktop(format!("cannot open a window: {e}")))?;
    let theme = theme_of(window.theme());

    let secret = IpcSecret::generate();
    let registry = ProxyRegistry::default();
    let (to_controller, from_ui) = mpsc::unbounded_channel::<HostInput>();

    let ipc_tx = to_controller.clone();
    let ipc_secret = secret.clone();
    let sandbox_registry = registry.clone();
    let nav_registry = registry.clone();
    let webview = WebViewBuilder::new()
        .with_initialization_script(secret.init_script())
        .with_custom_protocol(HOST_SCHEME.into(), move |_id, request| schemes::serve_host(&request))
        .with_asynchronous_custom_protocol(SANDBOX_SCHEME.into(), move |_id, request, responder| {
            responder.respond(schemes::serve_sandbox(&request, &sandbox_registry));
        })
        .with_ipc_handler(move |request| {
            let body = request.body();
            let Some(json) = ipc_secret.open(body) else {
                // A View (or anything but the shell) tried to reach Rust directly.
                tracing::warn!("dropped IPC message without the host secret ({} bytes)", body.len());
                return;
            };
            match serde_json::from_str::<ShellMessage>(json) {
                Ok(msg) => {
                    let _ = ipc_tx.send(HostInput::Shell(msg));
                }
                Err(e) => tracing::warn!("malformed shell message: {e}"),
            }
        })
        .with_navigation_handler(move |url| {
            let ok = navigation_allowed(&url, &nav_registry);
            if !ok {
                tracing::warn!("blocked navigation to {url}");
            }
            ok
        })
        .with_new_window_req_handler(|url, _features| {
            tracing::warn!("blocked new window for {url}");
            wry::NewWindowResponse::Deny
        })
        .with_download_started_handler(|url, _path| {
            tracing::warn!("blocked download of {url}");
            false
        })
        .with_url(format!("{HOST_ORIGIN}/"));
    let webview = build_webview(webview, &window)?;

    let proxy: EventLoopProxy<UserEvent> = event_loop.create_proxy();
    let (controller, receivers) = controller::Controller::new(options, proxy, registry, theme, started);
    runtime.spawn(controller.run(from_ui, receivers));
    let logical = |size: tao::dpi::PhysicalSize<u32>, scale: f64| {
        let l: tao::dpi::LogicalSize<f64> = size.to_logical(scale);
        (l.width, l.height)
    };
    let (width, height) = logical(window.inner_size(), window.scale_factor());
    let _ = to_controller.send(HostInput::Resized { width, height });
    let mut saved_size: Option<tao::dpi::PhysicalSize<u32>> = None;

    let mut exit_code = 0;
    event_loop.run_return(|event, _, control_flow| {
        *control_flow = ControlFlow::Wait;
        match event {
            Event::UserEvent(UserEvent::Shell(command)) => {
                let script = format!("window.__mcpShell && window.__mcpShell.dispatch({command});");
                if let Err(e) = webview.evaluate_script(&script) {
                    tracing::warn!("shell command failed: {e}");
                }
            }
            Event::UserEvent(UserEvent::Eval(script)) => {
                if let Err(e) = webview.evaluate_script(&script) {
                    tracing::warn!("automation script failed: {e}");
                }
            }
            Event::UserEvent(UserEvent::Screenshot(path, done)) => snapshot::capture(&webview, path, done),
            Event::UserEvent(UserEvent::Window(WindowOp::Pip)) => {
                if saved_size.is_none() {
                    saved_size = Some(window.inner_size());
                }
                window.set_always_on_top(true);
                window.set_inner_size(tao::dpi::LogicalSize::new(controller::PIP_SIZE.0, controller::PIP_SIZE.1));
            }
            Event::UserEvent(UserEvent::Window(WindowOp::Restore)) => {
                window.set_always_on_top(false);
                if let Some(size) = saved_size.take() {
                    window.set_inner_size(size);
                }
            }
            Event::WindowEvent { event: WindowEvent::Resized(size), .. } => {
                let (width, height) = logical(size, window.scale_factor());
                let _ = to_controller.send(HostInput::Resized { width, height });
            }
            Event::WindowEvent { event: WindowEvent::ThemeChanged(theme), .. } => {
                let _ = to_controller.send(HostInput::SystemTheme(theme_of(theme)));
            }
            Event::UserEvent(UserEvent::Exit(code)) => {
                exit_code = code;
                *control_flow = ControlFlow::ExitWithCode(code);
            }
            Event::WindowEvent { event: WindowEvent::CloseRequested, .. } => {
                let _ = to_controller.send(HostInput::CloseRequested);
            }
            _ => {}
        }
    });
    drop(webview);
    drop(window);
    // Servers shut down inside the runtime (rmcp's child-process drop needs it).
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    Ok(exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn navigation_is_limited_to_our_schemes() {
        let reg = ProxyRegistry::default();
        reg.insert("v1", schemes::ProxyPolicy { label: "abc".into(), csp: "default-src 'none'".into() });
        let ok = |u: &str| navigation_allowed(u, &reg);
        assert!(ok("mcp-host://app/"));
        assert!(ok("mcp-sandbox://abc/proxy.html?view=v1"));
        assert!(ok("about:blank"));
        assert!(!ok("mcp-sandbox://abc/proxy.js"), "other pages of a sandbox origin");
        assert!(!ok("mcp-sandbox://other/proxy.html?view=v1"), "another origin's proxy");
        assert!(!ok("mcp-sandbox://abc/proxy.html?view=v9"), "an unknown View");
        assert!(!ok("https://evil.example/"));
        assert!(!ok("mcp-host://app.evil/"));
        assert!(!ok("file:///etc/passwd"));
        assert!(!ok("data:text/html,hi"));
    }
}
