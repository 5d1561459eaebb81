//! Params and results of the MCP Apps methods (spec names, camelCase on the wire).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Name and version of a host or App (MCP `Implementation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Implementation {
    /// Machine name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Optional display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Fields this host does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Implementation {
    /// A name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self { name: name.into(), version: version.into(), title: None, extra: Map::new() }
    }
}

/// `_meta.ui.csp` of a UI resource: the origins a View may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceCsp {
    /// Origins for fetch, XHR and WebSocket (`connect-src`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_domains: Option<Vec<String>>,
    /// Origins for scripts, styles, images, fonts and media.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_domains: Option<Vec<String>>,
    /// Origins for nested frames (`frame-src`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_domains: Option<Vec<String>>,
    /// Origins allowed for `<base href>` (`base-uri`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_uri_domains: Option<Vec<String>>,
}

/// `_meta.ui.permissions` of a UI resource: browser features the View asks for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourcePermissions {
    /// Camera access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub camera: Option<Map<String, Value>>,
    /// Microphone access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microphone: Option<Map<String, Value>>,
    /// Geolocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geolocation: Option<Map<String, Value>>,
    /// Writing to the clipboard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipboard_write: Option<Map<String, Value>>,
}

impl ResourcePermissions {
    /// True when nothing is asked for.
    pub fn is_empty(&self) -> bool {
        self.camera.is_none()
            && self.microphone.is_none()
            && self.geolocation.is_none()
            && self.clipboard_write.is_none()
    }
}

/// Light or dark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    /// Light theme.
    #[default]
    Light,
    /// Dark theme.
    Dark,
}

/// Where and how a View is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum DisplayMode {
    /// In the flow of the conversation.
    #[default]
    Inline,
    /// Filling the window or screen.
    Fullscreen,
    /// A small floating window.
    Pip,
}

/// `hostContext.containerDimensions`: per axis a fixed size or a cap (both omitted = unbounded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ContainerDimensions {
    /// Fixed width in px: the host controls it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<f64>,
    /// Largest width the View may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_width: Option<f64>,
    /// Fixed height in px.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<f64>,
    /// Largest height the View may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_height: Option<f64>,
}

/// `hostContext.toolInfo`: the tool call this View belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolInfo {
    /// JSON-RPC id of the originating `tools/call`, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// The full MCP tool definition (must include `inputSchema`).
    pub tool: Value,
}

/// `McpUiHostContext`: what a View knows about where it runs. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct HostContext {
    /// The tool call this View renders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_info: Option<ToolInfo>,
    /// Current theme.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<Theme>,
    /// Style variables and fonts (`{variables, css: {fonts}}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub styles: Option<Value>,
    /// Current display mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_mode: Option<DisplayMode>,
    /// Display modes this host can show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_display_modes: Option<Vec<DisplayMode>>,
    /// The space the View has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_dimensions: Option<ContainerDimensions>,
    /// BCP 47 locale, e.g. `en-US`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
    /// IANA time zone, e.g. `Europe/Berlin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Host application identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// `web`, `desktop` or `mobile`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// Touch and hover support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_capabilities: Option<Value>,
    /// Safe area insets in px.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safe_area_insets: Option<Value>,
    /// Fields this host does not model.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What the host granted the View's sandbox (`hostCapabilities.sandbox`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SandboxGrant {
    /// Permissions put into the frames' `allow` attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<ResourcePermissions>,
    /// The CSP origins that passed validation and are in the header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<ResourceCsp>,
}

/// `McpUiHostCapabilities`: advertised only for what this host really does.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct HostCapabilities {
    /// Experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// `ui/open-link` is handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_links: Option<Map<String, Value>>,
    /// `ui/download-file` is handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download_file: Option<Map<String, Value>>,
    /// `tools/call` is forwarded to the View's server (`{listChanged?}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_tools: Option<Map<String, Value>>,
    /// `resources/*` is forwarded to the View's server (`{listChanged?}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_resources: Option<Map<String, Value>>,
    /// `notifications/message` is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Map<String, Value>>,
    /// What the sandbox really grants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxGrant>,
    /// `ui/update-model-context` is accepted (content modalities).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_model_context: Option<Map<String, Value>>,
    /// `ui/message` is accepted (content modalities).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Map<String, Value>>,
}

/// Params of `ui/initialize` (View -> host).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeParams {
    /// The View's name and version.
    pub app_info: Implementation,
    /// What the View supports.
    #[serde(default)]
    pub app_capabilities: Value,
    /// The protocol version the View speaks.
    pub protocol_version: String,
}

/// Result of `ui/initialize` (host -> View). All four fields are required by the SDK.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeResult {
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// This host.
    pub host_info: Implementation,
    /// What this host does.
    pub host_capabilities: HostCapabilities,
    /// Where the View runs.
    pub host_context: HostContext,
}

/// Params of `ui/notifications/size-changed` (px).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SizeChangedParams {
    /// Content width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<f64>,
    /// Content height.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<f64>,
}

/// Params of `ui/notifications/sandbox-resource-ready` (host -> proxy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SandboxResourceReadyParams {
    /// The View's HTML document.
    pub html: String,
    /// The inner frame's `sandbox` attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The granted CSP (informational: the header is what enforces it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<ResourceCsp>,
    /// The granted permissions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<ResourcePermissions>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn host_context_keeps_unknown_keys_and_skips_absent_ones() {
        let ctx: HostContext = serde_json::from_value(json!({"theme": "dark", "x-custom": {"a": 1}})).unwrap();
        assert_eq!(ctx.theme, Some(Theme::Dark));
        let back = serde_json::to_value(&ctx).unwrap();
        assert_eq!(back, json!({"theme": "dark", "x-custom": {"a": 1}}));
    }

    #[test]
    fn initialize_params_accept_sdk_shape() {
        let p: InitializeParams = serde_json::from_value(json!({
            "appInfo": {"name": "v", "version": "1"},
            "appCapabilities": {"availableDisplayModes": ["inline"]},
            "protocolVersion": "2026-01-26"
        }))
        .unwrap();
        assert_eq!(p.app_info.name, "v");
        assert!(serde_json::from_value::<InitializeParams>(json!({"appInfo": {}})).is_err());
    }

    #[test]
    fn theme_rejects_other_values() {
        assert!(serde_json::from_value::<Theme>(json!("blue")).is_err());
    }
}
