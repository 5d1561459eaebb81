//! The native file chooser of the servers editor's "Import…": the person picks a config file,
//! and its path goes to the controller as if typed (`ShellMessage::ImportConfig`). GTK's
//! portal-aware `FileChooserNative` runs on the UI thread and answers later, so nothing waits.

use tokio::sync::mpsc;

use crate::app::shell::ShellMessage;
use crate::app::window::HostInput;

/// The chooser while it is open (GTK wants it kept until it answers).
#[derive(Default)]
pub(crate) struct ConfigChooser {
    #[cfg(target_os = "linux")]
    chooser: Option<gtk::FileChooserNative>,
}

impl ConfigChooser {
    /// Opens the chooser over `window`; a second request while it is open is ignored.
    #[cfg(target_os = "linux")]
    pub(crate) fn open(&mut self, window: &tao::window::Window, to_controller: &mpsc::UnboundedSender<HostInput>) {
        use gtk::prelude::*;
        use tao::platform::unix::WindowExtUnix;
        if self.chooser.as_ref().is_some_and(|c| c.is_visible()) {
            return;
        }
        let chooser = gtk::FileChooserNative::new(
            Some("Import the servers of a config file"),
            Some(window.gtk_window()),
            gtk::FileChooserAction::Open,
            Some("Import"),
            Some("Cancel"),
        );
        let json = gtk::FileFilter::new();
        json.set_name(Some("MCP config files (JSON)"));
        json.add_pattern("*.json");
        chooser.add_filter(json);
        let any = gtk::FileFilter::new();
        any.set_name(Some("All files"));
        any.add_pattern("*");
        chooser.add_filter(any);
        let tx = to_controller.clone();
        chooser.connect_response(move |chooser, response| {
            if response == gtk::ResponseType::Accept {
                if let Some(path) = chooser.filename() {
                    let path = path.to_string_lossy().into_owned();
                    let _ = tx.send(HostInput::Shell(ShellMessage::ImportConfig { path }));
                }
            }
        });
        chooser.show();
        self.chooser = Some(chooser);
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn open(&mut self, _window: &tao::window::Window, _to_controller: &mpsc::UnboundedSender<HostInput>) {
        tracing::warn!("the file chooser is wired on Linux only: type the file's path in the servers editor");
    }
}
