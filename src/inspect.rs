//! `inspect`: what a server offers for MCP Apps, and what is wrong with it. Pure: it reads the
//! JSON the server returned (tools, resources, resource reads) and produces findings.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use crate::protocol::RpcError;
use crate::sandbox::build_csp;
use crate::ui_resource::{tool_ui, ui_resource_from_read, MetaSource, UiLinkError};

/// HTML bigger than this gets a warning: every View start sends it through the webview.
pub const LARGE_HTML_BYTES: usize = 2 * 1024 * 1024;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Severity {
    /// The App will not work (or not as its author meant) in a conforming host.
    Error,
    /// Works, but is deprecated, ignored or risky.
    Warning,
    /// Worth knowing.
    Info,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Finding {
    /// How bad.
    pub severity: Severity,
    /// Stable machine-readable code, e.g. `wrong-mime`.
    pub code: &'static str,
    /// The tool or resource it is about.
    pub subject: String,
    /// What is wrong and what to do.
    pub message: String,
}

/// A tool as `inspect` reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolReport {
    /// Tool name.
    pub name: String,
    /// It links a `ui://` resource.
    pub has_ui: bool,
    /// The linked resource.
    pub resource_uri: Option<String>,
    /// `model` and/or `app`.
    pub visibility: Vec<&'static str>,
    /// Linked only through the deprecated flat key.
    pub legacy_key_only: bool,
}

/// A UI resource as `inspect` reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceReport {
    /// `ui://` URI.
    pub uri: String,
    /// Read and passed the checks.
    pub ok: bool,
    /// MIME type as served.
    pub mime_type: Option<String>,
    /// HTML size in bytes.
    pub bytes: Option<usize>,
    /// `content`, `listing` or `none`.
    pub meta_source: &'static str,
    /// The CSP this host would grant.
    pub csp_header: Option<String>,
    /// Declared `_meta.ui` (as resolved).
    pub meta: Option<Value>,
}

/// Everything `inspect` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// Tools, in server order.
    pub tools: Vec<ToolReport>,
    /// UI resources linked by tools.
    pub resources: Vec<ResourceReport>,
    /// Findings, errors first.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Number of findings of a severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == severity).count()
    }
}

const TOOL_UI_KEYS: [&str; 2] = ["resourceUri", "visibility"];
const TOOL_UI_IGNORED_KEYS: [&str; 4] = ["csp", "permissions", "domain", "prefersBorder"];
const RESOURCE_UI_KEYS: [&str; 4] = ["csp", "permissions", "domain", "prefersBorder"];
const CSP_KEYS: [&str; 4] = ["connectDomains", "resourceDomains", "frameDomains", "baseUriDomains"];
const PERMISSION_KEYS: [&str; 4] = ["camera", "microphone", "geolocation", "clipboardWrite"];

fn finding(severity: Severity, code: &'static str, subject: &str, message: impl Into<String>) -> Finding {
    Finding { severity, code, subject: subject.to_owned(), message: message.into() }
}

fn unknown_keys(obj: Option<&Value>, known: &[&str]) -> Vec<String> {
    obj.and_then(Value::as_object)
        .map(|o| o.keys().filter(|k| !known.contains(&k.as_str())).cloned().collect())
        .unwrap_or_default()
}

/// Lints a server's tools and UI resources.
///
/// `reads` has the outcome of `resources/read` for every `ui://` URI the tools link.
pub fn inspect(tools: &[Value], listed: &[Value], reads: &BTreeMap<String, Result<Value, RpcError>>) -> Report {
    let mut findings = Vec::new();
    let mut tool_reports = Vec::new();
    let mut ui_uris: Vec<String> = Vec::new();
    let mut has_ui_tool = false;
    let mut app_only = Vec::new();

    for tool in tools {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("<unnamed>").to_owned();
        let ui_meta = tool.get("_meta").and_then(|m| m.get("ui"));
        match tool_ui(tool) {
            Ok(ui) => {
                let mut visibility = Vec::new();
                if ui.visibility.model {
                    visibility.push("model");
                }
                if ui.visibility.app {
                    visibility.push("app");
                }
                if visibility.is_empty() {
                    findings.push(finding(
                        Severity::Warning,
                        "no-audience",
                        &name,
                        "_meta.ui.visibility grants neither \"model\" nor \"app\": nobody can call this tool",
                    ));
                }
                if ui.visibility.app && !ui.visibility.model {
                    app_only.push(name.clone());
                }
                if ui.legacy_key_only {
                    findings.push(finding(
                        Severity::Warning,
                        "legacy-key-only",
                        &name,
                        "links its UI only with the deprecated _meta[\"ui/resourceUri\"]; add _meta.ui.resourceUri",
                    ));
                }
                if ui.openai_template {
                    findings.push(finding(
                        Severity::Warning,
                        "openai-template",
                        &name,
                        "links its UI only with the OpenAI Apps SDK's _meta[\"openai/outputTemplate\"]; this host renders it with its window.openai shim, but MCP Apps hosts need _meta.ui.resourceUri",
                    ));
                }
                for key in unknown_keys(ui_meta, &[&TOOL_UI_KEYS[..], &TOOL_UI_IGNORED_KEYS[..]].concat()) {
                    findings.push(finding(
                        Severity::Warning,
                        "unknown-tool-ui-key",
                        &name,
                        format!("_meta.ui.{key} is not an MCP Apps tool field; hosts ignore it"),
                    ));
                }
                for key in TOOL_UI_IGNORED_KEYS {
                    if ui_meta.and_then(|u| u.get(key)).is_some() {
                        findings.push(finding(Severity::Warning, "resource-field-on-tool", &name,
                            format!("_meta.ui.{key} belongs on the ui:// resource (its resources/read content or listing), not on the tool; hosts ignore it here")));
                    }
                }
                if let Some(uri) = &ui.resource_uri {
                    has_ui_tool = true;
                    if !ui_uris.contains(uri) {
                        ui_uris.push(uri.clone());
                    }
                }
                tool_reports.push(ToolReport {
                    name,
                    has_ui: ui.resource_uri.is_some(),
                    resource_uri: ui.resource_uri,
                    visibility,
                    legacy_key_only: ui.legacy_key_only,
                });
            }
            Err(e) => {
                let code = match e {
                    UiLinkError::NotUiScheme { .. } => "resource-uri-not-ui",
                    _ => "bad-tool-meta",
                };
                findings.push(finding(Severity::Error, code, &name, e.to_string()));
                tool_reports.push(ToolReport {
                    name,
                    has_ui: false,
                    resource_uri: None,
                    visibility: vec![],
                    legacy_key_only: false,
                });
            }
        }
    }
    if !has_ui_tool && !app_only.is_empty() {
        for name in &app_only {
            findings.push(finding(
                Severity::Warning,
                "app-only-unreachable",
                name,
                "visible only to Apps, but no tool of this server has a UI, so no View can ever call it",
            ));
        }
    }

    let mut resources = Vec::new();
    for uri in &ui_uris {
        let listing = listed.iter().find(|r| r.get("uri").and_then(Value::as_str) == Some(uri.as_str()));
        let read = match reads.get(uri) {
            Some(Ok(read)) => read,
            Some(Err(e)) => {
                findings.push(finding(Severity::Error, "resource-missing", uri, format!("resources/read failed: {e}")));
                resources.push(ResourceReport {
                    uri: uri.clone(),
                    ok: false,
                    mime_type: None,
                    bytes: None,
                    meta_source: "none",
                    csp_header: None,
                    meta: None,
                });
                continue;
            }
            None => continue,
        };
        let content = read.get("contents").and_then(Value::as_array).and_then(|c| c.first());
        let mime = content.and_then(|c| c.get("mimeType")).and_then(Value::as_str).map(str::to_owned);
        match ui_resource_from_read(uri, read, listing) {
            Ok(resource) => {
                let bytes = resource.html.len();
                if bytes > LARGE_HTML_BYTES {
                    findings.push(finding(Severity::Warning, "large-html", uri,
                        format!("the HTML is {bytes} bytes; every View start moves it through the host (keep it under {LARGE_HTML_BYTES})")));
                }
                let head = resource.html.get(..resource.html.len().min(2048)).unwrap_or_default().to_ascii_lowercase();
                if !(head.contains("<!doctype") || head.contains("<html")) {
                    findings.push(finding(
                        Severity::Info,
                        "not-a-document",
                        uri,
                        "the text does not start like an HTML5 document (<!doctype html>)",
                    ));
                }
                for w in &resource.meta.warnings {
                    findings.push(finding(Severity::Warning, "malformed-meta", uri, w.clone()));
                }
                if resource.openai_template {
                    let csp = if resource.meta.csp_from_openai {
                        "; its CSP is taken from _meta[\"openai/widgetCSP\"] (connect_domains, resource_domains, frame_domains)"
                    } else {
                        ""
                    };
                    findings.push(finding(Severity::Warning, "openai-template", uri, format!(
                        "served as text/html+skybridge (an OpenAI Apps SDK widget): this host renders it with its window.openai shim{csp}; MCP Apps hosts need \"text/html;profile=mcp-app\"")));
                }
                let ui_obj = content
                    .and_then(|c| c.get("_meta").and_then(|m| m.get("ui")))
                    .or_else(|| listing.and_then(|l| l.get("_meta")).and_then(|m| m.get("ui")));
                for key in unknown_keys(ui_obj, &RESOURCE_UI_KEYS) {
                    findings.push(finding(
                        Severity::Warning,
                        "unknown-resource-ui-key",
                        uri,
                        format!("_meta.ui.{key} is not an MCP Apps resource field; hosts ignore it"),
                    ));
                }
                for key in unknown_keys(ui_obj.and_then(|u| u.get("csp")), &CSP_KEYS) {
                    findings.push(finding(
                        Severity::Warning,
                        "unknown-csp-key",
                        uri,
                        format!("_meta.ui.csp.{key} is not a CSP field; nothing is allowed by it"),
                    ));
                }
                for key in unknown_keys(ui_obj.and_then(|u| u.get("permissions")), &PERMISSION_KEYS) {
                    findings.push(finding(
                        Severity::Warning,
                        "unknown-permission",
                        uri,
                        format!("_meta.ui.permissions.{key} is not a permission hosts grant"),
                    ));
                }
                let csp = build_csp(resource.meta.csp.as_ref());
                for r in &csp.rejected {
                    findings.push(finding(
                        Severity::Error,
                        "csp-entry-rejected",
                        uri,
                        format!(
                            "{} entry {:?} is rejected: {}; hosts drop it, so the View cannot reach it",
                            r.field, r.entry, r.reason
                        ),
                    ));
                }
                if resource.meta.domain.is_some() {
                    findings.push(finding(
                        Severity::Info,
                        "domain-not-honored",
                        uri,
                        "_meta.ui.domain is host-specific; this host gives each server its own stable origin instead",
                    ));
                }
                if resource.meta.source == MetaSource::Listing {
                    findings.push(finding(Severity::Info, "meta-from-listing", uri,
                        "_meta.ui comes from the resources/list entry (the read content has none); older hosts only read the content"));
                }
                resources.push(ResourceReport {
                    uri: uri.clone(),
                    ok: true,
                    mime_type: mime,
                    bytes: Some(bytes),
                    meta_source: match resource.meta.source {
                        MetaSource::Content => "content",
                        MetaSource::Listing => "listing",
                        MetaSource::None => "none",
                    },
                    csp_header: Some(csp.header),
                    meta: ui_obj.cloned(),
                });
            }
            Err(e) => {
                let code = match e {
                    UiLinkError::WrongMime { .. } => "wrong-mime",
                    UiLinkError::NoContent { .. } => "resource-missing",
                    _ => "bad-content",
                };
                findings.push(finding(Severity::Error, code, uri, e.to_string()));
                resources.push(ResourceReport {
                    uri: uri.clone(),
                    ok: false,
                    mime_type: mime,
                    bytes: None,
                    meta_source: "none",
                    csp_header: None,
                    meta: None,
                });
            }
        }
    }
    findings.sort_by_key(|f| f.severity);
    Report { tools: tool_reports, resources, findings }
}

/// The report as the documented `--json` shape (see docs/app-developers.md).
pub fn report_json(server: &str, report: &Report) -> Value {
    json!({
        "server": server,
        "tools": report.tools,
        "resources": report.resources,
        "findings": report.findings,
        "summary": {
            "errors": report.count(Severity::Error),
            "warnings": report.count(Severity::Warning),
            "infos": report.count(Severity::Info),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::RESOURCE_MIME_TYPE;

    fn read(uri: &str, mime: &str, text: &str, meta: Value) -> Result<Value, RpcError> {
        Ok(json!({"contents": [{"uri": uri, "mimeType": mime, "text": text, "_meta": meta}]}))
    }

    fn codes(r: &Report) -> Vec<&'static str> {
        r.findings.iter().map(|f| f.code).collect()
    }

    #[test]
    fn a_clean_server_has_no_findings() {
        let tools = vec![json!({"name": "t", "inputSchema": {}, "_meta": {"ui": {"resourceUri": "ui://a/v"}}})];
        let reads = BTreeMap::from([(
            "ui://a/v".to_owned(),
            read("ui://a/v", RESOURCE_MIME_TYPE, "<!doctype html><p>x", json!({})),
        )]);
        let r = inspect(&tools, &[], &reads);
        assert!(r.findings.is_empty(), "{:?}", r.findings);
        assert_eq!(r.tools[0].visibility, ["model", "app"]);
        assert!(r.resources[0].ok);
    }

    #[test]
    fn each_rule_is_reported_with_its_code() {
        let tools = vec![
            json!({"name": "legacy", "_meta": {"ui/resourceUri": "ui://a/legacy"}}),
            json!({"name": "https", "_meta": {"ui": {"resourceUri": "https://x/y"}}}),
            json!({"name": "extra", "_meta": {"ui": {"resourceUri": "ui://a/v", "csp": {}, "colour": "red"}}}),
            json!({"name": "mime", "_meta": {"ui": {"resourceUri": "ui://a/mime"}}}),
            json!({"name": "missing", "_meta": {"ui": {"resourceUri": "ui://a/missing"}}}),
            json!({"name": "nobody", "_meta": {"ui": {"visibility": []}}}),
        ];
        let big = format!("<!doctype html>{}", "x".repeat(LARGE_HTML_BYTES));
        let reads = BTreeMap::from([
            ("ui://a/legacy".to_owned(), read("ui://a/legacy", RESOURCE_MIME_TYPE, &big, json!({}))),
            (
                "ui://a/v".to_owned(),
                read(
                    "ui://a/v",
                    RESOURCE_MIME_TYPE,
                    "<html>",
                    json!({"ui": {
                "csp": {"connectDomains": ["https://ok.example", "https://x; script-src *"], "scriptDomains": ["https://s"]},
                "permissions": {"usb": {}}, "domain": "a.example", "border": true}}),
                ),
            ),
            ("ui://a/mime".to_owned(), read("ui://a/mime", "text/html", "<html>", json!({}))),
            ("ui://a/missing".to_owned(), Err(RpcError::new(-32002, "Resource not found"))),
        ]);
        let r = inspect(&tools, &[], &reads);
        let c = codes(&r);
        for want in [
            "legacy-key-only",
            "large-html",
            "resource-uri-not-ui",
            "resource-field-on-tool",
            "unknown-tool-ui-key",
            "csp-entry-rejected",
            "unknown-csp-key",
            "unknown-permission",
            "domain-not-honored",
            "unknown-resource-ui-key",
            "wrong-mime",
            "resource-missing",
            "no-audience",
        ] {
            assert!(c.contains(&want), "missing {want} in {c:?}");
        }
        assert!(r.findings.windows(2).all(|w| w[0].severity <= w[1].severity), "errors come first");
        let rejected = r.findings.iter().find(|f| f.code == "csp-entry-rejected").unwrap();
        assert!(rejected.message.contains("script-src"), "{}", rejected.message);
        let json = report_json("s", &r);
        assert_eq!(json["summary"]["errors"], r.count(Severity::Error));
    }

    #[test]
    fn app_only_tools_without_any_ui_tool_are_unreachable() {
        let tools = vec![json!({"name": "helper", "_meta": {"ui": {"visibility": ["app"]}}})];
        assert_eq!(codes(&inspect(&tools, &[], &BTreeMap::new())), ["app-only-unreachable"]);
        let with_ui = vec![tools[0].clone(), json!({"name": "show", "_meta": {"ui": {"resourceUri": "ui://a/v"}}})];
        let reads = BTreeMap::from([(
            "ui://a/v".to_owned(),
            read("ui://a/v", RESOURCE_MIME_TYPE, "<!doctype html>", json!({})),
        )]);
        assert!(inspect(&with_ui, &[], &reads).findings.is_empty());
    }

    #[test]
    fn listing_metadata_is_used_and_noted() {
        let tools = vec![json!({"name": "t", "_meta": {"ui": {"resourceUri": "ui://a/v"}}})];
        let listed =
            vec![json!({"uri": "ui://a/v", "_meta": {"ui": {"csp": {"connectDomains": ["https://api.example"]}}}})];
        let reads = BTreeMap::from([(
            "ui://a/v".to_owned(),
            Ok(json!({"contents": [{"uri": "ui://a/v", "mimeType": RESOURCE_MIME_TYPE, "text": "<!doctype html>"}]})),
        )]);
        let r = inspect(&tools, &listed, &reads);
        assert_eq!(codes(&r), ["meta-from-listing"]);
        assert!(r.resources[0].csp_header.as_deref().unwrap().contains("connect-src 'self' https://api.example"));
    }
    #[test]
    fn openai_apps_sdk_widgets_are_accepted_with_a_warning_and_their_csp_mapped() {
        let tools = vec![json!({"name": "pizza", "_meta": {"openai/outputTemplate": "ui://widget/pizza.html",
            "openai/widgetAccessible": true}})];
        let reads = BTreeMap::from([(
            "ui://widget/pizza.html".to_owned(),
            read(
                "ui://widget/pizza.html",
                "text/html+skybridge",
                "<!doctype html><div id=root></div>",
                json!({"openai/widgetCSP": {"connect_domains": ["https://api.example"], "resource_domains": ["cdn.example"]}}),
            ),
        )]);
        let r = inspect(&tools, &[], &reads);
        assert!(r.tools[0].has_ui, "{:?}", r.tools);
        assert!(r.resources[0].ok, "{:?}", r.findings);
        let openai: Vec<&Finding> = r.findings.iter().filter(|f| f.code == "openai-template").collect();
        assert_eq!(openai.len(), 2, "{:?}", r.findings);
        assert!(openai.iter().all(|f| f.severity == Severity::Warning));
        assert!(openai.iter().any(|f| f.message.contains("openai/widgetCSP")), "{openai:?}");
        // The mapped CSP is built (and validated) like any other: the scheme-less entry is rejected.
        let header = r.resources[0].csp_header.as_deref().unwrap();
        assert!(header.contains("connect-src 'self' https://api.example"), "{header}");
        assert!(codes(&r).contains(&"csp-entry-rejected"), "{:?}", r.findings);
        assert!(!header.contains("cdn.example"), "{header}");
    }
}
