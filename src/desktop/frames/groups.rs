//! One web process per server: the group of its Views' webviews, the spare proxy page made
//! for its next View, the blank page that keeps the process warm after its last View, the
//! pings that tell a hung process, and WebKit's word that one ended.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use wry::WebViewBuilder;

use super::{Binding, FrameLayer, Group, Spare, KEEP_WARM};
use crate::app::supervisor::HANG_AFTER;
use crate::app::window::{FrameSignal, HostInput};

/// A server's spare proxy page is made once the View just mounted initialized (its load and
/// handshake are work for the same web process), or this long after the mount at the latest.
/// Made 50 ms after the mount, the spare's page was created in the middle of that View's load
/// (55-65 ms for the benchmark's 540 KB App) and the open took longer (BENCHMARKS.md).
const SPARE_AT_LATEST: Duration = Duration::from_secs(1);

impl FrameLayer {
    /// The server's group, new (no process yet) if it has none.
    pub(super) fn group(&mut self, label: &str) -> &mut Group {
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
    pub(super) fn prepare(&mut self, label: &str) {
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
    pub(super) fn forget_unused(&mut self, label: &str, id: u64) {
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
    pub(super) fn group_page(&self, label: &str) -> Option<webkit2gtk::WebView> {
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
    pub(super) fn shared_proxy_src(&mut self, label: &str) -> String {
        self.next_spare += 1;
        format!("{}/proxy.html?frame=f{}", crate::sandbox::origin::sandbox_origin(label), self.next_spare)
    }

    /// A spare proxy page for the server's next View, once the View that was just mounted
    /// initialized ([`Self::initialized`]) or after [`SPARE_AT_LATEST`].
    pub(super) fn schedule_spare(&mut self, label: &str) {
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
    pub(super) fn initialized(&mut self, view: &str) {
        let Some(frame) = self.views.get(view).filter(|f| f.by_url) else { return };
        let label = frame.label.clone();
        self.make_spare(&label, false);
    }

    /// A proxy page in the server's web process, loaded before its View is known (see
    /// [`Spare`]), unless the server has one or its process is in trouble. Only while the
    /// server has Views, or `first`: for its first View, in a process of its own.
    pub(super) fn make_spare(&mut self, label: &str, first: bool) {
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

    /// A blank webview related to `webview` (its process), out of sight, with nothing to load;
    /// it sets `ended` if that process ends while it holds it.
    pub(super) fn keeper(&mut self, webview: &wry::WebView, ended: Option<Rc<Cell<bool>>>) -> Option<wry::WebView> {
        use gtk::prelude::*;
        use wry::{WebViewBuilderExtUnix, WebViewExtUnix};
        let built = WebViewBuilder::new_with_web_context(&mut self.context)
            .with_related_view(webview.webview())
            .with_navigation_handler(|url| url == "about:blank");
        let built = crate::desktop::refuse_windows_and_downloads(built).build_gtk(&self.layer);
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
    pub(super) fn cool_down(&mut self, label: &str, generation: u64) {
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
    pub(super) fn sweep(&mut self) {
        use gtk::prelude::*;
        use wry::WebViewExtUnix;
        self.sweep_scheduled = false;
        for webview in std::mem::take(&mut self.closing) {
            self.layer.remove(&webview.webview());
        }
    }

    pub(super) fn stop(&mut self, label: &str) {
        use webkit2gtk::WebViewExt;
        use wry::WebViewExtUnix;
        let Some(first) = self.groups.get(label).and_then(|g| g.members.first()) else { return };
        if let Some(frame) = self.views.get(first) {
            tracing::warn!(label, "ending the web process of a server's Views");
            frame.webview.webview().terminate_web_process();
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
}

/// WebKit's word that the web process of a server's webview ended: its group is `ended`, and
/// the controller hears of it when the webview holds a View (`binding`; not a keeper or a
/// spare nobody took).
pub(super) fn watch(
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
            let reason = crate::desktop::web_content::termination_reason(reason).to_owned();
            let _ = tx.send(HostInput::Frame(FrameSignal::Gone { view, reason }));
        }
    });
}
