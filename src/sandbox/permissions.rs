//! Frame `sandbox` flags and the Permissions Policy `allow` attribute from `_meta.ui.permissions`.

use crate::protocol::ResourcePermissions;

/// `sandbox` of both the proxy frame and the View frame. `allow-same-origin` is required by the
/// spec (the View keeps the per-server sandbox origin, never the host's); no popups, no top
/// navigation, no downloads: links and files go through `ui/open-link` and `ui/download-file`.
pub const FRAME_SANDBOX: &str = "allow-scripts allow-same-origin allow-forms";

/// The `allow` attribute for the granted permissions, `"; "`-joined (Permissions Policy syntax).
pub fn allow_attribute(permissions: Option<&ResourcePermissions>) -> String {
    let Some(p) = permissions else {
        return String::new();
    };
    let mut features = Vec::new();
    if p.camera.is_some() {
        features.push("camera");
    }
    if p.microphone.is_some() {
        features.push("microphone");
    }
    if p.geolocation.is_some() {
        features.push("geolocation");
    }
    if p.clipboard_write.is_some() {
        features.push("clipboard-write");
    }
    features.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn maps_each_permission() {
        let p: ResourcePermissions = serde_json::from_value(json!({"microphone": {}, "clipboardWrite": {}})).unwrap();
        assert_eq!(allow_attribute(Some(&p)), "microphone; clipboard-write");
        let all: ResourcePermissions =
            serde_json::from_value(json!({"camera": {}, "microphone": {}, "geolocation": {}, "clipboardWrite": {}}))
                .unwrap();
        assert_eq!(allow_attribute(Some(&all)), "camera; microphone; geolocation; clipboard-write");
        assert_eq!(allow_attribute(None), "");
    }
}
