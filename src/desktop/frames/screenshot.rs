//! The window's screenshot: the shell with every View in sight drawn where the person sees it.

use std::cell::RefCell;
use std::rc::Rc;

use super::FrameLayer;

impl FrameLayer {
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
                    crate::desktop::snapshot::write_png(alone, &path.with_extension("view.png"))?;
                }
                crate::desktop::snapshot::write_png(out, &path).map(|()| path)
            }
            .await;
            let _ = done.send(outcome);
        });
    }
}
