//! `mcp-apps-host inspect`: a server's tools and UI resources, linted, with no window.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::inspect::{inspect as lint, report_json, Report, Severity};
use crate::server::Connection;
use crate::ui_resource::tool_ui;

use super::server_args::ServerArgs;

/// Arguments of `inspect`.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Print the report as JSON (shape documented in docs/app-developers.md).
    #[arg(long)]
    json: bool,
}

/// What `inspect` and `check` learn from a server before any window opens.
pub struct Survey {
    pub conn: Arc<Connection>,
    pub tools: Vec<Value>,
    pub report: Report,
}

/// Connects, lists everything and reads every linked UI resource.
pub async fn survey(server: &ServerArgs) -> anyhow::Result<Survey> {
    let spec = server.resolve()?;
    let conn = Connection::connect(&spec).await?;
    let tools = conn.tools();
    let mut reads = BTreeMap::new();
    let mut listed = Vec::new();
    for tool in &tools {
        let Some(uri) = tool_ui(tool).ok().and_then(|ui| ui.resource_uri) else { continue };
        if reads.contains_key(&uri) {
            continue;
        }
        listed.extend(conn.listed_resource(&uri));
        reads.insert(uri.clone(), conn.read_resource(uri).await);
    }
    let report = lint(&tools, &listed, &reads);
    Ok(Survey { conn, tools, report })
}

fn print_human(server: &str, protocol: Option<&str>, report: &Report) {
    match protocol {
        Some(version) => println!("server: {server} (MCP {version})"),
        None => println!("server: {server}"),
    }
    println!("tools ({}):", report.tools.len());
    let width = report.tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for t in &report.tools {
        let ui = t.resource_uri.as_deref().unwrap_or("-");
        let legacy = if t.legacy_key_only { " (legacy key)" } else { "" };
        println!("  {:width$}  ui: {ui}{legacy}  visibility: {}", t.name, t.visibility.join(", "));
    }
    println!("UI resources ({}):", report.resources.len());
    for r in &report.resources {
        let size = r.bytes.map(|b| format!("{:.1} KB", b as f64 / 1024.0)).unwrap_or_else(|| "-".into());
        println!("  {}  {}  {size}  meta: {}", r.uri, r.mime_type.as_deref().unwrap_or("(no MIME)"), r.meta_source);
        if let Some(csp) = &r.csp_header {
            println!("    CSP: {csp}");
        }
    }
    println!(
        "findings: {} errors, {} warnings, {} infos",
        report.count(Severity::Error),
        report.count(Severity::Warning),
        report.count(Severity::Info)
    );
    for f in &report.findings {
        let sev = match f.severity {
            Severity::Error => "error  ",
            Severity::Warning => "warning",
            Severity::Info => "info   ",
        };
        println!("  {sev} {:24} {}: {}", f.code, f.subject, f.message);
    }
}

/// Runs `inspect`: exit 0 when there is no error finding, 1 when there is, 2 when the server
/// cannot be reached.
pub fn inspect(args: InspectArgs) -> anyhow::Result<i32> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let outcome = runtime.block_on(async {
        let survey = survey(&args.server).await;
        if let Ok(s) = &survey {
            s.conn.shutdown().await;
        }
        survey
    });
    let survey = match outcome {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(2);
        }
    };
    let name = survey.conn.name().to_owned();
    if args.json {
        let mut report = report_json(&name, &survey.report);
        report["protocolVersion"] = serde_json::json!(survey.conn.protocol_version());
        report["negotiation"] = serde_json::json!(survey.conn.negotiation().map(|n| n.method()));
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_human(&name, survey.conn.revision_label().as_deref(), &survey.report);
    }
    Ok(if survey.report.count(Severity::Error) > 0 { 1 } else { 0 })
}
