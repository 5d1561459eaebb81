//! A View's webview: its proxy page in the host's top document, its IPC line and navigation
//! guard bound to one View, its background, and no fullscreen of its own.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

use wry::WebViewBuilder;

use super::keyboard::Keyboard;
use super::placement::reveal_soon;
use super::{Binding, FrameLayer};
use crate::desktop::ipc::IpcSecret;
use crate::desktop::proxy_line::{proxy_message, to_session, MAX_DIAGNOSTIC_BYTES};
use crate::protocol::Theme;

/// The card's background behind a View that draws none.
pub(super) fn background(theme: Theme) -> (u8, u8, u8, u8) {
    match theme {
        Theme::Dark => (0x1c, 0x20, 0x26, 0xff),
        _ => (0xff, 0xff, 0xff, 0xff),
    }
}

impl FrameLayer {
    /// A webview for a View's proxy page at `src`, out of sight, loading. Its IPC line and its
    /// navigations speak for whatever View `binding` names; while it names none (a spare), the
    /// line keeps only the proxy's ready message, in `early_ready`. Also returns the flag its
    /// proxy page's load sets (see [`ViewFrame::loaded`](super::ViewFrame::loaded)).
    pub(super) fn view_webview(
        &mut self,
        src: &str,
        related: Option<webkit2gtk::WebView>,
        binding: &Binding,
        early_ready: &Rc<RefCell<Option<String>>>,
    ) -> crate::Result<(wry::WebView, Rc<Cell<bool>>)> {
        use gtk::prelude::*;
        use wry::{WebViewBuilderExtUnix, WebViewExtUnix};
        let secret = IpcSecret::generate();
        let on_top = proxy_on_top();
        // The host's top document around the proxy (the test topology loads the proxy itself).
        let top_src = match on_top {
            true => src.to_owned(),
            false => crate::desktop::schemes::frame_src(src)
                .ok_or_else(|| crate::Error::Desktop(format!("no top document for the proxy page {src}")))?,
        };
        let (tx, ipc_binding, ipc_secret, ready) =
            (self.to_controller.clone(), binding.clone(), secret.clone(), early_ready.clone());
        let (own_src, own_top, nav_binding) = (src.to_owned(), top_src.clone(), binding.clone());
        let builder = WebViewBuilder::new_with_web_context(&mut self.context)
            .with_devtools(self.devtools)
            .with_background_color(background(self.theme))
            .with_initialization_script_for_main_only(secret.proxy_init_script(src, on_top), false)
            .with_initialization_script_for_main_only(crate::desktop::ipc::FRAME_HOOK_SCRIPT, false)
            .with_ipc_handler(move |request| match &*ipc_binding.borrow() {
                // `s`: the View's localStorage changed (its proxy hears it); `i`: its proxy's dump
                // of the origin's IndexedDB. Kept for the server's origin the binding names,
                // whatever the line says.
                Some(b) if let Some(line) = ipc_secret.open(request.body()).and_then(|r| r.strip_prefix('s')) => {
                    b.storage.changed(&b.label, b.generation, &b.view, line)
                }
                Some(b) if let Some(line) = ipc_secret.open(request.body()).and_then(|r| r.strip_prefix('i')) => {
                    b.storage.dumped(&b.label, b.generation, &b.view, line)
                }
                Some(b) => proxy_message(
                    &b.view,
                    &ipc_secret,
                    request.body(),
                    &mut b.budget.borrow_mut(),
                    Instant::now(),
                    &|text| to_session(&b.session, text),
                    &tx,
                ),
                // No View is in a spare page: only our proxy runs there, and it says it is ready.
                None => {
                    let msg = ipc_secret.open(request.body()).and_then(|rest| rest.strip_prefix('v'));
                    if let Some(msg) = msg.filter(|m| m.len() <= MAX_DIAGNOSTIC_BYTES) {
                        ready.borrow_mut().get_or_insert_with(|| msg.to_owned());
                    }
                }
            })
            // Its top document, its proxy page, its View's document and the frames the View
            // writes; nothing else.
            .with_navigation_handler(move |url| {
                let document = nav_binding.borrow().as_ref().and_then(|b| b.document.clone());
                let ok = url == own_top
                    || url == own_src
                    || url == "about:srcdoc"
                    || url == "about:blank"
                    || Some(&url) == document.as_ref();
                if !ok {
                    tracing::warn!("blocked navigation of a View to {url}");
                }
                ok
            });
        let mut builder = crate::desktop::refuse_windows_and_downloads(builder);
        if let Some(related) = related {
            builder = builder.with_related_view(related);
        }
        let webview = builder
            .build_gtk(&self.layer)
            .map_err(|e| crate::Error::Desktop(format!("cannot create a View's webview: {e}")))?;
        let widget = webview.webview();
        // Out of sight until the shell says where its slot is.
        widget.set_size_request(1, 1);
        self.layer.move_(&widget, -10_000, 0);
        crate::desktop::engine::harden(&webview);
        // Nothing of the clipboard until the View is known (see `engine::clipboard`).
        crate::desktop::engine::clipboard(&webview, false);
        crate::desktop::lean_rendering(&webview);
        deny_fullscreen(&widget);
        Keyboard::follow_person(&self.keyboard, &widget);
        let loaded = Rc::new(Cell::new(false));
        let (flag, me, reveal_binding) = (loaded.clone(), self.me.clone(), binding.clone());
        webkit2gtk::WebViewExt::connect_load_changed(&widget, move |_, event| {
            use webkit2gtk::LoadEvent;
            if event != LoadEvent::Finished || flag.replace(true) {
                return;
            }
            // A spare names no View yet: it is shown once taken, already loaded.
            if let Some(view) = reveal_binding.borrow().as_ref().map(|b| b.view.clone()) {
                reveal_soon(me.clone(), view);
            }
        });
        webview.load_url(&top_src).map_err(|e| crate::Error::Desktop(format!("cannot load the View's proxy: {e}")))?;
        Ok((webview, loaded))
    }

    /// The card background follows the theme.
    pub(super) fn set_theme(&mut self, theme: Theme) {
        use webkit2gtk::WebViewExt;
        use wry::WebViewExtUnix;
        self.theme = theme;
        let (r, g, b, a) = background(theme);
        let rgba =
            gtk::gdk::RGBA::new(f64::from(r) / 255.0, f64::from(g) / 255.0, f64::from(b) / 255.0, f64::from(a) / 255.0);
        let spares = self.groups.values().filter_map(|g| g.spare.as_ref()).map(|s| &s.webview);
        for webview in self.views.values().map(|f| &f.webview).chain(spares) {
            webview.webview().set_background_color(&rgba);
        }
    }
}

/// A View changes how it is shown only through `ui/request-display-mode`, which the host
/// decides: the page's own Fullscreen API is off (`document.fullscreenEnabled` is false), and
/// a request that reaches WebKit anyway is refused.
pub(super) fn deny_fullscreen(widget: &webkit2gtk::WebView) {
    use webkit2gtk::{SettingsExt, WebViewExt};
    if let Some(settings) = WebViewExt::settings(widget) {
        settings.set_enable_fullscreen(false);
    }
    widget.connect_enter_fullscreen(|_| {
        tracing::warn!("refused a View's own fullscreen request (it may ask with ui/request-display-mode)");
        true
    });
}

/// Test-only: `MCP_APPS_HOST_TEST_PROXY_ON_TOP` serves the old topology, the proxy page as the
/// top document of a View's webview (so `window.parent === window.top` inside the View), which
/// proves `check --self` notices a host without the spec's frame tree.
pub(crate) fn proxy_on_top() -> bool {
    static ON_TOP: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON_TOP.get_or_init(|| {
        let on = std::env::var_os("MCP_APPS_HOST_TEST_PROXY_ON_TOP").is_some();
        if on {
            tracing::error!("MCP_APPS_HOST_TEST_PROXY_ON_TOP is set: each View's proxy is the top page of its webview");
        }
        on
    })
}
