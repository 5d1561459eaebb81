//! Tool -> UI linkage, visibility, and `ui://` resource metadata with its precedence rules.
//!
//! Pure functions over JSON as the server sent it. A server is untrusted input: every rule here
//! returns a [`UiLinkError`] that names the tool or resource and what is wrong with it.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::protocol::{ResourceCsp, ResourcePermissions, LEGACY_RESOURCE_URI_META_KEY, RESOURCE_MIME_TYPE};
use crate::sandbox::csp::{csp_from_openai_widget_csp, OPENAI_WIDGET_CSP_KEY};

/// The MIME type of OpenAI Apps SDK widget templates, accepted as a View (rendered with the
/// `window.openai` shim, see "ChatGPT Apps SDK widgets" in docs/app-developers.md).
pub const SKYBRIDGE_MIME_TYPE: &str = "text/html+skybridge";
/// The tool `_meta` key naming an OpenAI Apps SDK widget template (a `ui://` URI).
pub const OPENAI_OUTPUT_TEMPLATE_KEY: &str = "openai/outputTemplate";
/// The tool `_meta` key that lets an OpenAI Apps SDK widget call the tool (like `"app"` visibility).
pub const OPENAI_WIDGET_ACCESSIBLE_KEY: &str = "openai/widgetAccessible";
/// The tool `_meta` key that hides a tool from the model (`"private"`), like visibility without `"model"`.
pub const OPENAI_VISIBILITY_KEY: &str = "openai/visibility";
/// The resource `_meta` key of an OpenAI Apps SDK widget's border preference.
pub const OPENAI_PREFERS_BORDER_KEY: &str = "openai/widgetPrefersBorder";

/// Who may call a tool (`_meta.ui.visibility`; default both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Visibility {
    /// The model (and the user's tool picker) may call it.
    pub model: bool,
    /// Views of the same server may call it.
    pub app: bool,
}

impl Default for Visibility {
    fn default() -> Self {
        Self { model: true, app: true }
    }
}

/// What a tool definition says about its UI.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolUi {
    /// The `ui://` resource that renders this tool's results, if any.
    pub resource_uri: Option<String>,
    /// Who may call the tool.
    pub visibility: Visibility,
    /// The URI came only from the deprecated flat key `_meta["ui/resourceUri"]`.
    pub legacy_key_only: bool,
    /// The URI came from `_meta["openai/outputTemplate"]` (an OpenAI Apps SDK widget; neither
    /// MCP Apps key is set): the host renders it with the `window.openai` shim.
    pub openai_template: bool,
}

/// A tool as its server listed it, with what it says about its UI read once, when it was listed
/// (not again at every use).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ListedTool {
    /// The definition, as the server gave it (what Views and models are shown).
    pub definition: Value,
    /// Its UI link, or why its `_meta` breaks the rules.
    pub ui: Result<ToolUi, UiLinkError>,
}

impl ListedTool {
    /// Reads a tool definition.
    pub fn new(definition: Value) -> Self {
        let ui = tool_ui(&definition);
        Self { definition, ui }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        self.definition.get("name").and_then(Value::as_str).unwrap_or_default()
    }

    /// The `ui://` resource of its View, when it has one.
    pub fn resource_uri(&self) -> Option<&str> {
        self.ui.as_ref().ok().and_then(|ui| ui.resource_uri.as_deref())
    }
}

/// A tool or resource that breaks the MCP Apps rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UiLinkError {
    /// `resourceUri` is set but is not a `ui://` URI.
    #[error("tool `{tool}`: _meta.ui.resourceUri {uri:?} is not a ui:// URI")]
    NotUiScheme {
        /// Tool name.
        tool: String,
        /// The offending value.
        uri: String,
    },
    /// `_meta.ui` or one of its fields has the wrong JSON type.
    #[error("tool `{tool}`: {detail}")]
    BadToolMeta {
        /// Tool name.
        tool: String,
        /// What is wrong.
        detail: String,
    },
    /// `resources/read` returned no content for the URI.
    #[error("resource {uri}: resources/read returned no content")]
    NoContent {
        /// Resource URI.
        uri: String,
    },
    /// The content's MIME type is not `text/html;profile=mcp-app`.
    #[error("resource {uri}: MIME type is {found:?}, expected \"{RESOURCE_MIME_TYPE}\"")]
    WrongMime {
        /// Resource URI.
        uri: String,
        /// The MIME type the server sent (empty when absent).
        found: String,
    },
    /// Neither `text` nor a decodable `blob`.
    #[error("resource {uri}: {detail}")]
    BadContent {
        /// Resource URI.
        uri: String,
        /// What is wrong.
        detail: String,
    },
}

/// Reads a tool definition's UI linkage and visibility.
///
/// OpenAI Apps SDK tools are read too, with the MCP Apps keys first: `_meta["openai/outputTemplate"]`
/// links the UI only when neither `_meta.ui.resourceUri` nor the flat key is set (and only when it
/// is a `ui://` URI; anything else is ignored, as before). Without `_meta.ui.visibility`,
/// `openai/widgetAccessible` (a boolean) decides whether Views may call the tool, and
/// `openai/visibility: "private"` hides it from the model; `_meta.ui.visibility`, when present,
/// decides alone.
pub fn tool_ui(tool: &Value) -> Result<ToolUi, UiLinkError> {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("<unnamed>").to_owned();
    let bad = |detail: &str| UiLinkError::BadToolMeta { tool: name.clone(), detail: detail.into() };
    let meta = tool.get("_meta").and_then(Value::as_object);
    let ui = match meta.and_then(|m| m.get("ui")) {
        None | Some(Value::Null) => None,
        Some(Value::Object(ui)) => Some(ui),
        Some(_) => return Err(bad("_meta.ui must be an object")),
    };
    let nested = match ui.and_then(|ui| ui.get("resourceUri")) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad("_meta.ui.resourceUri must be a string")),
    };
    let flat = match meta.and_then(|m| m.get(LEGACY_RESOURCE_URI_META_KEY)) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad("_meta[\"ui/resourceUri\"] must be a string")),
    };
    let legacy_key_only = nested.is_none() && flat.is_some();
    let openai = match (&nested, &flat) {
        (None, None) => meta
            .and_then(|m| m.get(OPENAI_OUTPUT_TEMPLATE_KEY))
            .and_then(Value::as_str)
            .filter(|uri| uri.starts_with("ui://"))
            .map(str::to_owned),
        _ => None,
    };
    let openai_template = openai.is_some();
    let resource_uri = nested.or(flat).or(openai);
    if let Some(uri) = &resource_uri {
        if !uri.starts_with("ui://") {
            return Err(UiLinkError::NotUiScheme { tool: name, uri: uri.clone() });
        }
    }
    let visibility = match ui.and_then(|ui| ui.get("visibility")) {
        None | Some(Value::Null) => {
            // The Apps SDK's keys, read only when the MCP Apps key is absent; they never widen
            // what `_meta.ui.visibility` says.
            let mut v = Visibility::default();
            if let Some(accessible) = meta.and_then(|m| m.get(OPENAI_WIDGET_ACCESSIBLE_KEY)).and_then(Value::as_bool) {
                v.app = accessible;
            }
            if meta.and_then(|m| m.get(OPENAI_VISIBILITY_KEY)).and_then(Value::as_str) == Some("private") {
                v.model = false;
            }
            v
        }
        Some(Value::Array(items)) => {
            let mut v = Visibility { model: false, app: false };
            for item in items {
                match item.as_str() {
                    Some("model") => v.model = true,
                    Some("app") => v.app = true,
                    // Unknown audiences grant nothing: failing closed keeps a typo from exposing a tool.
                    _ => {}
                }
            }
            v
        }
        Some(_) => return Err(bad("_meta.ui.visibility must be an array")),
    };
    Ok(ToolUi { resource_uri, visibility, legacy_key_only, openai_template })
}

/// `_meta.ui` of a UI resource, resolved from the read content or the listing entry.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ResourceMeta {
    /// Declared origins.
    pub csp: Option<ResourceCsp>,
    /// Declared permissions.
    pub permissions: Option<ResourcePermissions>,
    /// Requested dedicated sandbox domain.
    pub domain: Option<String>,
    /// Border preference (three-state).
    pub prefers_border: Option<bool>,
    /// Where the metadata came from.
    pub source: MetaSource,
    /// Fields that were present but unreadable, each with the reason; they are ignored.
    pub warnings: Vec<String>,
    /// `csp` was mapped from the OpenAI Apps SDK's `_meta["openai/widgetCSP"]` (there was no
    /// `_meta.ui.csp`).
    pub csp_from_openai: bool,
}

/// Which object `_meta.ui` was taken from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetaSource {
    /// The `resources/read` content item (takes precedence).
    Content,
    /// The `resources/list` entry (fallback).
    Listing,
    /// Neither had `_meta.ui`.
    #[default]
    None,
}

/// A fetched, checked UI resource.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UiResource {
    /// The `ui://` URI.
    pub uri: String,
    /// The HTML document.
    pub html: String,
    /// Its resolved metadata.
    pub meta: ResourceMeta,
    /// Served as `text/html+skybridge` (an OpenAI Apps SDK widget template): the host renders it
    /// with the `window.openai` shim.
    pub openai_template: bool,
}

fn meta_of(obj: &Value) -> Option<&Map<String, Value>> {
    // `meta` is a quirk of one SDK's serializer; the reference host accepts it too.
    obj.get("_meta").or_else(|| obj.get("meta"))?.as_object()
}

fn ui_meta_of(obj: &Value) -> Option<&Map<String, Value>> {
    meta_of(obj)?.get("ui")?.as_object()
}

/// Fills what `_meta.ui` left unset from the OpenAI Apps SDK keys of the same `_meta` (content
/// first, then listing): `openai/widgetCSP` (mapped in `sandbox::csp`, validated by `build_csp`
/// like any declaration) and `openai/widgetPrefersBorder`.
fn apply_openai_meta(meta: &mut ResourceMeta, content: &Value, listing: Option<&Value>) {
    let sources = [(Some(content), MetaSource::Content), (listing, MetaSource::Listing)];
    for (obj, source) in sources {
        let Some(m) = obj.and_then(meta_of) else { continue };
        if meta.csp.is_none() {
            if let Some(v) = m.get(OPENAI_WIDGET_CSP_KEY) {
                match csp_from_openai_widget_csp(v) {
                    Ok(csp) => {
                        meta.csp = Some(csp);
                        meta.csp_from_openai = true;
                        if meta.source == MetaSource::None {
                            meta.source = source;
                        }
                    }
                    Err(e) => meta.warnings.push(format!("{e}; ignored")),
                }
            }
        }
        if meta.prefers_border.is_none() {
            if let Some(b) = m.get(OPENAI_PREFERS_BORDER_KEY).and_then(Value::as_bool) {
                meta.prefers_border = Some(b);
            }
        }
    }
}

fn parse_resource_meta(ui: &Map<String, Value>, source: MetaSource) -> ResourceMeta {
    let mut meta = ResourceMeta { source, ..Default::default() };
    if let Some(v) = ui.get("csp") {
        match serde_json::from_value::<ResourceCsp>(v.clone()) {
            Ok(csp) => meta.csp = Some(csp),
            Err(e) => meta.warnings.push(format!("_meta.ui.csp ignored: {e}")),
        }
    }
    if let Some(v) = ui.get("permissions") {
        match serde_json::from_value::<ResourcePermissions>(v.clone()) {
            Ok(p) => meta.permissions = Some(p),
            Err(e) => meta.warnings.push(format!("_meta.ui.permissions ignored: {e}")),
        }
        // Declined on purpose, and said: the draft's `tools` (WebMCP: the page offering tools
        // to the model through `navigator.modelContext`) has no model to reach in this host, and
        // anything else is unknown. Neither is granted (nor reported in hostCapabilities.sandbox).
        for key in v.as_object().into_iter().flat_map(|o| o.keys()) {
            match key.as_str() {
                "camera" | "microphone" | "geolocation" | "clipboardWrite" => {}
                "tools" => meta.warnings.push(
                    "_meta.ui.permissions.tools (WebMCP) is not granted: this host offers no tools from Views to a model"
                        .into(),
                ),
                other => meta.warnings.push(format!(
                    "_meta.ui.permissions.{} is unknown and not granted",
                    crate::consent::one_line_max(other, 64)
                )),
            }
        }
    }
    match ui.get("domain") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => meta.domain = Some(s.clone()),
        Some(_) => meta.warnings.push("_meta.ui.domain ignored: not a string".into()),
    }
    match ui.get("prefersBorder") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => meta.prefers_border = Some(*b),
        Some(_) => meta.warnings.push("_meta.ui.prefersBorder ignored: not a boolean".into()),
    }
    meta
}

/// Normalises a MIME type for comparison: lower case, no spaces around `;` and `=`.
fn normalise_mime(mime: &str) -> String {
    mime.split(';').map(|part| part.trim().to_ascii_lowercase()).collect::<Vec<_>>().join(";")
}

/// Checks a `resources/read` result for `uri` and resolves its metadata.
///
/// `listing` is the resource's `resources/list` entry, if the server listed it: its `_meta.ui`
/// is used only when the content item has none (whole-object fallback, as in the spec).
pub fn ui_resource_from_read(
    uri: &str,
    read_result: &Value,
    listing: Option<&Value>,
) -> Result<UiResource, UiLinkError> {
    let contents = read_result.get("contents").and_then(Value::as_array);
    let content = contents
        .and_then(|c| c.iter().find(|item| item.get("uri").and_then(Value::as_str) == Some(uri)).or_else(|| c.first()))
        .ok_or_else(|| UiLinkError::NoContent { uri: uri.to_owned() })?;
    let mime = content.get("mimeType").and_then(Value::as_str).unwrap_or("");
    let openai_template = normalise_mime(mime) == SKYBRIDGE_MIME_TYPE;
    if normalise_mime(mime) != RESOURCE_MIME_TYPE && !openai_template {
        return Err(UiLinkError::WrongMime { uri: uri.to_owned(), found: mime.to_owned() });
    }
    let bad = |detail: String| UiLinkError::BadContent { uri: uri.to_owned(), detail };
    let html = match (content.get("text"), content.get("blob")) {
        (Some(Value::String(text)), _) => text.clone(),
        (_, Some(Value::String(blob))) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(blob.trim())
                .map_err(|e| bad(format!("blob is not valid base64: {e}")))?;
            String::from_utf8(bytes).map_err(|e| bad(format!("blob is not UTF-8: {e}")))?
        }
        _ => return Err(bad("content has neither `text` nor `blob`".into())),
    };
    let mut meta = match (ui_meta_of(content), listing.and_then(ui_meta_of)) {
        (Some(ui), _) => parse_resource_meta(ui, MetaSource::Content),
        (None, Some(ui)) => parse_resource_meta(ui, MetaSource::Listing),
        (None, None) => ResourceMeta::default(),
    };
    apply_openai_meta(&mut meta, content, listing);
    Ok(UiResource { uri: uri.to_owned(), html, meta, openai_template })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_key_wins_over_the_flat_one() {
        let t = json!({"name": "t", "_meta": {
            "ui": {"resourceUri": "ui://a/new"}, "ui/resourceUri": "ui://a/old"}});
        let ui = tool_ui(&t).unwrap();
        assert_eq!(ui.resource_uri.as_deref(), Some("ui://a/new"));
        assert!(!ui.legacy_key_only);
    }

    #[test]
    fn flat_key_alone_still_links() {
        let t = json!({"name": "t", "_meta": {"ui/resourceUri": "ui://a/old"}});
        let ui = tool_ui(&t).unwrap();
        assert_eq!(ui.resource_uri.as_deref(), Some("ui://a/old"));
        assert!(ui.legacy_key_only);
    }

    #[test]
    fn no_meta_means_no_ui_and_default_visibility() {
        let ui = tool_ui(&json!({"name": "t", "inputSchema": {}})).unwrap();
        assert_eq!(ui.resource_uri, None);
        assert_eq!(ui.visibility, Visibility { model: true, app: true });
    }

    #[test]
    fn non_ui_scheme_is_an_error_naming_the_tool() {
        let t = json!({"name": "weather", "_meta": {"ui": {"resourceUri": "https://x/y"}}});
        let err = tool_ui(&t).unwrap_err().to_string();
        assert!(err.contains("weather") && err.contains("https://x/y"), "{err}");
    }

    #[test]
    fn visibility_is_read_and_unknown_audiences_grant_nothing() {
        let vis = |v: Value| tool_ui(&json!({"name": "t", "_meta": {"ui": {"visibility": v}}}));
        assert_eq!(vis(json!(["app"])).unwrap().visibility, Visibility { model: false, app: true });
        assert_eq!(vis(json!(["model"])).unwrap().visibility, Visibility { model: true, app: false });
        assert_eq!(vis(json!(["admin"])).unwrap().visibility, Visibility { model: false, app: false });
        assert!(vis(json!("app")).is_err());
    }

    fn read(content: Value) -> Value {
        json!({"contents": [content]})
    }

    #[test]
    fn reads_text_and_base64_blob() {
        let text = read(json!({"uri": "ui://a", "mimeType": RESOURCE_MIME_TYPE, "text": "<p>hi</p>"}));
        assert_eq!(ui_resource_from_read("ui://a", &text, None).unwrap().html, "<p>hi</p>");
        let blob = read(json!({"uri": "ui://a", "mimeType": "text/html; profile=mcp-app",
            "blob": base64::engine::general_purpose::STANDARD.encode("<p>ü</p>")}));
        assert_eq!(ui_resource_from_read("ui://a", &blob, None).unwrap().html, "<p>ü</p>");
    }

    #[test]
    fn wrong_mime_missing_content_and_bad_blob_are_errors() {
        let wrong = read(json!({"uri": "ui://a", "mimeType": "text/html", "text": "x"}));
        assert!(matches!(ui_resource_from_read("ui://a", &wrong, None), Err(UiLinkError::WrongMime { .. })));
        assert!(matches!(
            ui_resource_from_read("ui://a", &json!({"contents": []}), None),
            Err(UiLinkError::NoContent { .. })
        ));
        let bad = read(json!({"uri": "ui://a", "mimeType": RESOURCE_MIME_TYPE, "blob": "!!"}));
        let err = ui_resource_from_read("ui://a", &bad, None).unwrap_err().to_string();
        assert!(err.contains("base64"), "{err}");
    }

    #[test]
    fn content_meta_takes_precedence_over_listing_as_a_whole() {
        let listing = json!({"uri": "ui://a", "_meta": {"ui": {
            "csp": {"connectDomains": ["https://listing.example"]}, "prefersBorder": true}}});
        let with_content_meta = read(json!({"uri": "ui://a", "mimeType": RESOURCE_MIME_TYPE,
            "text": "x", "_meta": {"ui": {"csp": {"resourceDomains": ["https://cdn.example"]}}}}));
        let r = ui_resource_from_read("ui://a", &with_content_meta, Some(&listing)).unwrap();
        assert_eq!(r.meta.source, MetaSource::Content);
        assert_eq!(r.meta.csp.unwrap().connect_domains, None);
        // Whole-object fallback: the listing's prefersBorder is not merged in.
        assert_eq!(r.meta.prefers_border, None);

        let without = read(json!({"uri": "ui://a", "mimeType": RESOURCE_MIME_TYPE, "text": "x"}));
        let r = ui_resource_from_read("ui://a", &without, Some(&listing)).unwrap();
        assert_eq!(r.meta.source, MetaSource::Listing);
        assert_eq!(r.meta.prefers_border, Some(true));
        assert_eq!(r.meta.csp.unwrap().connect_domains, Some(vec!["https://listing.example".to_owned()]));
    }

    #[test]
    fn webmcp_tools_and_unknown_permissions_are_declined_with_a_warning() {
        let r = read(json!({"uri": "ui://a", "mimeType": RESOURCE_MIME_TYPE, "text": "x",
            "_meta": {"ui": {"permissions": {"camera": {}, "tools": {}, "teleport\n": {}}}}}));
        let meta = ui_resource_from_read("ui://a", &r, None).unwrap().meta;
        let granted = meta.permissions.unwrap();
        assert!(granted.camera.is_some(), "known ones are kept");
        assert_eq!(meta.warnings.len(), 2, "{:?}", meta.warnings);
        let w = &meta.warnings;
        assert!(w.iter().any(|m| m.contains("permissions.tools (WebMCP) is not granted")), "{w:?}");
        assert!(w.iter().any(|m| m.contains("unknown") && !m.contains('\n')), "{w:?}");
    }

    #[test]
    fn malformed_meta_fields_are_ignored_with_a_warning() {
        let r = read(json!({"uri": "ui://a", "mimeType": RESOURCE_MIME_TYPE, "text": "x",
            "_meta": {"ui": {"csp": {"connectDomains": "https://x"}, "domain": 5}}}));
        let meta = ui_resource_from_read("ui://a", &r, None).unwrap().meta;
        assert_eq!(meta.csp, None);
        assert_eq!(meta.warnings.len(), 2, "{:?}", meta.warnings);
    }
    #[test]
    fn openai_output_template_links_only_without_the_mcp_apps_keys() {
        let t = json!({"name": "pizza", "_meta": {"openai/outputTemplate": "ui://widget/pizza.html"}});
        let ui = tool_ui(&t).unwrap();
        assert_eq!(ui.resource_uri.as_deref(), Some("ui://widget/pizza.html"));
        assert!(ui.openai_template && !ui.legacy_key_only);
        // Both: the MCP Apps key wins and the View is an MCP App (no shim).
        let both = json!({"name": "t", "_meta": {"ui": {"resourceUri": "ui://a/app"},
            "openai/outputTemplate": "ui://a/widget"}});
        let ui = tool_ui(&both).unwrap();
        assert_eq!(ui.resource_uri.as_deref(), Some("ui://a/app"));
        assert!(!ui.openai_template);
        let flat = json!({"name": "t", "_meta": {"ui/resourceUri": "ui://a/old", "openai/outputTemplate": "ui://a/w"}});
        assert_eq!(tool_ui(&flat).unwrap().resource_uri.as_deref(), Some("ui://a/old"));
        // Not a ui:// URI (or not a string): no UI, as before this key was read.
        for bad in [json!("https://x/widget.html"), json!(5)] {
            let ui = tool_ui(&json!({"name": "t", "_meta": {"openai/outputTemplate": bad}})).unwrap();
            assert_eq!(ui.resource_uri, None);
            assert!(!ui.openai_template);
        }
    }

    #[test]
    fn openai_visibility_keys_apply_only_without_ui_visibility_and_never_widen_it() {
        let meta = |m: Value| tool_ui(&json!({"name": "t", "_meta": m})).unwrap().visibility;
        assert_eq!(meta(json!({"openai/widgetAccessible": true})), Visibility { model: true, app: true });
        assert_eq!(meta(json!({"openai/widgetAccessible": false})), Visibility { model: true, app: false });
        assert_eq!(
            meta(json!({"openai/widgetAccessible": true, "openai/visibility": "private"})),
            Visibility { model: false, app: true }
        );
        // `_meta.ui.visibility` decides alone: widgetAccessible does not add "app".
        assert_eq!(
            meta(json!({"ui": {"visibility": ["model"]}, "openai/widgetAccessible": true})),
            Visibility { model: true, app: false }
        );
        assert_eq!(meta(json!({"openai/widgetAccessible": "yes"})), Visibility::default());
    }

    #[test]
    fn skybridge_resources_are_accepted_and_marked() {
        let r = read(json!({"uri": "ui://w", "mimeType": "text/html+skybridge", "text": "<p>w</p>"}));
        let res = ui_resource_from_read("ui://w", &r, None).unwrap();
        assert!(res.openai_template);
        assert_eq!(res.html, "<p>w</p>");
        let mcp = read(json!({"uri": "ui://a", "mimeType": RESOURCE_MIME_TYPE, "text": "x"}));
        assert!(!ui_resource_from_read("ui://a", &mcp, None).unwrap().openai_template);
        let other = read(json!({"uri": "ui://w", "mimeType": "text/html+other", "text": "x"}));
        assert!(matches!(ui_resource_from_read("ui://w", &other, None), Err(UiLinkError::WrongMime { .. })));
    }

    #[test]
    fn openai_widget_csp_fills_in_only_when_ui_csp_is_absent() {
        let widget = read(json!({"uri": "ui://w", "mimeType": "text/html+skybridge", "text": "x",
            "_meta": {"openai/widgetCSP": {"connect_domains": ["https://api.example"],
                "resource_domains": ["https://cdn.example"]}, "openai/widgetPrefersBorder": true}}));
        let meta = ui_resource_from_read("ui://w", &widget, None).unwrap().meta;
        let csp = meta.csp.unwrap();
        assert_eq!(csp.connect_domains, Some(vec!["https://api.example".to_owned()]));
        assert_eq!(csp.resource_domains, Some(vec!["https://cdn.example".to_owned()]));
        assert!(meta.csp_from_openai);
        assert_eq!(meta.source, MetaSource::Content);
        assert_eq!(meta.prefers_border, Some(true));

        // `_meta.ui.csp` wins over the OpenAI key.
        let both = read(json!({"uri": "ui://w", "mimeType": "text/html+skybridge", "text": "x",
            "_meta": {"ui": {"csp": {"connectDomains": ["https://mcp.example"]}},
                "openai/widgetCSP": {"connect_domains": ["https://openai.example"]}}}));
        let meta = ui_resource_from_read("ui://w", &both, None).unwrap().meta;
        assert_eq!(meta.csp.unwrap().connect_domains, Some(vec!["https://mcp.example".to_owned()]));
        assert!(!meta.csp_from_openai);

        // From the listing entry when the content has none; a malformed one is a warning.
        let listing =
            json!({"uri": "ui://w", "_meta": {"openai/widgetCSP": {"connect_domains": ["https://l.example"]}}});
        let bare = read(json!({"uri": "ui://w", "mimeType": "text/html+skybridge", "text": "x"}));
        let meta = ui_resource_from_read("ui://w", &bare, Some(&listing)).unwrap().meta;
        assert_eq!(meta.source, MetaSource::Listing);
        assert_eq!(meta.csp.unwrap().connect_domains, Some(vec!["https://l.example".to_owned()]));
        let bad = read(json!({"uri": "ui://w", "mimeType": "text/html+skybridge", "text": "x",
            "_meta": {"openai/widgetCSP": {"connect_domains": "https://x"}}}));
        let meta = ui_resource_from_read("ui://w", &bad, None).unwrap().meta;
        assert_eq!(meta.csp, None);
        assert_eq!(meta.warnings.len(), 1, "{:?}", meta.warnings);
    }
}
