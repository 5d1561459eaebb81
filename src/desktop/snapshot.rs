//! Screenshots with WebKit's own snapshot API: what the webview renders, no X server capture.

use std::path::PathBuf;

use tokio::sync::oneshot;

/// Takes a snapshot of the visible webview and writes it as PNG; reports the outcome on `done`.
#[cfg(target_os = "linux")]
pub(super) fn capture(webview: &wry::WebView, path: PathBuf, done: oneshot::Sender<Result<PathBuf, String>>) {
    use webkit2gtk::{SnapshotOptions, SnapshotRegion, WebViewExt};
    use wry::WebViewExtUnix;
    let view = webview.webview();
    view.snapshot(
        SnapshotRegion::Visible,
        SnapshotOptions::NONE,
        None::<&webkit2gtk::gio::Cancellable>,
        move |surface| {
            let outcome = surface
                .map_err(|e| format!("WebKit snapshot failed: {e}"))
                .and_then(|surface| write_png(surface, &path));
            let _ = done.send(outcome.map(|()| path));
        },
    );
}

#[cfg(target_os = "linux")]
fn write_png(surface: cairo::Surface, path: &std::path::Path) -> Result<(), String> {
    let image =
        cairo::ImageSurface::try_from(surface).map_err(|_| "the snapshot is not an image surface".to_owned())?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    // Written beside it, then renamed: whoever waits for the file never reads half a PNG.
    let partial = path.with_extension("png.partial");
    let mut file = std::fs::File::create(&partial).map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    image.write_to_png(&mut file).map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    drop(file);
    std::fs::rename(&partial, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(not(target_os = "linux"))]
pub(super) fn capture(_webview: &wry::WebView, _path: PathBuf, done: oneshot::Sender<Result<PathBuf, String>>) {
    let _ = done.send(Err("screenshots are implemented for WebKitGTK (Linux) only".into()));
}
