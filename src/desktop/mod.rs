//! The desktop runtime (feature `desktop`): the app's window. A tao window, a wry webview for the
//! shell and one per View, the custom schemes and the shell's IPC; it carries out what the app
//! (`crate::app`, display-free) asks and reports back what happens.
//!
//! Threads: the tao event loop and the webviews own the main thread; a tokio runtime runs the
//! app, the servers and the bridge sessions. They meet only through channels and
//! `EventLoopProxy<UserEvent>`. JSON
//! crosses into the page as a serialized argument, never spliced into code by hand.

mod engine;
mod file_chooser;
mod frames;
mod input;
mod ipc;
mod proxy_line;
mod schemes;
mod shortcuts;
mod snapshot;
mod web_content;
#[cfg(target_os = "linux")]
mod web_extension;

pub(crate) use crate::app::{RunOptions, SharedModel};

use std::time::Instant;

use tao::event::{Event, WindowEvent};
use tao::event_loop::{ControlFlow, EventLoopBuilder, EventLoopProxy};
use tao::platform::run_return::EventLoopExtRunReturn;
use tao::window::WindowBuilder;
use tokio::sync::mpsc;
use wry::WebViewBuilder;

use crate::app::proxies::ProxyPages;
use crate::app::shell::ShellMessage;
use crate::app::window::{HostInput, Ui, UserEvent, WindowOp};
use crate::error::{Error, Result};
use crate::sandbox::{HOST_ORIGIN, HOST_SCHEME, SANDBOX_SCHEME};
use ipc::IpcSecret;

fn theme_of(theme: tao::window::Theme) -> crate::protocol::Theme {
    match theme {
        tao::window::Theme::Dark => crate::protocol::Theme::Dark,
        _ => crate::protocol::Theme::Light,
    }
}

/// True for navigations the webview may perform: the shell, the proxy page of a mounted View (on
/// its own origin) and the frames a proxy writes into. Everything else (a View trying to navigate
/// anywhere, including other pages of its sandbox origin) is refused.
fn navigation_allowed(url: &str, proxies: &ProxyPages) -> bool {
    url.starts_with(&format!("{HOST_ORIGIN}/"))
        || proxies.is_proxy_url(url)
        || url == "about:blank"
        || url == "about:srcdoc"
}

/// The window's GTK box: the shell's webview and the layer of Views go in there (an X11 child
/// window would not paint under every window system, and Wayland has none).
fn window_box(window: &tao::window::Window) -> Result<&gtk::Box> {
    use tao::platform::unix::WindowExtUnix;
    window.default_vbox().ok_or_else(|| Error::Desktop("the window has no GTK box".into()))
}

/// The app's line into an event loop of any user-event type `T`: the host's own, or an
/// embedder's (through their `EventLoopProxy`, wrapped in their event type).
pub(crate) fn ui_for<T: Send + 'static>(
    proxy: EventLoopProxy<T>,
    wrap: impl Fn(UserEvent) -> T + Send + Sync + 'static,
) -> Ui {
    let proxy = std::sync::Mutex::new(proxy);
    Ui::new(move |event| proxy.lock().unwrap_or_else(|e| e.into_inner()).send_event(wrap(event)).is_ok())
}

/// A running host on the UI thread: the webview, the async runtime with the controller, and the
/// line to the controller. Shared by [`run`] (the host's own window) and embedders' windows.
pub(crate) struct Running {
    webview: wry::WebView,
    /// The Views' webviews over the shell.
    frames: std::rc::Rc<std::cell::RefCell<frames::FrameLayer>>,
    runtime: Option<tokio::runtime::Runtime>,
    to_controller: mpsc::UnboundedSender<HostInput>,
    /// The embedder owns the window: the host does not resize it or keep it on top.
    embedded: bool,
    /// The window is the picture-in-picture window now.
    in_pip: bool,
    /// The window's size before picture-in-picture.
    saved_size: Option<tao::dpi::PhysicalSize<u32>>,
    /// The last size a resize reported outside picture-in-picture (not the pip size itself,
    /// which GTK may report late, after the window was restored).
    normal_size: std::cell::Cell<Option<tao::dpi::PhysicalSize<u32>>>,
    /// The native "not responding" question, while it is asked.
    hang_dialog: web_content::HangDialog,
    /// The servers editor's file chooser, while it is open.
    file_chooser: file_chooser::FileChooser,
}

fn logical(size: tao::dpi::PhysicalSize<u32>, scale: f64) -> (f64, f64) {
    let l: tao::dpi::LogicalSize<f64> = size.to_logical(scale);
    (l.width, l.height)
}

impl Running {
    /// Builds the webview in `window` and starts the controller on a new runtime.
    pub(crate) fn start(options: RunOptions, window: &tao::window::Window, ui: Ui, embedded: bool) -> Result<Self> {
        let started = Instant::now();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("mcp-apps-host")
            .build()
            .map_err(|e| Error::Desktop(format!("cannot start the async runtime: {e}")))?;
        let theme = theme_of(window.theme());
        let mut options = options;
        options.launch.embedded = embedded;
        let secret = IpcSecret::generate();
        let proxies = ProxyPages::default();
        let (to_controller, from_ui) = mpsc::unbounded_channel::<HostInput>();
        let devtools = options.developer.panel;
        let (overlay, frames) = frames::FrameLayer::new(window_box(window)?, to_controller.clone(), devtools);
        // The controller starts first, so the servers start while WebKit does: what it asks of
        // the window waits in the event loop's queue until the loop runs.
        let ui = ui.with_post_line(frames::post_line(&frames));
        let (controller, receivers) = crate::app::Controller::new(options, ui, proxies.clone(), theme, started);
        runtime.spawn(controller.run(from_ui, receivers));
        let webview = {
            use wry::WebViewBuilderExtUnix;
            let mut layer = frames.borrow_mut();
            let builder = host_webview(
                layer.context(),
                &secret,
                &proxies,
                to_controller.clone(),
                std::rc::Rc::downgrade(&frames),
                devtools,
            );
            builder.build_gtk(&overlay).map_err(|e| Error::Desktop(format!("cannot create the webview: {e}")))?
        };
        {
            use wry::WebViewExtUnix;
            frames.borrow_mut().set_shell(webview.webview());
        }
        tracing::info!("web inspector: {}", if inspector_enabled(&webview) { "available (preview)" } else { "off" });
        lean_cache(&webview);
        lean_rendering(&webview);
        // The webview was built without a URL: the shell loads only once the engine features
        // that connect around the CSP are off.
        engine::harden(&webview);
        web_content::watch(&webview, to_controller.clone());
        webview
            .load_url(&format!("{HOST_ORIGIN}/"))
            .map_err(|e| Error::Desktop(format!("cannot load the shell: {e}")))?;
        let (width, height) = logical(window.inner_size(), window.scale_factor());
        let _ = to_controller.send(HostInput::Resized { width, height });
        Ok(Self {
            webview,
            frames,
            runtime: Some(runtime),
            to_controller,
            embedded,
            in_pip: false,
            saved_size: None,
            normal_size: std::cell::Cell::new(Some(window.inner_size())),
            hang_dialog: web_content::HangDialog::default(),
            file_chooser: file_chooser::FileChooser::default(),
        })
    }

    /// Carries out one event from the controller; returns the exit code when the host is done.
    pub(crate) fn handle(&mut self, window: &tao::window::Window, event: UserEvent) -> Option<i32> {
        match event {
            UserEvent::Shell(command) => {
                // The command goes in as a string literal of JSON text and is parsed in the page:
                // an object literal would give a `"__proto__"` key its special meaning.
                let literal = serde_json::to_string(&command).unwrap_or_else(|_| "\"{}\"".into());
                let script = format!("window.__mcpShell && window.__mcpShell.dispatch(JSON.parse({literal}));");
                if let Err(e) = self.webview.evaluate_script(&script) {
                    tracing::warn!("shell command failed: {e}");
                }
            }
            UserEvent::Eval(script) => {
                if let Err(e) = self.webview.evaluate_script(&script) {
                    tracing::warn!("automation script failed: {e}");
                }
            }
            UserEvent::Frame(op) => self.frames.borrow_mut().apply(op),
            UserEvent::Input(op) => input::apply(&self.frames, op),
            UserEvent::Screenshot(path, done) => frames::FrameLayer::screenshot(&self.frames, path, done),
            UserEvent::Window(_) if self.embedded => {}
            // The window's size is not read while switching (GTK applies a new size later, so a
            // quick pip -> restore -> pip would save the pip size as the normal one): the normal
            // size is what the last resize outside pip reported.
            UserEvent::Window(WindowOp::Pip) => {
                if !self.in_pip {
                    self.in_pip = true;
                    self.saved_size = Some(self.normal_size.get().unwrap_or_else(|| window.inner_size()));
                }
                window.set_always_on_top(true);
                window.set_inner_size(tao::dpi::LogicalSize::new(crate::app::PIP_SIZE.0, crate::app::PIP_SIZE.1));
            }
            UserEvent::Window(WindowOp::Restore) => {
                if self.in_pip {
                    self.in_pip = false;
                    window.set_always_on_top(false);
                    if let Some(size) = self.saved_size {
                        window.set_inner_size(size);
                    }
                }
            }
            // A second launch: the window comes to the front where the person is.
            UserEvent::Window(WindowOp::Present) => {
                window.set_minimized(false);
                window.set_visible(true);
                window.set_focus();
            }
            UserEvent::Recycle => recycle(&self.webview),
            UserEvent::OpenInspector => open_inspector(&self.webview),
            UserEvent::WebContent(op) => self.hang_dialog.apply(op, window, &self.webview, &self.to_controller),
            UserEvent::ChooseFile(choice) => self.file_chooser.open(window, &self.to_controller, choice),
            UserEvent::Exit(code) => return Some(code),
        }
        None
    }

    /// Tells the controller what happened to the window (size, theme, close).
    pub(crate) fn window_event(&self, window: &tao::window::Window, event: &WindowEvent) {
        let input = match event {
            WindowEvent::Resized(size) => {
                let (width, height) = logical(*size, window.scale_factor());
                let pip_sized =
                    (width - crate::app::PIP_SIZE.0).abs() < 2.0 && (height - crate::app::PIP_SIZE.1).abs() < 2.0;
                if !self.in_pip && !pip_sized {
                    self.normal_size.set(Some(*size));
                }
                HostInput::Resized { width, height }
            }
            WindowEvent::ThemeChanged(theme) => HostInput::SystemTheme(theme_of(*theme)),
            WindowEvent::CloseRequested if !self.embedded => HostInput::CloseRequested,
            _ => return,
        };
        let _ = self.to_controller.send(input);
    }

    /// Starts closing: every View gets its teardown, the servers stop, then `Exit` comes.
    pub(crate) fn close(&self) {
        let _ = self.to_controller.send(HostInput::CloseRequested);
    }

    /// The webview (the shell page with the Views).
    pub(crate) fn webview(&self) -> &wry::WebView {
        &self.webview
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Servers shut down inside the runtime (rmcp's child-process drop needs it).
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(std::time::Duration::from_secs(2));
        }
    }
}

/// Everything the host loads is in memory already (custom schemes): WebKit's page and memory
/// caches only keep closed Views' resources alive.
#[cfg(target_os = "linux")]
fn lean_cache(webview: &wry::WebView) {
    use webkit2gtk::{WebContextExt, WebViewExt};
    use wry::WebViewExtUnix;
    if let Some(context) = webview.webview().context() {
        context.set_cache_model(webkit2gtk::CacheModel::DocumentViewer);
        // The Views' processes start after the shell's: they get the extension.
        web_extension::install(&context);
    }
}

#[cfg(not(target_os = "linux"))]
fn lean_cache(_webview: &wry::WebView) {}

/// Every webview paints without accelerated compositing, unless `MCP_APPS_HOST_COMPOSITING`
/// says `always`. Measured on this machine kind (software GL under Xvfb): a View's webview in
/// compositing mode costs about 25 MB of its web process (a compositor thread and GL context per
/// page), without it about 3 MB; the shell and the first View together about 100 MB less.
/// WebGL and WebGL 2 still work without it (measured); CSS 3D transforms lose their perspective.
pub(super) fn lean_rendering(webview: &wry::WebView) {
    use webkit2gtk::{HardwareAccelerationPolicy, SettingsExt, WebViewExt};
    use wry::WebViewExtUnix;
    let always = crate::host_env::compositing_asked();
    if let Some(settings) = WebViewExt::settings(&webview.webview()) {
        let policy = if always { HardwareAccelerationPolicy::Always } else { HardwareAccelerationPolicy::Never };
        settings.set_hardware_acceleration_policy(policy);
    }
}

/// Whether GTK opened an X11 display (not Wayland's or another backend's).
#[cfg(target_os = "linux")]
pub(crate) fn gdk_is_x11() -> bool {
    use gtk::glib::prelude::ObjectExt;
    gtk::gdk::Display::default().is_some_and(|display| display.type_().name() == "GdkX11Display")
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn gdk_is_x11() -> bool {
    false
}

/// The host's web context (WebKit opens its display in this process when the first is made):
/// without EGL when GDK's display is X11's and `host_env::settle` took EGL's vendors away, with
/// it otherwise. Either way the vendors are given back before it returns, so the web processes
/// WebKit starts from now on find their driver. Call it on the GTK thread, before any webview
/// is built (see the `host_env` module docs).
pub(crate) fn first_web_context() -> wry::WebContext {
    if !gdk_is_x11() {
        crate::host_env::give_egl_back();
    }
    let context = wry::WebContext::new(None);
    if crate::host_env::give_egl_back() {
        tracing::debug!("WebKit's display is open without EGL in the host's process");
    }
    context
}

/// Ends the web process and loads the shell again, in a new one.
#[cfg(target_os = "linux")]
fn recycle(webview: &wry::WebView) {
    use webkit2gtk::WebViewExt;
    use wry::WebViewExtUnix;
    tracing::info!("no View is open: recycling the web process to return its memory");
    webview.webview().terminate_web_process();
    if let Err(e) = webview.load_url(&format!("{HOST_ORIGIN}/")) {
        tracing::warn!("reloading the shell failed: {e}");
    }
}

#[cfg(not(target_os = "linux"))]
fn recycle(webview: &wry::WebView) {
    if let Err(e) = webview.load_url(&format!("{HOST_ORIGIN}/")) {
        tracing::warn!("reloading the shell failed: {e}");
    }
}

/// Whether the webview has WebKit's developer extras (the inspector, "Inspect Element"), read
/// back from its settings.
#[cfg(target_os = "linux")]
fn inspector_enabled(webview: &wry::WebView) -> bool {
    use webkit2gtk::{SettingsExt, WebViewExt};
    use wry::WebViewExtUnix;
    WebViewExt::settings(&webview.webview()).is_some_and(|s| s.enables_developer_extras())
}

#[cfg(not(target_os = "linux"))]
fn inspector_enabled(_webview: &wry::WebView) -> bool {
    false
}

/// Opens WebKit's web inspector in its own window. WebKitGTK's inspector is reached directly:
/// wry's `open_devtools` exists in release builds only with its `devtools` feature, while the
/// setting `with_devtools` turns on works in every build.
#[cfg(target_os = "linux")]
fn open_inspector(webview: &wry::WebView) {
    use webkit2gtk::{WebInspectorExt, WebViewExt};
    use wry::WebViewExtUnix;
    if !inspector_enabled(webview) {
        tracing::warn!("web inspector refused: this webview has no developer extras (not a preview)");
        return;
    }
    match webview.webview().inspector() {
        Some(inspector) => {
            tracing::info!("opening the web inspector");
            inspector.show();
        }
        None => tracing::warn!("WebKit offers no web inspector for this webview"),
    }
}

#[cfg(not(target_os = "linux"))]
fn open_inspector(_webview: &wry::WebView) {
    tracing::warn!("the web inspector button is wired on Linux only; use the context menu's Inspect Element");
}

/// The webview: shell on `mcp-host://`, proxies on `mcp-sandbox://` with their CSP headers, the
/// shell's secret IPC line, and everything else a page might try (navigating away, new windows,
/// downloads) refused. It has no URL: [`Running::start`] loads the shell after [`engine::harden`].
/// `devtools` (preview only) turns on WebKit's developer extras; wry turns them on in every
/// debug build unless told otherwise, so `run` says `false` explicitly.
fn host_webview<'a>(
    context: &'a mut wry::WebContext,
    secret: &IpcSecret,
    proxies: &ProxyPages,
    to_controller: mpsc::UnboundedSender<HostInput>,
    frames: std::rc::Weak<std::cell::RefCell<frames::FrameLayer>>,
    devtools: bool,
) -> WebViewBuilder<'a> {
    let ipc_secret = secret.clone();
    let sandbox_proxies = proxies.clone();
    let nav_proxies = proxies.clone();
    let builder = WebViewBuilder::new_with_web_context(context)
        .with_devtools(devtools)
        .with_initialization_script(secret.init_script())
        .with_custom_protocol(HOST_SCHEME.into(), move |_id, request| schemes::serve_host(&request))
        .with_asynchronous_custom_protocol(SANDBOX_SCHEME.into(), move |_id, request, responder| {
            responder.respond(schemes::serve_sandbox(&request, &sandbox_proxies));
        })
        .with_ipc_handler(move |request| {
            let body = request.body();
            let Some(json) = ipc_secret.open(body) else {
                // A View (or anything but the shell) tried to reach Rust directly.
                tracing::warn!("dropped IPC message without the host secret ({} bytes)", body.len());
                return;
            };
            match serde_json::from_str::<ShellMessage>(json) {
                // Where the Views' slots are: carried out here, on the UI thread, right away.
                Ok(ShellMessage::Frames { clip, slots }) => {
                    if let Some(frames) = frames.upgrade() {
                        if let Ok(mut frames) = frames.try_borrow_mut() {
                            frames.place(clip, &slots);
                        }
                    }
                }
                // A dialog opened or closed: the keyboard goes to the shell at once.
                Ok(ShellMessage::Keyboard { dialog }) => {
                    if let Some(frames) = frames.upgrade() {
                        if let Ok(frames) = frames.try_borrow() {
                            frames.keyboard(dialog);
                        }
                    }
                }
                Ok(msg) => {
                    let _ = to_controller.send(HostInput::Shell(msg));
                }
                Err(e) => tracing::warn!("malformed shell message: {e}"),
            }
        })
        .with_navigation_handler(move |url| {
            let ok = navigation_allowed(&url, &nav_proxies);
            if !ok {
                tracing::warn!("blocked navigation to {url}");
            }
            ok
        });
    refuse_windows_and_downloads(builder)
}

/// What every webview of the host refuses whatever its page asks: new windows and downloads.
fn refuse_windows_and_downloads(builder: WebViewBuilder<'_>) -> WebViewBuilder<'_> {
    builder
        .with_new_window_req_handler(|url, _features| {
            tracing::warn!("blocked new window for {url}");
            wry::NewWindowResponse::Deny
        })
        .with_download_started_handler(|url, _path| {
            tracing::warn!("blocked download of {url}");
            false
        })
}

/// Connects to the display before tao does: tao panics when GTK cannot start.
#[cfg(target_os = "linux")]
fn open_display() -> Result<()> {
    gtk::init().map_err(|e| Error::Desktop(format!("cannot open the display ({e}); is DISPLAY set and reachable?")))
}

#[cfg(not(target_os = "linux"))]
fn open_display() -> Result<()> {
    Ok(())
}

/// Opens the window and runs the host until the controller exits; returns the exit code.
pub fn run(options: RunOptions) -> Result<i32> {
    open_display()?;
    let mut event_loop = EventLoopBuilder::<UserEvent>::with_user_event().build();
    let window = WindowBuilder::new()
        .with_title("MCP Apps Host")
        .with_inner_size(tao::dpi::LogicalSize::new(1200.0, 820.0))
        .build(&event_loop)
        .map_err(|e| Error::Desktop(format!("cannot open a window: {e}")))?;
    let ui = ui_for(event_loop.create_proxy(), |event| event);
    let mut running = Running::start(options, &window, ui, false)?;
    shortcuts::install(&window, &running.to_controller);
    let mut exit_code = 0;
    event_loop.run_return(|event, _, control_flow| {
        *control_flow = ControlFlow::Wait;
        match event {
            Event::UserEvent(event) => {
                if let Some(code) = running.handle(&window, event) {
                    exit_code = code;
                    *control_flow = ControlFlow::ExitWithCode(code);
                }
            }
            Event::WindowEvent { event, .. } => running.window_event(&window, &event),
            _ => {}
        }
    });
    drop(running);
    drop(window);
    Ok(exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn navigation_is_limited_to_our_schemes() {
        let reg = ProxyPages::default();
        reg.insert(
            "v1",
            crate::app::proxies::ProxyPolicy {
                label: "abc".into(),
                csp: "default-src 'none'".into(),
                clipboard_write: false,
            },
        );
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
