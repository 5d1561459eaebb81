//! The native file chooser: the servers editor's "Import…" (a config file, whose path goes to
//! the controller as if typed: `ShellMessage::ImportConfig`) and the install dialog's "Choose…"
//! beside a folder or file setting (`ShellMessage::PathChosen`, which the controller puts into
//! the field). GTK's portal-aware `FileChooserNative` runs on the UI thread and answers later,
//! so nothing waits.

use tokio::sync::mpsc;

use crate::app::shell::ShellMessage;
use crate::app::window::{Choice, HostInput};

/// The chooser while it is open (GTK wants it kept until it answers).
#[derive(Default)]
pub(crate) struct FileChooser {
    #[cfg(target_os = "linux")]
    chooser: Option<gtk::FileChooserNative>,
}

impl FileChooser {
    /// Opens the chooser for `choice` over `window`; a second request while one is open is
    /// ignored.
    #[cfg(target_os = "linux")]
    pub(crate) fn open(
        &mut self,
        window: &tao::window::Window,
        to_controller: &mpsc::UnboundedSender<HostInput>,
        choice: Choice,
    ) {
        use gtk::prelude::*;
        use tao::platform::unix::WindowExtUnix;
        if self.chooser.as_ref().is_some_and(|c| c.is_visible()) {
            return;
        }
        let (title, action, accept) = match &choice {
            Choice::ConfigFile => ("Import the servers of a config file", gtk::FileChooserAction::Open, "Import"),
            Choice::Setting { directory: true, .. } => {
                ("Choose a folder", gtk::FileChooserAction::SelectFolder, "Choose")
            }
            Choice::Setting { directory: false, .. } => ("Choose a file", gtk::FileChooserAction::Open, "Choose"),
        };
        let chooser =
            gtk::FileChooserNative::new(Some(title), Some(window.gtk_window()), action, Some(accept), Some("Cancel"));
        if choice == Choice::ConfigFile {
            let json = gtk::FileFilter::new();
            json.set_name(Some("MCP config files (JSON)"));
            json.add_pattern("*.json");
            chooser.add_filter(json);
            let any = gtk::FileFilter::new();
            any.set_name(Some("All files"));
            any.add_pattern("*");
            chooser.add_filter(any);
        }
        let tx = to_controller.clone();
        chooser.connect_response(move |chooser, response| {
            if response != gtk::ResponseType::Accept {
                return;
            }
            let Some(path) = chooser.filename() else { return };
            let path = path.to_string_lossy().into_owned();
            let message = match &choice {
                Choice::ConfigFile => ShellMessage::ImportConfig { path },
                Choice::Setting { field, .. } => ShellMessage::PathChosen { field: field.clone(), path },
            };
            let _ = tx.send(HostInput::Shell(message));
        });
        chooser.show();
        self.chooser = Some(chooser);
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn open(
        &mut self,
        _window: &tao::window::Window,
        _to_controller: &mpsc::UnboundedSender<HostInput>,
        _choice: Choice,
    ) {
        tracing::warn!("the file chooser is wired on Linux only: type the path");
    }
}
