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
#[non_exhaustive]
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
#[non_exhaustive]
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

/// Params of `ui/notifications/tool-input` and `tool-input-partial`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolInputParams {
    /// The (complete or partial) tool arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
}

/// Params of `ui/notifications/tool-cancelled`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCancelledParams {
    /// Why the tool run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Params of `ui/open-link`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct OpenLinkParams {
    /// The URL to open outside the webview.
    pub url: String,
}

/// Params of `ui/message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MessageParams {
    /// Always `user` in this protocol version.
    pub role: String,
    /// MCP content blocks.
    pub content: Vec<ContentBlock>,
}

/// An MCP content block, kept whole; only its `type` is read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ContentBlock {
    /// `text`, `image`, `audio`, `resource`, `resource_link`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The rest of the block.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// Params of `ui/update-model-context` (both empty or absent: clear).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UpdateModelContextParams {
    /// Content blocks for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ContentBlock>>,
    /// Structured data for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Map<String, Value>>,
}

impl UpdateModelContextParams {
    /// True when the update clears the context.
    pub fn is_empty(&self) -> bool {
        self.content.as_ref().is_none_or(Vec::is_empty) && self.structured_content.as_ref().is_none_or(Map::is_empty)
    }
}

/// Params of `ui/request-display-mode`, and its result (the mode in effect).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DisplayModeParams {
    /// The mode.
    pub mode: DisplayMode,
}

/// Params of `ui/download-file`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DownloadFileParams {
    /// `resource` (embedded) or `resource_link` blocks.
    pub contents: Vec<ContentBlock>,
}

/// Result of the consent-based requests (`ui/open-link`, `ui/message`, `ui/download-file`):
/// `{}` when done, `{isError: true}` when refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ActionResult {
    /// Set when the host refused or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Why (for the App's developer; not shown to the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ActionResult {
    /// Done.
    pub fn ok() -> Self {
        Self::default()
    }

    /// Refused, with the reason.
    pub fn refused(reason: impl Into<String>) -> Self {
        Self { is_error: Some(true), message: Some(reason.into()) }
    }
}

/// Params of `notifications/message` (MCP logging).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LogParams {
    /// `debug` ... `emergency`.
    pub level: String,
    /// Logger name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// Any JSON.
    #[serde(default)]
    pub data: Value,
}

/// Params of `notifications/cancelled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CancelledParams {
    /// The id of the request being cancelled.
    pub request_id: Value,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Params of `tools/call` as a View sends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CallToolParams {
    /// The tool.
    pub name: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Request metadata (progress token).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Task augmentation (not supported in MCP Apps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Value>,
}

/// Reads typed params, turning serde's message (which names the field) into `-32602`.
pub fn parse_params<T: serde::de::DeserializeOwned>(
    method: &str,
    params: Option<&Value>,
) -> Result<T, crate::protocol::RpcError> {
    serde_json::from_value(params.cloned().unwrap_or(Value::Object(Map::new())))
        .map_err(|e| crate::protocol::RpcError::invalid_params(format!("{method}: {e}")))
}

#[cfg(test)]
mod method_tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: serde::de::DeserializeOwned + Serialize>(v: Value) {
        let typed: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"));
        assert_eq!(serde_json::to_value(typed).unwrap(), v);
    }

    #[test]
    fn every_method_round_trips_and_keeps_extension_fields() {
        round_trip::<ToolInputParams>(json!({"arguments": {"a": [1, {"b": null}]}}));
        round_trip::<ToolCancelledParams>(json!({"reason": "user"}));
        round_trip::<OpenLinkParams>(json!({"url": "https://x.example"}));
        round_trip::<MessageParams>(
            json!({"role": "user", "content": [{"type": "text", "text": "hi", "annotations": {"priority": 1}}]}),
        );
        round_trip::<UpdateModelContextParams>(
            json!({"content": [{"type": "text", "text": "a"}], "structuredContent": {"k": 1}}),
        );
        round_trip::<DisplayModeParams>(json!({"mode": "pip"}));
        round_trip::<DownloadFileParams>(
            json!({"contents": [{"type": "resource_link", "uri": "file:///a", "name": "a"}]}),
        );
        round_trip::<ActionResult>(json!({"isError": true, "message": "no"}));
        round_trip::<LogParams>(json!({"level": "info", "logger": "l", "data": {"x": 1}}));
        round_trip::<CancelledParams>(json!({"requestId": 3, "reason": "r"}));
        round_trip::<CallToolParams>(json!({"name": "t", "arguments": {}, "_meta": {"progressToken": 1}}));
        round_trip::<SizeChangedParams>(json!({"width": 10.5, "height": 3.0}));
    }

    #[test]
    fn bad_params_name_the_field() {
        let e = parse_params::<OpenLinkParams>("ui/open-link", Some(&json!({}))).unwrap_err();
        assert_eq!(e.code, -32602);
        assert!(e.message.contains("url"), "{}", e.message);
        let e = parse_params::<MessageParams>("ui/message", Some(&json!({"role": "user", "content": [{"text": "x"}]})))
            .unwrap_err();
        assert!(e.message.contains("type"), "{}", e.message);
        let e =
            parse_params::<DisplayModeParams>("ui/request-display-mode", Some(&json!({"mode": "huge"}))).unwrap_err();
        assert!(e.message.contains("huge"), "{}", e.message);
        assert!(ActionResult::ok().is_error.is_none());
        assert!(UpdateModelContextParams::default().is_empty());
    }
}
