//! Every View in a webview of its own, placed over its card: one web process per server, the
//! shell in its own (see "Process model and supervision" in the README).
//!
//! The shell page lays the cards out and leaves an empty slot where a View goes; it reports the
//! slots' rectangles (and the rectangle they are clipped to: the scrolling stream, or the whole
//! window in fullscreen and pip) whenever they move. This module keeps a GTK layer over the
//! shell's webview, the same size as that clip rectangle, and moves each View's webview onto its
//! slot. The layer passes every pointer event that misses a View through to the shell below, so
//! the shell's own controls keep working between and around the Views.
//!
//! The webviews of one server's Views are created related to each other, so they share one web
//! process (and one origin, by design); another server's Views get another. A View's busy loop,
//! memory bomb or crash then stops only its own server's Views: the shell and the other servers
//! keep their timers, tool calls and clicks. [`FrameLayer::tick`] pings each process and tells
//! the controller when one stops answering
//! ([`HANG_AFTER`](crate::app::supervisor::HANG_AFTER)) and when it answers again; WebKit's
//! `web-process-terminated` tells it when one is gone.
//!
//! Inside each View's webview the frame tree is the spec's: the host's top document on
//! `mcp-host://frame` (no script; it frames only the proxy page, see `schemes.rs`), the sandbox
//! proxy on the server's sandbox origin in its one frame, the View in the proxy's frame. From
//! inside the View `parent` is the proxy and `top` is another origin. Rust reaches the proxy by
//! a script in the top document that posts to the proxy frame ([`FrameLayer::deliver`]).
//!
//! Each View's proxy page talks to Rust on its own IPC line: the handler knows which View it
//! belongs to, so nothing a View sends can be taken for another View's or the shell's. The line
//! carries a per-View secret for the same reason the shell's does (see `ipc.rs`): frames inside
//! the View (a cross-origin frame its CSP allowed) reach the message handler too. The secret is
//! handed, by a script WebKit runs at the start of every document, only to the document at the
//! proxy's URL whose parent is the top document.
//!
//! This file holds the layer and what the controller asks of it (mount, unmount); the rest is
//! by concept: `webview` (a View's webview, its IPC line and navigation guard), `groups` (one
//! web process per server: spares, the page that keeps it warm, pings), `placement` (where each
//! webview goes over its slot), `delivery` (messages into the proxies), `keyboard` (who may
//! have the keyboard), `screenshot`.

mod delivery;
mod groups;
mod keyboard;
mod placement;
mod screenshot;
mod storage;
mod webview;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::proxy_line::DiagnosticBudget;
use crate::app::window::{FrameMount, FrameOp, FrameSignal, HostInput};
use crate::protocol::Theme;

pub(crate) use delivery::post_line;
use groups::watch;
use keyboard::Keyboard;
use placement::{put, reveal_soon, wheel_px};

/// A View's width before the shell has reported the stream's (px).
const FIRST_WIDTH: i32 = 640;

/// How often the layer pings each web process of Views.
const PING_EVERY: Duration = Duration::from_millis(250);
/// A server's web process outlives its last View by this long (a blank page holds it), so
/// opening its next View does not wait for a new process (measured: ~150 ms of a warm open).
const KEEP_WARM: Duration = Duration::from_secs(30);
/// A closed View's webview is destroyed this long after it was taken out of sight.
const CLOSE_AFTER: Duration = Duration::from_millis(500);
/// A View's webview is in sight this long after it was mounted at the latest, even if its proxy
/// page did not report its load (see [`ViewFrame::loaded`]).
const SHOW_AT_LATEST: Duration = Duration::from_secs(2);

/// The View a webview's IPC line and navigation guard speak for.
struct Bound {
    view: String,
    session: crate::bridge::ViewHandle,
    /// What the View may send on its line besides its messages.
    budget: RefCell<DiagnosticBudget>,
    /// Where its document is served, for a View whose frame loads it.
    document: Option<String>,
    /// Its server's sandbox label, the storage kept for it, and how often that was forgotten
    /// when this binding was made (`ViewStorage::generation`).
    label: String,
    storage: Rc<storage::ViewStorage>,
    generation: u64,
}

/// Set when the webview is created for a View, or when a [`Spare`] is taken.
type Binding = Rc<RefCell<Option<Bound>>>;

/// A proxy page of a server's origin, loaded before the View it will hold is known, so the
/// server's next View does not wait for a webview and a proxy page (most of a warm open's host
/// side before it). It is served with the shared proxy policy (`schemes.rs`): the View's own
/// CSP comes with its document, which the proxy loads by URL once the spare is taken. No View
/// ever ran in it, and each View gets a spare only once.
struct Spare {
    webview: wry::WebView,
    /// Its proxy page has loaded (see [`ViewFrame::loaded`]).
    loaded: Rc<Cell<bool>>,
    binding: Binding,
    /// The proxy's ready message, which came before any View took the page.
    ready: Rc<RefCell<Option<String>>>,
}

struct ViewFrame {
    webview: wry::WebView,
    label: String,
    /// The [`Group::id`] it was created in.
    group: u64,
    /// Where it is now (layer coordinates and size), to move only what moved.
    placed: Option<(i32, i32, i32, i32)>,
    /// Its proxy page has loaded. Until then it stays out of sight: drawing a webview whose
    /// web process has not painted yet makes GTK's thread wait for that paint for up to 0.5 s,
    /// and a process still starting asks this thread for its network connection and waits too,
    /// so the wait runs out in full (traced: 2 waits of 0.5 s in half of the cold starts).
    loaded: Rc<Cell<bool>>,
    /// Where the shell wants it while it is not loaded.
    wanted: Option<(i32, i32, i32, i32)>,
    /// Its document is loaded by URL (it could have taken a spare proxy page).
    by_url: bool,
    /// Its server's kept storage, for its proxy with the first message it gets (before its
    /// View's document is asked for).
    seed: RefCell<Option<String>>,
}

/// The Views of one server: one web process.
struct Group {
    /// Told apart from a later group of the same server (after its process ended).
    id: u64,
    members: Vec<String>,
    /// WebKit said its process ended: nothing new may be created related to its webviews
    /// (a page related to a dead process's page can be handed that dead process).
    ended: Rc<Cell<bool>>,
    /// When the unanswered ping was sent.
    ping: Rc<Cell<Option<Instant>>>,
    /// Since when the process does not answer (reported).
    hung: Rc<Cell<Option<Instant>>>,
    /// While the server has no View: a blank page of its process, kept [`KEEP_WARM`].
    keeper: Option<(wry::WebView, u64)>,
    /// The proxy page for its next View.
    spare: Option<Spare>,
}

/// The layer of View webviews over the shell (UI thread only).
pub(crate) struct FrameLayer {
    // Declared first, dropped first: the webviews go before the layer and the context.
    views: HashMap<String, ViewFrame>,
    groups: HashMap<String, Group>,
    layer: gtk::Layout,
    to_controller: mpsc::UnboundedSender<HostInput>,
    devtools: bool,
    theme: Theme,
    clip: Option<(i32, i32, i32, i32)>,
    shell: Option<webkit2gtk::WebView>,
    /// Webviews of closed Views, destroyed after [`CLOSE_AFTER`].
    closing: Vec<wry::WebView>,
    sweep_scheduled: bool,
    keeper_generation: u64,
    next_group: u64,
    next_spare: u64,
    me: std::rc::Weak<RefCell<FrameLayer>>,
    keyboard: Rc<Keyboard>,
    /// The Views' storage kept across runs.
    storage: Rc<storage::ViewStorage>,
    context: wry::WebContext,
}

impl FrameLayer {
    /// An overlay in `vbox`: the shell's webview goes in as its main child ([`Self::container`]),
    /// the layer of Views above it.
    pub(crate) fn new(
        vbox: &gtk::Box,
        to_controller: mpsc::UnboundedSender<HostInput>,
        devtools: bool,
    ) -> (gtk::Overlay, Rc<RefCell<Self>>) {
        use gtk::prelude::*;
        let overlay = gtk::Overlay::new();
        vbox.pack_start(&overlay, true, true, 0);
        let layer = gtk::Layout::new(None::<&gtk::Adjustment>, None::<&gtk::Adjustment>);
        layer.set_halign(gtk::Align::Start);
        layer.set_valign(gtk::Align::Start);
        layer.set_size_request(1, 1);
        overlay.add_overlay(&layer);
        // Pointer events that hit no View go to the shell below ("pointer-events: none" for the
        // layer itself; the Views' own windows still take theirs).
        overlay.set_overlay_pass_through(&layer, true);
        let pass_through = |layer: &gtk::Layout| {
            if let Some(w) = layer.window() {
                w.set_pass_through(true);
            }
            if let Some(w) = layer.bin_window() {
                w.set_pass_through(true);
            }
        };
        layer.connect_map(move |l| pass_through(l));
        overlay.show();
        layer.show();
        // The host's only web context, made before any webview: WebKit opens its display here.
        let context = super::first_web_context();
        let frames = Rc::new(RefCell::new(Self {
            layer,
            context,
            views: HashMap::new(),
            groups: HashMap::new(),
            to_controller,
            devtools,
            theme: Theme::Light,
            clip: None,
            shell: None,
            closing: Vec::new(),
            sweep_scheduled: false,
            keeper_generation: 0,
            next_group: 0,
            next_spare: 0,
            me: std::rc::Weak::new(),
            keyboard: Rc::default(),
            storage: storage::ViewStorage::user(),
        }));
        frames.borrow_mut().me = Rc::downgrade(&frames);
        // The wheel over a View that did not scroll: WebKit hands the event back to the View's
        // parent (the layer), and the stream scrolls, as a page scrolls around an iframe.
        let weak = Rc::downgrade(&frames);
        frames.borrow().layer.connect_scroll_event(move |_, event| {
            let Some(frames) = weak.upgrade() else { return gtk::glib::Propagation::Proceed };
            let Ok(frames) = frames.try_borrow() else { return gtk::glib::Propagation::Proceed };
            let (dx, dy) = wheel_px(event);
            if let Some(shell) = &frames.shell {
                use webkit2gtk::WebViewExt;
                let script = format!("window.__mcpShell&&window.__mcpShell.scrollStream({dx},{dy})");
                shell.evaluate_javascript(&script, None, None, None::<&gtk::gio::Cancellable>, |_| {});
            }
            gtk::glib::Propagation::Stop
        });
        let weak = Rc::downgrade(&frames);
        gtk::glib::timeout_add_local(PING_EVERY, move || match weak.upgrade() {
            Some(frames) => {
                if let Ok(mut frames) = frames.try_borrow_mut() {
                    frames.tick(Instant::now());
                }
                gtk::glib::ControlFlow::Continue
            }
            None => gtk::glib::ControlFlow::Break,
        });
        (overlay, frames)
    }

    /// The web context every webview of the host shares (one network process, the schemes
    /// registered once, by the shell's builder).
    pub(crate) fn context(&mut self) -> &mut wry::WebContext {
        &mut self.context
    }

    /// The shell's webview (for screenshots and the wheel over a View that does not scroll).
    pub(crate) fn set_shell(&mut self, shell: webkit2gtk::WebView) {
        Keyboard::guard(&self.keyboard, &shell);
        self.shell = Some(shell);
    }

    /// Carries out one of the controller's requests.
    pub(crate) fn apply(&mut self, op: FrameOp) {
        match op {
            FrameOp::Mount(mount) => {
                let view = mount.view.clone();
                if let Err(e) = self.mount(mount) {
                    tracing::error!(view = %view, "cannot create the View's webview: {e}");
                    let reason = format!("its webview could not be created: {e}");
                    let _ = self.to_controller.send(HostInput::Frame(FrameSignal::Gone { view, reason }));
                }
            }
            FrameOp::Post { view, msg } => self.post(&view, &msg),
            FrameOp::Unmount { view, keep_process } => self.unmount(&view, keep_process),
            FrameOp::Stop { label } => self.stop(&label),
            FrameOp::Prepare { label } => self.prepare(&label),
            FrameOp::Forget { label } => self.storage.forget(&label),
            FrameOp::Initialized { view } => self.initialized(&view),
            FrameOp::Theme(theme) => self.set_theme(theme),
            FrameOp::Clear => {
                let views: Vec<String> = self.views.keys().cloned().collect();
                for view in views {
                    self.unmount(&view, false);
                }
            }
        }
    }

    fn mount(&mut self, mount: FrameMount) -> crate::Result<()> {
        if self.views.contains_key(&mount.view) {
            return Ok(());
        }
        // A server whose process ended starts again in a new one: its old webviews (still here
        // until the controller unmounts them) belong to the old group.
        if self.groups.get(&mount.label).is_some_and(|g| g.ended.get()) {
            if let Some(group) = self.groups.remove(&mount.label) {
                self.closing.extend(group.keeper.map(|k| k.0));
                self.closing.extend(group.spare.map(|s| s.webview));
            }
        }
        // Related to a View of the same server, or to the blank page that kept its process warm.
        let related = self.group_page(&mount.label);
        let storage = self.storage.clone();
        let group = self.group(&mount.label);
        let (group_id, ended) = (group.id, group.ended.clone());
        let bound = Bound {
            view: mount.view.clone(),
            session: mount.session.clone(),
            budget: RefCell::new(DiagnosticBudget::new(Instant::now())),
            document: mount.document.clone(),
            label: mount.label.clone(),
            generation: storage.generation(&mount.label),
            storage,
        };
        // A View whose frame loads its document takes the proxy page made in advance, if
        // there is one: it has loaded already, and said it is ready.
        let spare = if mount.document.is_some() { group.spare.take() } else { None };
        let (webview, loaded) = match spare {
            Some(spare) => {
                // Before the View's document is asked for (it is, once the ready message below
                // reached the session and the bridge sent the resource).
                super::web_extension::allow_origins(&spare.webview, &mount.origins);
                crate::desktop::engine::clipboard(&spare.webview, mount.clipboard_write);
                *spare.binding.borrow_mut() = Some(bound);
                if let Some(ready) = spare.ready.borrow_mut().take() {
                    mount.session.from_view(ready);
                }
                (spare.webview, spare.loaded)
            }
            None => {
                let binding = Rc::new(RefCell::new(Some(bound)));
                let src = match mount.document {
                    Some(_) => self.shared_proxy_src(&mount.label),
                    None => mount.src.clone(),
                };
                let (webview, loaded) = self.view_webview(&src, related, &binding, &Rc::default())?;
                super::web_extension::allow_origins(&webview, &mount.origins);
                crate::desktop::engine::clipboard(&webview, mount.clipboard_write);
                watch(&webview, Some(binding), ended, self.to_controller.clone());
                (webview, loaded)
            }
        };
        let Some(group) = self.groups.get_mut(&mount.label) else { return Ok(()) };
        group.members.push(mount.view.clone());
        // The new View holds the process now.
        if let Some((keeper, _)) = group.keeper.take() {
            self.closing.push(keeper);
        }
        if !loaded.get() {
            // Shown at the latest after a while, whatever its load does.
            let (me, view) = (self.me.clone(), mount.view.clone());
            gtk::glib::timeout_add_local_once(SHOW_AT_LATEST, move || reveal_soon(me, view));
        }
        let by_url = mount.document.is_some();
        let mut frame = ViewFrame {
            webview,
            label: mount.label.clone(),
            group: group_id,
            placed: None,
            loaded,
            wanted: None,
            by_url,
            seed: RefCell::new(self.storage.seed(&mount.label)),
        };
        // Out of sight at its card's size until the shell says where the slot is: a View that
        // measures itself as it loads (`height: 100vh`) sees the height its card has, not the
        // 1 px of a webview not placed yet (which it would report, and then keep). The width is
        // the stream's until the slot's own comes.
        let width = self.clip.map_or(FIRST_WIDTH, |c| c.2).max(1);
        let height = (mount.height.round() as i32).max(1);
        put(&self.layer, &mut frame, (-10_000 - width, 0, width, height));
        self.views.insert(mount.view, frame);
        if by_url {
            self.schedule_spare(&mount.label);
        }
        Ok(())
    }

    fn unmount(&mut self, view: &str, keep_process: bool) {
        use gtk::prelude::*;
        use wry::WebViewExtUnix;
        let Some(frame) = self.views.remove(view) else { return };
        let (mut hung, mut last, mut ended) = (false, false, false);
        if let Some(group) = self.groups.get_mut(&frame.label).filter(|g| g.id == frame.group) {
            group.members.retain(|v| v != view);
            hung = group.hung.get().is_some();
            last = group.members.is_empty();
            ended = group.ended.get();
        }
        if last && (hung || ended) {
            if let Some(group) = self.groups.remove(&frame.label) {
                self.closing.extend(group.spare.map(|s| s.webview));
            }
        } else if last {
            // The server's last View: a blank page keeps its web process for a while, so the
            // next View of that server opens without starting a process (see KEEP_WARM).
            let ended = self.groups.get(&frame.label).map(|g| g.ended.clone());
            let keeper = self.keeper(&frame.webview, ended);
            self.keeper_generation += 1;
            let generation = self.keeper_generation;
            if let Some(group) = self.groups.get_mut(&frame.label) {
                group.keeper = keeper.map(|k| (k, generation));
            }
            let (weak, label) = (self.me.clone(), frame.label.clone());
            gtk::glib::timeout_add_local_once(KEEP_WARM, move || {
                if let Some(frames) = weak.upgrade() {
                    if let Ok(mut frames) = frames.try_borrow_mut() {
                        frames.cool_down(&label, generation);
                    }
                }
            });
        }
        // A process that loops would go on looping without a page: closing a View of a
        // hung process ends the process (its server's other Views come back, see the controller).
        // Not for a View put to sleep: a process busy loading Views looks hung too.
        if hung && !ended && !keep_process {
            use webkit2gtk::WebViewExt;
            tracing::warn!(view, "closing a View whose web process does not respond: ending the process");
            frame.webview.webview().terminate_web_process();
        }
        // Out of sight now, destroyed a moment later: closing a page is work for its web
        // process, and when many Views close at once (the window closing, a long conversation
        // cleared) their teardown answers should come first.
        let widget = frame.webview.webview();
        self.layer.move_(&widget, -10_000 - frame.placed.map_or(1, |p| p.2), 0);
        self.closing.push(frame.webview);
        if !self.sweep_scheduled {
            self.sweep_scheduled = true;
            let weak = self.me.clone();
            gtk::glib::timeout_add_local_once(CLOSE_AFTER, move || {
                if let Some(frames) = weak.upgrade() {
                    if let Ok(mut frames) = frames.try_borrow_mut() {
                        frames.sweep();
                    }
                }
            });
        }
    }
}
