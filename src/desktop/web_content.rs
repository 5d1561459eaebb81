//! The UI thread's side of supervising the web content (see `supervisor.rs` for the rules):
//! WebKit's signals go to the controller, and the controller's decisions are carried out here,
//! including the one thing the shell cannot do while its own process hangs: ask the person, in
//! a native dialog.

use tokio::sync::mpsc;

use crate::app::window::{HostInput, WebContentOp, WebContentSignal};

/// Connects WebKit's process signals of `webview` to the controller.
#[cfg(target_os = "linux")]
pub(crate) fn watch(webview: &wry::WebView, to_controller: mpsc::UnboundedSender<HostInput>) {
    use webkit2gtk::WebViewExt;
    use wry::WebViewExtUnix;
    let view = webview.webview();
    let tx = to_controller.clone();
    view.connect_web_process_terminated(move |_, reason| {
        let reason = termination_reason(reason);
        let _ = tx.send(HostInput::WebContent(WebContentSignal::Terminated(reason.to_owned())));
    });
    view.connect_is_web_process_responsive_notify(move |view| {
        let _ =
            to_controller.send(HostInput::WebContent(WebContentSignal::Responsive(view.is_web_process_responsive())));
    });
}

/// WebKit's reason for a web process that ended, in words for a person.
#[cfg(target_os = "linux")]
pub(crate) fn termination_reason(reason: webkit2gtk::WebProcessTerminationReason) -> &'static str {
    use webkit2gtk::WebProcessTerminationReason;
    match reason {
        WebProcessTerminationReason::Crashed => "the web content crashed",
        WebProcessTerminationReason::ExceededMemoryLimit => "the web content used more memory than WebKit allows",
        WebProcessTerminationReason::TerminatedByApi => "the web content was stopped",
        _ => "the web content ended",
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn watch(_webview: &wry::WebView, _to_controller: mpsc::UnboundedSender<HostInput>) {}

/// The native "not responding" dialog, while it is shown.
#[derive(Default)]
pub(crate) struct HangDialog {
    #[cfg(target_os = "linux")]
    dialog: Option<gtk::MessageDialog>,
}

impl HangDialog {
    /// Carries out `op` on `webview` (in `window`).
    pub(crate) fn apply(
        &mut self,
        op: WebContentOp,
        window: &tao::window::Window,
        webview: &wry::WebView,
        to_controller: &mpsc::UnboundedSender<HostInput>,
    ) {
        match op {
            WebContentOp::Stop => {
                self.dismiss();
                stop(webview);
            }
            WebContentOp::Restart => {
                if let Err(e) = webview.load_url(&format!("{}/", crate::sandbox::HOST_ORIGIN)) {
                    tracing::error!("cannot load the shell again: {e}");
                }
            }
            WebContentOp::AskHung { text } => self.ask(window, &text, to_controller),
            WebContentOp::DismissHung => self.dismiss(),
        }
    }

    #[cfg(target_os = "linux")]
    fn ask(&mut self, window: &tao::window::Window, text: &str, to_controller: &mpsc::UnboundedSender<HostInput>) {
        use gtk::prelude::*;
        use tao::platform::unix::WindowExtUnix;
        self.dismiss();
        let dialog = gtk::MessageDialog::new(
            Some(window.gtk_window()),
            gtk::DialogFlags::DESTROY_WITH_PARENT,
            gtk::MessageType::Warning,
            gtk::ButtonsType::None,
            "The Apps are not responding",
        );
        dialog.set_secondary_text(Some(text));
        dialog.add_button("Wait", gtk::ResponseType::Other(1));
        dialog.add_button("Stop the Apps", gtk::ResponseType::Other(2));
        // Waiting is the safe answer: Enter must not stop anybody's work.
        dialog.set_default_response(gtk::ResponseType::Other(1));
        let tx = to_controller.clone();
        dialog.connect_response(move |dialog, response| {
            let stop = response == gtk::ResponseType::Other(2);
            let _ = tx.send(HostInput::WebContent(WebContentSignal::HangAnswer { stop }));
            dialog.hide();
        });
        dialog.show_all();
        self.dialog = Some(dialog);
    }

    #[cfg(not(target_os = "linux"))]
    fn ask(&mut self, _window: &tao::window::Window, text: &str, _to_controller: &mpsc::UnboundedSender<HostInput>) {
        tracing::warn!("the Apps are not responding: {text}");
    }

    fn dismiss(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(dialog) = self.dialog.take() {
            use gtk::prelude::*;
            dialog.close();
        }
    }
}

#[cfg(target_os = "linux")]
fn stop(webview: &wry::WebView) {
    use webkit2gtk::WebViewExt;
    use wry::WebViewExtUnix;
    webview.webview().terminate_web_process();
}

#[cfg(not(target_os = "linux"))]
fn stop(webview: &wry::WebView) {
    let _ = webview.load_url(&format!("{}/", crate::sandbox::HOST_ORIGIN));
}
