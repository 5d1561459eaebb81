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
//! the controller when one stops answering ([`HANG_AFTER`]) and when it answers again; WebKit's
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

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use wry::WebViewBuilder;

use super::ipc::IpcSecret;
use super::proxy_line::{proxy_message, to_session, DiagnosticBudget, MAX_DIAGNOSTIC_BYTES};
use crate::app::window::{FrameMount, FrameOp, FrameSignal, HostInput, PostLine, Rect, Slot};
use crate::protocol::Theme;

use crate::app::supervisor::HANG_AFTER;
/// How often the layer pings each web process of Views.
const PING_EVERY: Duration = Duration::from_millis(250);
/// A server's web process outlives its last View by this long (a blank page holds it), so
/// opening its next View does not wait for a new process (measured: ~150 ms of a warm open).
const KEEP_WARM: Duration = Duration::from_secs(30);
/// A closed View's webview is destroyed this long after it was taken out of sight.
const CLOSE_AFTER: Duration = Duration::from_millis(500);
/// A server's spare proxy page is made once the View just mounted initialized (its load and
/// handshake are work for the same web process), or this long after the mount at the latest.
/// Made 50 ms after the mount, the spare's page was created in the middle of that View's load
/// (55-65 ms for the benchmark's 540 KB App) and the open took longer (BENCHMARKS.md).
const SPARE_AT_LATEST: Duration = Duration::from_secs(1);
/// A View's webview is in sight this long after it was mounted at the latest, even if its proxy
/// page did not report its load (see [`ViewFrame::loaded`]).
const SHOW_AT_LATEST: Duration = Duration::from_secs(2);

/// The name of every View's webview widget (how the keyboard guard tells them from the shell).
const VIEW_WIDGET: &str = "mcp-apps-host-view";
/// How long after the person's click on a View (or Tab into it) the View may take the keyboard.
const PERSON_FOCUS: Duration = Duration::from_secs(1);

/// The keyboard is the person's: a View takes it only when the person clicks into it or moves
/// into it with Tab, and never while the shell shows a dialog (consent, a server's question),
/// which takes it from every View. A View's own `focus()` moves nothing (UI thread only).
#[derive(Default)]
struct Keyboard {
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

/// The View a webview's IPC line and navigation guard speak for.
struct Bound {
    view: String,
    session: crate::bridge::ViewHandle,
    /// What the View may send on its line besides its messages.
    budget: RefCell<DiagnosticBudget>,
    /// Where its document is served, for a View whose frame loads it.
    document: Option<String>,
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
    context: wry::WebContext,
}

/// The card's background behind a View that draws none.
fn background(theme: Theme) -> (u8, u8, u8, u8) {
    match theme {
        Theme::Dark => (0x1c, 0x20, 0x26, 0xff),
        _ => (0xff, 0xff, 0xff, 0xff),
    }
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
        use gtk::prelude::*;
        // Every move of the window's focus passes the keyboard guard.
        if let Some(window) = shell.toplevel().and_then(|w| w.downcast::<gtk::Window>().ok()) {
            let keyboard = Rc::downgrade(&self.keyboard);
            window.connect_set_focus(move |_, widget| {
                if let (Some(keyboard), Some(widget)) = (keyboard.upgrade(), widget) {
                    keyboard.focus_moves_to(widget);
                }
            });
        }
        *self.keyboard.shell.borrow_mut() = Some(shell.clone());
        self.shell = Some(shell);
    }

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
        let group = self.group(&mount.label);
        let (group_id, ended) = (group.id, group.ended.clone());
        let bound = Bound {
            view: mount.view.clone(),
            session: mount.session.clone(),
            budget: RefCell::new(DiagnosticBudget::new(Instant::now())),
            document: mount.document.clone(),
        };
        // A View whose frame loads its document takes the proxy page made in advance, if
        // there is one: it has loaded already, and said it is ready.
        let spare = if mount.document.is_some() { group.spare.take() } else { None };
        let (webview, loaded) = match spare {
            Some(spare) => {
                // Before the View's document is asked for (it is, once the ready message below
                // reached the session and the bridge sent the resource).
                super::web_extension::allow_origins(&spare.webview, &mount.origins);
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
        let frame = ViewFrame {
            webview,
            label: mount.label.clone(),
            group: group_id,
            placed: None,
            loaded,
            wanted: None,
            by_url,
        };
        self.views.insert(mount.view, frame);
        if by_url {
            self.schedule_spare(&mount.label);
        }
        Ok(())
    }

    /// The server's group, new (no process yet) if it has none.
    fn group(&mut self, label: &str) -> &mut Group {
        let next_group = &mut self.next_group;
        self.groups.entry(label.to_owned()).or_insert_with(|| {
            *next_group += 1;
            Group {
                id: *next_group,
                members: Vec::new(),
                ended: Rc::new(Cell::new(false)),
                ping: Rc::new(Cell::new(None)),
                hung: Rc::new(Cell::new(None)),
                keeper: None,
                spare: None,
            }
        })
    }

    /// The server's first View is on its way (a tool named at start): its web process starts
    /// now, with a spare proxy page, while the server is still connecting, instead of after
    /// the server answered. Unless a View of it came, both go after [`KEEP_WARM`].
    fn prepare(&mut self, label: &str) {
        if self.groups.contains_key(label) {
            return;
        }
        let id = self.group(label).id;
        self.make_spare(label, true);
        let (weak, label) = (self.me.clone(), label.to_owned());
        gtk::glib::timeout_add_local_once(KEEP_WARM, move || {
            if let Some(frames) = weak.upgrade() {
                if let Ok(mut frames) = frames.try_borrow_mut() {
                    frames.forget_unused(&label, id);
                }
            }
        });
    }

    /// A group made by [`Self::prepare`] that no View came to: its spare page (and so its
    /// process) goes.
    fn forget_unused(&mut self, label: &str, id: u64) {
        let unused = self.groups.get(label).is_some_and(|g| g.id == id && g.members.is_empty() && g.keeper.is_none());
        if unused {
            if let Some(group) = self.groups.remove(label) {
                tracing::debug!(label, "no View came to the web process made for it at start");
                self.closing.extend(group.spare.map(|s| s.webview));
            }
            self.sweep();
        }
    }

    /// A page of the server's web process, for a new webview to be created related to: one of
    /// its Views, or the blank page that keeps it warm.
    fn group_page(&self, label: &str) -> Option<webkit2gtk::WebView> {
        use wry::WebViewExtUnix;
        let group = self.groups.get(label).filter(|g| !g.ended.get())?;
        group
            .members
            .first()
            .and_then(|v| self.views.get(v))
            .map(|f| f.webview.webview())
            .or_else(|| group.keeper.as_ref().map(|(k, _)| k.webview()))
            .or_else(|| group.spare.as_ref().map(|s| s.webview.webview()))
    }

    /// A new URL for a proxy page of the label's origin that is not one View's own.
    fn shared_proxy_src(&mut self, label: &str) -> String {
        self.next_spare += 1;
        format!("{}/proxy.html?frame=f{}", crate::sandbox::origin::sandbox_origin(label), self.next_spare)
    }

    /// A webview for a View's proxy page at `src`, out of sight, loading. Its IPC line and its
    /// navigations speak for whatever View `binding` names; while it names none (a spare), the
    /// line keeps only the proxy's ready message, in `early_ready`. Also returns the flag its
    /// proxy page's load sets (see [`ViewFrame::loaded`]).
    fn view_webview(
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
            false => super::schemes::frame_src(src)
                .ok_or_else(|| crate::Error::Desktop(format!("no top document for the proxy page {src}")))?,
        };
        let (tx, ipc_binding, ipc_secret, ready) =
            (self.to_controller.clone(), binding.clone(), secret.clone(), early_ready.clone());
        let (own_src, own_top, nav_binding) = (src.to_owned(), top_src.clone(), binding.clone());
        let builder = WebViewBuilder::new_with_web_context(&mut self.context)
            .with_devtools(self.devtools)
            .with_background_color(background(self.theme))
            .with_initialization_script_for_main_only(secret.proxy_init_script(src, on_top), false)
            .with_initialization_script_for_main_only(super::ipc::FRAME_HOOK_SCRIPT, false)
            .with_ipc_handler(move |request| match &*ipc_binding.borrow() {
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
        let mut builder = super::refuse_windows_and_downloads(builder);
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
        super::engine::harden(&webview);
        super::lean_rendering(&webview);
        deny_fullscreen(&widget);
        // The person's click on the View, or Tab into it: the View may take the keyboard now.
        widget.set_widget_name(VIEW_WIDGET);
        let keyboard = Rc::downgrade(&self.keyboard);
        widget.connect_button_press_event(move |_, _| {
            if let Some(keyboard) = keyboard.upgrade() {
                keyboard.person.set(Some(Instant::now()));
            }
            gtk::glib::Propagation::Proceed
        });
        let keyboard = Rc::downgrade(&self.keyboard);
        widget.connect_focus(move |_, _| {
            if let Some(keyboard) = keyboard.upgrade() {
                keyboard.person.set(Some(Instant::now()));
            }
            gtk::glib::Propagation::Proceed
        });
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

    /// A spare proxy page for the server's next View, once the View that was just mounted
    /// initialized ([`Self::initialized`]) or after [`SPARE_AT_LATEST`].
    fn schedule_spare(&mut self, label: &str) {
        let (weak, label) = (self.me.clone(), label.to_owned());
        gtk::glib::timeout_add_local_once(SPARE_AT_LATEST, move || {
            if let Some(frames) = weak.upgrade() {
                if let Ok(mut frames) = frames.try_borrow_mut() {
                    frames.make_spare(&label, false);
                }
            }
        });
    }

    /// `view` initialized: its server's spare proxy page is made now, if the View's document
    /// was loaded by URL (only such a View can take a spare).
    fn initialized(&mut self, view: &str) {
        let Some(frame) = self.views.get(view).filter(|f| f.by_url) else { return };
        let label = frame.label.clone();
        self.make_spare(&label, false);
    }

    /// A proxy page in the server's web process, loaded before its View is known (see
    /// [`Spare`]), unless the server has one or its process is in trouble. Only while the
    /// server has Views, or `first`: for its first View, in a process of its own.
    fn make_spare(&mut self, label: &str, first: bool) {
        let Some(group) = self.groups.get(label) else { return };
        if group.spare.is_some()
            || group.ended.get()
            || group.hung.get().is_some()
            || (group.members.is_empty() && !first)
        {
            return;
        }
        let ended = group.ended.clone();
        let related = self.group_page(label);
        let (binding, ready): (Binding, _) = (Rc::default(), Rc::default());
        let src = self.shared_proxy_src(label);
        match self.view_webview(&src, related, &binding, &ready) {
            Ok((webview, loaded)) => {
                watch(&webview, Some(binding.clone()), ended, self.to_controller.clone());
                if let Some(group) = self.groups.get_mut(label) {
                    group.spare = Some(Spare { webview, loaded, binding, ready });
                }
            }
            Err(e) => tracing::debug!(label, "no spare proxy page: {e}"),
        }
    }

    /// Hands `msg` (JSON text) to the View's proxy, which posts it to the View.
    fn post(&self, view: &str, msg: &str) {
        self.deliver(view, &[msg]);
    }

    /// Hands `msgs` (JSON texts, in order) to the View's proxy in one script.
    fn deliver(&self, view: &str, msgs: &[&str]) {
        let Some(frame) = self.views.get(view) else { return };
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
            (false, _) => format!(
                "(function(t){{var f=document.querySelector(\"iframe\");f&&f.contentWindow&&f.contentWindow.postMessage(t,{})}})({})",
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
    fn deliver_batch(&self, batch: &[(String, String)]) {
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

    /// A blank webview related to `webview` (its process), out of sight, with nothing to load;
    /// it sets `ended` if that process ends while it holds it.
    fn keeper(&mut self, webview: &wry::WebView, ended: Option<Rc<Cell<bool>>>) -> Option<wry::WebView> {
        use gtk::prelude::*;
        use wry::{WebViewBuilderExtUnix, WebViewExtUnix};
        let built = WebViewBuilder::new_with_web_context(&mut self.context)
            .with_related_view(webview.webview())
            .with_navigation_handler(|url| url == "about:blank");
        let built = super::refuse_windows_and_downloads(built).build_gtk(&self.layer);
        match built {
            Ok(keeper) => {
                let widget = keeper.webview();
                widget.set_size_request(1, 1);
                self.layer.move_(&widget, -10_000, 0);
                if let Some(ended) = ended {
                    watch(&keeper, None, ended, self.to_controller.clone());
                }
                Some(keeper)
            }
            Err(e) => {
                tracing::debug!("no webview to keep a web process warm: {e}");
                None
            }
        }
    }

    /// The server's process was kept warm long enough: it goes unless a View came back.
    fn cool_down(&mut self, label: &str, generation: u64) {
        let Some(group) = self.groups.get_mut(label) else { return };
        if !group.members.is_empty() || group.keeper.as_ref().is_none_or(|(_, g)| *g != generation) {
            return;
        }
        if let Some((keeper, _)) = group.keeper.take() {
            self.closing.push(keeper);
        }
        if let Some(group) = self.groups.remove(label) {
            self.closing.extend(group.spare.map(|s| s.webview));
        }
        self.sweep();
    }

    /// Destroys the webviews of closed Views.
    fn sweep(&mut self) {
        use gtk::prelude::*;
        use wry::WebViewExtUnix;
        self.sweep_scheduled = false;
        for webview in std::mem::take(&mut self.closing) {
            self.layer.remove(&webview.webview());
        }
    }

    fn stop(&mut self, label: &str) {
        use webkit2gtk::WebViewExt;
        use wry::WebViewExtUnix;
        let Some(first) = self.groups.get(label).and_then(|g| g.members.first()) else { return };
        if let Some(frame) = self.views.get(first) {
            tracing::warn!(label, "ending the web process of a server's Views");
            frame.webview.webview().terminate_web_process();
        }
    }

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
    fn reveal(&mut self, view: &str) {
        let Some(frame) = self.views.get_mut(view) else { return };
        frame.loaded.set(true);
        if let Some(want) = frame.wanted.take() {
            put(&self.layer, frame, want);
        }
    }

    /// The card background follows the theme.
    fn set_theme(&mut self, theme: Theme) {
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

    /// Pings each web process of Views; reports the ones that stopped answering.
    pub(crate) fn tick(&mut self, now: Instant) {
        use webkit2gtk::WebViewExt;
        use wry::WebViewExtUnix;
        for (label, group) in self.groups.iter().filter(|(_, g)| !g.ended.get()) {
            let Some(frame) = group.members.first().and_then(|v| self.views.get(v)) else { continue };
            match group.ping.get() {
                None => {
                    group.ping.set(Some(now));
                    let (ping, hung, tx, label) =
                        (group.ping.clone(), group.hung.clone(), self.to_controller.clone(), label.clone());
                    let view = frame.webview.webview();
                    view.evaluate_javascript("0", None, None, None::<&gtk::gio::Cancellable>, move |_| {
                        ping.set(None);
                        if let Some(since) = hung.take() {
                            let after = since.elapsed();
                            let _ = tx.send(HostInput::Frame(FrameSignal::Responsive { label, after }));
                        }
                    });
                }
                Some(sent) if group.hung.get().is_none() && now.saturating_duration_since(sent) >= HANG_AFTER => {
                    group.hung.set(Some(sent));
                    let _ = self.to_controller.send(HostInput::Frame(FrameSignal::Hung { label: label.clone() }));
                }
                Some(_) => {}
            }
        }
    }

    /// The Views' webviews that are in sight, with where they are in the window.
    fn visible(&self) -> Vec<(webkit2gtk::WebView, (i32, i32))> {
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

    /// The webview of a View, once it is in sight where the shell placed it (for an
    /// interaction session's input, `super::input`): before, its page is laid out in a 1 px box.
    pub(crate) fn webview_in_sight(&self, view: &str) -> Result<webkit2gtk::WebView, String> {
        use wry::WebViewExtUnix;
        let frame = self.views.get(view).ok_or_else(|| format!("the View {view} has no webview"))?;
        match frame.placed {
            Some((x, _, w, h)) if x > -10_000 && w > 1 && h > 1 && frame.loaded.get() => Ok(frame.webview.webview()),
            // What an interaction session is told until it is (it asks again).
            _ => Err("the View is not in sight yet".into()),
        }
    }

    /// A screenshot of the window's content: the shell with every View in sight drawn where the
    /// person sees it, clipped like the layer clips it.
    pub(crate) fn screenshot(
        frames: &Rc<RefCell<Self>>,
        path: std::path::PathBuf,
        done: tokio::sync::oneshot::Sender<Result<std::path::PathBuf, String>>,
    ) {
        use webkit2gtk::{SnapshotOptions, SnapshotRegion, WebViewExt};
        let (shell, views, clip) = {
            let f = frames.borrow();
            (f.shell.clone(), f.visible(), f.clip)
        };
        let Some(shell) = shell else {
            let _ = done.send(Err("the shell is not there".into()));
            return;
        };
        gtk::glib::MainContext::default().spawn_local(async move {
            let outcome = async {
                let base = shell
                    .snapshot_future(SnapshotRegion::Visible, SnapshotOptions::NONE)
                    .await
                    .map_err(|e| format!("WebKit snapshot failed: {e}"))?;
                let base =
                    cairo::ImageSurface::try_from(base).map_err(|_| "the snapshot is not an image".to_owned())?;
                let mut layers = Vec::new();
                for (view, at) in views {
                    match view.snapshot_future(SnapshotRegion::Visible, SnapshotOptions::NONE).await {
                        Ok(s) => {
                            let image = cairo::ImageSurface::try_from(s)
                                .map_err(|_| "a View's snapshot is not an image".to_owned())?;
                            layers.push((image, at));
                        }
                        Err(e) => tracing::warn!("a View's snapshot failed: {e}"),
                    }
                }
                // Drawn into a surface of our own: WebKit's snapshot surfaces are not drawn into
                // (measured: painting onto one crashed in pixman).
                let out = cairo::ImageSurface::create(cairo::Format::ARgb32, base.width(), base.height())
                    .map_err(|e| format!("cannot draw the screenshot: {e}"))?;
                let cr = cairo::Context::new(&out).map_err(|e| format!("cannot draw the screenshot: {e}"))?;
                cr.set_source_surface(&base, 0.0, 0.0)
                    .and_then(|()| cr.paint())
                    .map_err(|e| format!("cannot draw the screenshot: {e}"))?;
                if let Some((x, y, w, h)) = clip {
                    cr.rectangle(f64::from(x), f64::from(y), f64::from(w), f64::from(h));
                    cr.clip();
                }
                for (surface, (x, y)) in &layers {
                    cr.set_source_surface(surface, f64::from(*x), f64::from(*y))
                        .and_then(|()| cr.paint())
                        .map_err(|e| format!("cannot draw a View into the screenshot: {e}"))?;
                }
                drop(cr);
                // The first View alone beside it (`NAME.view.png`): what `check --baseline`
                // compares, free of the shell around it.
                if let Some((view, _)) = layers.first() {
                    let alone = cairo::ImageSurface::create(cairo::Format::ARgb32, view.width(), view.height())
                        .map_err(|e| format!("cannot draw the View's screenshot: {e}"))?;
                    let cr =
                        cairo::Context::new(&alone).map_err(|e| format!("cannot draw the View's screenshot: {e}"))?;
                    cr.set_source_surface(view, 0.0, 0.0)
                        .and_then(|()| cr.paint())
                        .map_err(|e| format!("cannot draw the View's screenshot: {e}"))?;
                    drop(cr);
                    super::snapshot::write_png(alone, &path.with_extension("view.png"))?;
                }
                super::snapshot::write_png(out, &path).map(|()| path)
            }
            .await;
            let _ = done.send(outcome);
        });
    }
}

/// How far a wheel event scrolls, in CSS pixels (a notch is 50 px, as in the engine itself).
fn wheel_px(event: &gtk::gdk::EventScroll) -> (f64, f64) {
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

/// A View changes how it is shown only through `ui/request-display-mode`, which the host
/// decides: the page's own Fullscreen API is off (`document.fullscreenEnabled` is false), and
/// a request that reaches WebKit anyway is refused.
fn deny_fullscreen(widget: &webkit2gtk::WebView) {
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

/// `text` as a JavaScript string literal (JSON's string syntax is one).
fn string_literal(text: &str) -> String {
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

/// WebKit's word that the web process of a server's webview ended: its group is `ended`, and
/// the controller hears of it when the webview holds a View (`binding`; not a keeper or a
/// spare nobody took).
/// Moves (and sizes) a View's webview to `want`, layer coordinates, if it is not there.
fn put(layer: &gtk::Layout, frame: &mut ViewFrame, want: (i32, i32, i32, i32)) {
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
fn reveal_soon(me: std::rc::Weak<RefCell<FrameLayer>>, view: String) {
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

fn watch(
    webview: &wry::WebView,
    binding: Option<Binding>,
    ended: Rc<Cell<bool>>,
    tx: mpsc::UnboundedSender<HostInput>,
) {
    use webkit2gtk::WebViewExt;
    use wry::WebViewExtUnix;
    webview.webview().connect_web_process_terminated(move |_, reason| {
        ended.set(true);
        let view = binding.as_ref().and_then(|b| b.borrow().as_ref().map(|b| b.view.clone()));
        if let Some(view) = view {
            let reason = super::web_content::termination_reason(reason).to_owned();
            let _ = tx.send(HostInput::Frame(FrameSignal::Gone { view, reason }));
        }
    });
}
