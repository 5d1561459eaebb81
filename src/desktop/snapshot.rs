//! Screenshots are WebKit's own snapshots (what each webview renders, no X server capture),
//! composed by `frames/screenshot.rs`; this writes the PNG.

/// Writes `image` to `path` as PNG: beside it first, then renamed, so whoever waits for the file
/// never reads half a PNG.
pub(super) fn write_png(image: cairo::ImageSurface, path: &std::path::Path) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let partial = path.with_extension("png.partial");
    let mut file = std::fs::File::create(&partial).map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    image.write_to_png(&mut file).map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    drop(file);
    std::fs::rename(&partial, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
