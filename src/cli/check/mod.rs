//! `mcp-apps-host check`: every UI tool's View rendered through the full host path (proxy, CSP
//! header, bridge) in a real WebKitGTK window, headlessly, with a pass/fail report.
//!
//! Each tool runs in its own `mcp-apps-host run` child process (a fresh host and server per tool,
//! so one View cannot disturb the next); the verdict is read from that run's trace.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use crate::inspect::Severity;
use crate::ui_resource::tool_ui;

use super::server_args::ServerArgs;

mod judge;
mod junit;
mod self_check;
#[cfg(test)]
mod tests;

use judge::{compare_with_baseline, judge, picture_name};
use junit::junit;
use self_check::self_check;

/// Arguments of `check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Check only this tool.
    #[arg(long)]
    tool: Option<String>,
    /// Arguments for the tool calls, as a JSON object (default: `{}` for tools with no required field).
    #[arg(long, value_name = "JSON")]
    args: Option<String>,
    /// Print the report as JSON (shape documented in docs/app-developers.md).
    #[arg(long)]
    json: bool,
    /// Also write a JUnit XML report here.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write one PNG per checked tool into this folder.
    #[arg(long, value_name = "DIR")]
    screenshots: Option<PathBuf>,
    /// Compare each View's own picture with the one stored in this folder (`TOOL.png`, or
    /// `TOOL.PROFILE.png`), within a tolerance for antialiasing; a change fails the tool and
    /// writes `TOOL.diff.png` beside the stored one. A missing picture fails, unless
    /// `--update-baseline`.
    #[arg(long, value_name = "DIR")]
    baseline: Option<PathBuf>,
    /// Store each View's picture as the new baseline instead of comparing.
    #[arg(long, requires = "baseline")]
    update_baseline: bool,
    /// Seconds each View may take to initialize and get its result.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    timeout: f64,
    /// Check OpenAI Apps SDK widgets without the `window.openai` shim (as `run --no-openai-shim`).
    #[arg(long)]
    no_openai_shim: bool,
    /// Check as another host would show the Views: its display modes, container, optional
    /// requests, the CSP fields it honours (`vscode`, `claude-web`, `chatgpt`, ...). Repeat it for
    /// several, or `all` for every profile; each tool is reported per profile.
    #[arg(long, value_name = "NAME", conflicts_with = "self_check")]
    profile: Vec<String>,
    /// Run interaction sessions: a script file (`TOOL.session.json`: click, type, press,
    /// waitFor, expectCall, expectText, screenshot; see docs/app-developers.md), or a folder of them.
    /// A tool with sessions is checked once per session, and each step is reported (a JUnit test case).
    #[arg(long, value_name = "FILE|DIR", conflicts_with = "self_check")]
    session: Vec<PathBuf>,
    /// Replay a recorded run (`run --trace FILE`) offline: its server's answers serve the View
    /// again (the tool call that opened it, the View's own calls, its resource), and the report
    /// says which of the host's recorded messages to the View came again. With --html, a new
    /// build of the View is served instead of the recorded one.
    #[arg(long, value_name = "TRACE", conflicts_with_all = ["stdio", "url", "config", "self_check"])]
    replay: Option<PathBuf>,
    /// The View's HTML for --replay (a new build), instead of the recorded one.
    #[arg(long, value_name = "FILE", requires = "replay")]
    html: Option<PathBuf>,
    /// The recording --replay reads, once read.
    #[arg(skip)]
    recording: Option<super::replay::Recording>,
    /// Check this host instead of a server: a built-in probe View tests the host's MUSTs from inside.
    #[arg(long = "self", conflicts_with_all = ["stdio", "url", "config", "tool", "args"])]
    self_check: bool,
}

/// The verdict for one tool.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCheck {
    tool: String,
    /// The host profile it was checked under (none: this host as it is).
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<String>,
    /// `pass`, `fail` or `skip`.
    status: &'static str,
    /// Why it failed or was skipped (empty when it passed).
    reasons: Vec<String>,
    /// What the View does against the spec that this host tolerates, as lenient hosts do (a
    /// pass can have warnings); each names the spec clause.
    warnings: Vec<String>,
    resource_uri: Option<String>,
    resource_fetched: bool,
    handshake_completed: bool,
    /// Milliseconds from host start to `ui/notifications/initialized`.
    initialized_ms: Option<f64>,
    protocol_version: Option<String>,
    app_info: Option<Value>,
    arguments: Option<Value>,
    tool_input_delivered: bool,
    tool_result_delivered: bool,
    csp_violations: Vec<Value>,
    errors: Vec<String>,
    console_errors: Vec<String>,
    screenshot: Option<PathBuf>,
    /// Figures an App's CI can track (from the run's trace).
    figures: Figures,
    /// How the View's picture compared with its baseline (`same`, `changed`, `updated`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<String>,
    /// With --replay: how the host's messages to the View compare with the recording's
    /// (`recorded`, `replayed`, `same`, `differences`).
    #[serde(skip_serializing_if = "Option::is_none")]
    replay: Option<Value>,
    /// The interaction session it ran, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    /// Each step of that session with its outcome (`ok`: true, false, or null when not run).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    steps: Vec<Value>,
    #[serde(skip)]
    session_file: Option<PathBuf>,
    duration_ms: u128,
}

impl ToolCheck {
    fn new(tool: &str, resource_uri: Option<String>) -> Self {
        Self {
            tool: tool.to_owned(),
            profile: None,
            status: "fail",
            reasons: Vec::new(),
            warnings: Vec::new(),
            resource_uri,
            resource_fetched: false,
            handshake_completed: false,
            initialized_ms: None,
            protocol_version: None,
            app_info: None,
            arguments: None,
            tool_input_delivered: false,
            tool_result_delivered: false,
            csp_violations: Vec::new(),
            errors: Vec::new(),
            console_errors: Vec::new(),
            screenshot: None,
            baseline: None,
            session: None,
            steps: Vec::new(),
            session_file: None,
            replay: None,
            figures: Figures::default(),
            duration_ms: 0,
        }
    }
}

/// What one View's run came to, in figures (none where the View never got that far).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    /// The UI resource's HTML, in bytes.
    resource_bytes: Option<usize>,
    /// Milliseconds from the tool call to `ui/notifications/initialized`.
    call_to_initialized_ms: Option<f64>,
    /// Milliseconds from the tool call to the result reaching the View.
    call_to_result_ms: Option<f64>,
    /// Milliseconds from the tool call to the View's first `size-changed`.
    call_to_first_size_ms: Option<f64>,
    /// The resident memory of the View's web process once it settled, in kB (every web
    /// process of the host but the shell's).
    view_memory_kb: Option<u64>,
    /// Messages the View sent the host.
    view_to_host_messages: usize,
    /// Messages the host sent the View.
    host_to_view_messages: usize,
}

impl Figures {
    /// The figures of one run's trace.
    fn of(trace: &[Value]) -> Self {
        let t = |pred: &dyn Fn(&Value) -> bool| trace.iter().find(|r| pred(r)).and_then(|r| r["t_ms"].as_f64());
        let method = |r: &Value, dir: &str, m: &str| r["dir"] == dir && r["msg"]["method"] == m;
        let called = t(&|r| method(r, "host->server", "tools/call"));
        let since = |at: Option<f64>| Some(at? - called?);
        Figures {
            resource_bytes: trace
                .iter()
                .find(|r| method(r, "host->proxy", "ui/notifications/sandbox-resource-ready"))
                .and_then(|r| r["msg"]["params"]["html"].as_str().map(str::len)),
            call_to_initialized_ms: since(t(&|r| method(r, "view->host", "ui/notifications/initialized"))),
            call_to_result_ms: since(t(&|r| method(r, "host->view", "ui/notifications/tool-result"))),
            call_to_first_size_ms: since(t(&|r| method(r, "view->host", "ui/notifications/size-changed"))),
            view_memory_kb: trace
                .iter()
                .rev()
                .find(|r| r["dir"] == "figure" && r["msg"]["kind"] == "memory")
                .and_then(|r| r["msg"]["detail"]["viewsKb"].as_u64()),
            view_to_host_messages: trace.iter().filter(|r| r["dir"] == "view->host").count(),
            host_to_view_messages: trace.iter().filter(|r| r["dir"] == "host->view").count(),
        }
    }

    /// As JUnit properties (`name`, `value`).
    fn properties(&self) -> Vec<(&'static str, String)> {
        let ms = |v: Option<f64>| v.map(|v| format!("{v:.1}"));
        [
            ("resourceBytes", self.resource_bytes.map(|b| b.to_string())),
            ("callToInitializedMs", ms(self.call_to_initialized_ms)),
            ("callToResultMs", ms(self.call_to_result_ms)),
            ("callToFirstSizeMs", ms(self.call_to_first_size_ms)),
            ("viewMemoryKb", self.view_memory_kb.map(|kb| kb.to_string())),
            ("viewToHostMessages", Some(self.view_to_host_messages.to_string())),
            ("hostToViewMessages", Some(self.host_to_view_messages.to_string())),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k, v?)))
        .collect()
    }
}

/// An Xvfb this process started; stopped on drop.
struct Xvfb(std::process::Child);

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Makes sure windows can open: the user's display, or an Xvfb of our own.
fn ensure_display() -> Result<(Option<String>, Option<Xvfb>), String> {
    if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some() {
        return Ok((None, None));
    }
    let xvfb = ["/usr/bin/Xvfb", "/usr/local/bin/Xvfb"].into_iter().find(|p| Path::new(p).exists()).ok_or(
        "no display: DISPLAY is not set and Xvfb is not installed (install it, e.g. `apt-get install xvfb`, or run under a display)",
    )?;
    for n in 90..190 {
        if Path::new(&format!("/tmp/.X{n}-lock")).exists() || Path::new(&format!("/tmp/.X11-unix/X{n}")).exists() {
            continue;
        }
        let child = crate::host_env::as_given(&mut Command::new(xvfb))
            .args([
                format!(":{n}"),
                "-screen".into(),
                "0".into(),
                "1280x1024x24".into(),
                "-nolisten".into(),
                "tcp".into(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start Xvfb: {e}"))?;
        let guard = Xvfb(child);
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if socket.exists() {
                return Ok((Some(format!(":{n}")), Some(guard)));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        return Err("Xvfb did not start within 10 s".into());
    }
    Err("no free X display number for Xvfb".into())
}

/// `{}` when the tool's schema requires nothing, else the reason it must be skipped.
fn default_arguments(tool: &Value) -> Result<Value, String> {
    let required: Vec<&str> = tool
        .get("inputSchema")
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if required.is_empty() {
        Ok(json!({}))
    } else {
        Err(format!("needs arguments (required: {}); pass --args", required.join(", ")))
    }
}

/// Runs one tool in a child host; returns its trace, stderr and exit code.
fn run_one(
    args: &CheckArgs,
    display: Option<&str>,
    tool: &str,
    arguments: &Value,
    exit_after: &str,
    check: &mut ToolCheck,
) -> anyhow::Result<(Vec<Value>, String, Option<i32>)> {
    let dir = tempfile::tempdir()?;
    let trace = dir.path().join("trace.jsonl");
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    // The host of each tool settles the bus for itself and its own servers.
    crate::host_env::as_given(&mut cmd);
    cmd.arg("run").args(args.server.to_args()).args(["--tool", tool, "--args", &arguments.to_string()]);
    if let Some(profile) = &check.profile {
        cmd.args(["--profile", profile]);
    }
    cmd.args([
        "--exit-after",
        exit_after,
        "--consent",
        "deny",
        "--settle-ms",
        "800",
        "--timeout",
        &args.timeout.to_string(),
    ]);
    cmd.arg("--trace").arg(&trace);
    if let Some(session) = &check.session_file {
        cmd.arg("--session").arg(session);
    }
    if args.no_openai_shim {
        cmd.arg("--no-openai-shim");
    }
    // Screenshots where asked, and for a baseline (in the run's own folder if none was asked).
    // (A session's screenshot steps write beside it.)
    let own_folder = args.baseline.is_some() || check.session_file.is_some();
    let shots = args.screenshots.clone().or_else(|| own_folder.then(|| dir.path().to_path_buf()));
    if let Some(shots) = &shots {
        let path = shots.join(format!("{}.png", picture_name(tool, check.profile.as_deref())));
        cmd.arg("--screenshot").arg(&path);
        check.screenshot = Some(path);
    }
    if let Some(display) = display {
        cmd.env("DISPLAY", display);
    }
    cmd.env("MCP_APPS_HOST_LOG", "mcp_apps_host=warn").stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    let stderr_pipe = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || std::io::read_to_string(stderr_pipe).unwrap_or_default());
    let limit = Duration::from_secs_f64(args.timeout + 30.0);
    let started = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait()? {
            break status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = reader.join().unwrap_or_default();
    let records: Vec<Value> = std::fs::read_to_string(&trace)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    judge(check, &records, &stderr, code);
    check.figures = Figures::of(&records);
    if let Some(recording) = &args.recording {
        let replayed: Vec<Value> =
            records.iter().filter(|r| r["dir"] == "host->view").map(|r| r["msg"].clone()).collect();
        let compared = super::replay::compare(&recording.to_view, &replayed);
        for d in compared["differences"].as_array().into_iter().flatten().take(5) {
            check.warnings.push(format!("replay: {}", d.as_str().unwrap_or_default()));
        }
        check.replay = Some(compared);
    }
    if let (Some(baseline), true) = (&args.baseline, check.handshake_completed) {
        let view = check.screenshot.as_ref().map(|p| p.with_extension("view.png"));
        compare_with_baseline(check, baseline, view.as_deref(), args.update_baseline);
    }
    if args.screenshots.is_none() || check.screenshot.as_ref().is_some_and(|p| !p.exists()) {
        check.screenshot = None;
    }
    Ok((records, stderr, code))
}

/// The profiles `--profile` names (`all`: every one), each checked to exist.
fn profiles_of(asked: &[String]) -> Result<Vec<String>, String> {
    use crate::profile::HostProfile;
    let known = HostProfile::all_in(HostProfile::user_dir().as_deref())?;
    let mut out = Vec::new();
    for name in asked.iter().flat_map(|a| a.split(',')).map(str::trim).filter(|n| !n.is_empty()) {
        if name == "all" {
            out.extend(known.iter().map(|p| p.name.clone()));
        } else if known.iter().any(|p| p.name == name) {
            out.push(name.to_owned());
        } else {
            let names: Vec<&str> = known.iter().map(|p| p.name.as_str()).collect();
            return Err(format!("no host profile {name:?} (there are: {})", names.join(", ")));
        }
    }
    out.dedup();
    Ok(out)
}

/// An interaction session of `check --session`: its file, read and checked before any run.
struct Session {
    name: String,
    tool: String,
    path: PathBuf,
    arguments: Option<Value>,
}

/// The session files named (a folder stands for its `*.session.json` files), each read and
/// checked: its tool must be one of the checked tools with a UI.
fn sessions_of(paths: &[PathBuf], tools: &[&Value]) -> Result<Vec<Session>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.to_string_lossy().ends_with(".session.json"))
                .collect();
            if found.is_empty() {
                return Err(format!("{} holds no *.session.json file", path.display()));
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    files
        .into_iter()
        .map(|path| {
            let script = crate::app::Interaction::read(&path, Path::new("."))?;
            let tool = script.tool.clone().unwrap_or_else(|| script.name.clone());
            if !tools.iter().any(|t| t["name"] == tool.as_str()) {
                let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
                return Err(format!(
                    "{}: no checked tool with a UI is called `{tool}` (name it with \"tool\"; the tools are: {})",
                    path.display(),
                    names.join(", ")
                ));
            }
            let path = std::path::absolute(&path).unwrap_or(path);
            Ok(Session { name: script.name.clone(), tool, path, arguments: script.arguments.map(Value::Object) })
        })
        .collect()
}

/// Runs `check`: exit 0 when every checked tool passes, 1 when any fails, 2 for usage or
/// connection errors.
pub fn check(mut args: CheckArgs) -> anyhow::Result<i32> {
    if args.self_check {
        return self_check(&mut args);
    }
    if let Some(trace) = args.replay.clone() {
        // The recording is the server, and its call's arguments are the call's.
        let recording = match super::replay::Recording::read(&trace, None) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(2);
            }
        };
        args.server.stdio = vec![super::replay::server_command(&trace, &recording.view, args.html.as_deref())?];
        if args.args.is_none() && recording.arguments.is_object() {
            args.args = Some(recording.arguments.to_string());
        }
        args.recording = Some(recording);
    }
    let explicit_args = match &args.args {
        Some(text) => Some(Value::Object(super::parse_args(text)?)),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let survey = runtime.block_on(async {
        let survey = super::inspect::survey(&args.server).await;
        if let Ok(s) = &survey {
            s.conn.shutdown().await;
        }
        survey
    });
    let survey = match survey {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(2);
        }
    };
    let server = survey.conn.name().to_owned();
    let protocol = survey.conn.protocol_version();
    let negotiation = survey.conn.negotiation().map(|n| n.method());
    let revision = survey.conn.revision_label();
    let ui_tools: Vec<&Value> = survey
        .tools
        .iter()
        .filter(|t| tool_ui(t).ok().and_then(|u| u.resource_uri).is_some())
        .filter(|t| args.tool.as_deref().is_none_or(|name| t["name"] == name))
        .collect();
    if let Some(name) = &args.tool {
        if ui_tools.is_empty() {
            let known = survey.tools.iter().any(|t| t["name"] == name.as_str());
            eprintln!(
                "error: {}",
                if known { format!("tool `{name}` has no UI") } else { format!("{server} has no tool `{name}`") }
            );
            return Ok(2);
        }
    }
    if ui_tools.is_empty() {
        eprintln!("error: {server} has no tool with a UI (_meta.ui.resourceUri)");
        return Ok(2);
    }

    let (display, _xvfb) = match ensure_display() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(2);
        }
    };
    if let Some(dir) = &args.screenshots {
        std::fs::create_dir_all(dir)?;
    }
    // Each tool once, or once per host profile.
    let profiles: Vec<Option<String>> = match profiles_of(&args.profile) {
        Ok(p) if p.is_empty() => vec![None],
        Ok(p) => p.into_iter().map(Some).collect(),
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(2);
        }
    };
    let sessions = match sessions_of(&args.session, &ui_tools) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(2);
        }
    };
    // Each tool once per profile, or once per session of its own and profile.
    let runs = ui_tools.iter().flat_map(|t| {
        let own: Vec<Option<&Session>> =
            match sessions.iter().filter(|s| t["name"] == s.tool.as_str()).collect::<Vec<_>>() {
                none if none.is_empty() => vec![None],
                some => some.into_iter().map(Some).collect(),
            };
        profiles.iter().flat_map(move |p| own.clone().into_iter().map(move |s| (*t, p, s)))
    });
    let mut checks = Vec::new();
    for (tool, profile, session) in runs {
        let name = tool["name"].as_str().unwrap_or_default();
        let uri = tool_ui(tool).ok().and_then(|u| u.resource_uri);
        let mut c = ToolCheck::new(name, uri.clone());
        c.profile = profile.clone();
        c.session = session.map(|s| s.name.clone());
        c.session_file = session.map(|s| s.path.clone());
        let started = Instant::now();
        // A resource the survey already found broken fails without opening a window.
        let resource_errors: Vec<String> = survey
            .report
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error && uri.as_deref() == Some(f.subject.as_str()))
            .map(|f| f.message.clone())
            .collect();
        let arguments = session
            .and_then(|s| s.arguments.clone())
            .or_else(|| explicit_args.clone())
            .map(Ok)
            .unwrap_or_else(|| default_arguments(tool));
        match (resource_errors.is_empty(), arguments) {
            (false, _) => c.reasons = resource_errors,
            (true, Err(reason)) => {
                c.status = "skip";
                c.reasons.push(reason);
            }
            (true, Ok(arguments)) => {
                c.arguments = Some(arguments.clone());
                if !args.json {
                    let with = session.map(|s| format!(" with the session {}", s.name)).unwrap_or_default();
                    match profile {
                        Some(p) => eprintln!("checking {name}{with} as {p} would show it…"),
                        None => eprintln!("checking {name}{with}…"),
                    }
                }
                run_one(&args, display.as_deref(), name, &arguments, "result", &mut c)?;
            }
        }
        c.duration_ms = started.elapsed().as_millis();
        checks.push(c);
    }

    if let Some(path) = &args.junit {
        std::fs::write(path, junit(&server, &checks))?;
    }
    let failed = checks.iter().filter(|c| c.status == "fail").count();
    if args.json {
        let passed = checks.iter().filter(|c| c.status == "pass").count();
        let skipped = checks.len() - passed - failed;
        let report = json!({"server": server, "protocolVersion": protocol, "negotiation": negotiation, "tools": checks,
            "summary": {"passed": passed, "failed": failed, "skipped": skipped}});
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        match &revision {
            Some(version) => println!("server: {server} (MCP {version})"),
            None => println!("server: {server}"),
        }
        for c in &checks {
            let timing = c.initialized_ms.map(|t| format!("  initialized at {t:.0} ms")).unwrap_or_default();
            let app = c
                .app_info
                .as_ref()
                .map(|a| {
                    format!("  app {} {}", a["name"].as_str().unwrap_or("?"), a["version"].as_str().unwrap_or("?"))
                })
                .unwrap_or_default();
            let profile = c.profile.as_ref().map(|p| format!(" [{p}]")).unwrap_or_default();
            let session = c
                .session
                .as_ref()
                .map(|s| {
                    let passed = c.steps.iter().filter(|s| s["ok"] == true).count();
                    format!(
                        " (session {s}: {passed}/{} steps passed)",
                        c.steps.first().and_then(|s| s["of"].as_u64()).unwrap_or(0)
                    )
                })
                .unwrap_or_default();
            println!("{} {}{profile}{session}{timing}{app}", c.status.to_uppercase(), c.tool);
            for r in &c.reasons {
                println!("    - {r}");
            }
            for w in &c.warnings {
                println!("    warning: {w}");
            }
            if let Some(p) = &c.screenshot {
                println!("    screenshot: {}", p.display());
            }
        }
        println!("{} checked, {failed} failed", checks.len());
    }
    Ok(if failed > 0 { 1 } else { 0 })
}
