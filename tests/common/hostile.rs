//! The hostile suite's harness, shared by `e2e_hostile.rs` (attacks), `e2e_hostile_host.rs`
//! (the host's own queues and panels) and `e2e_supervision.rs` (a View that stops the web
//! content): run the binary with `--trace`, sample its memory, read what the fixture's canary and
//! the honest View saw.
//!
//! `tests/fixtures/hostile-server.mjs` serves one UI tool per attack and an honest View that
//! calls `honest-ok` every 300 ms; its canary listens on HTTP, four raw TCP ports and UDP and
//! prints `HIT ...` for anything that reaches it.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::node_server;

/// How long one hostile run may take.
pub const LIMIT: Duration = Duration::from_secs(90);

/// What one host process left behind.
pub struct HostRun {
    pub trace: Vec<Value>,
    pub stderr: String,
    pub stdout: String,
    pub elapsed: Duration,
    /// `(ms since spawn, host VmRSS kB, host VmHWM kB, VmRSS kB summed over the host's
    /// descendants (sampled less often; the last value is repeated in between))`.
    pub rss: Vec<(f64, u64, u64, u64)>,
    /// The host's descendants just before the test stopped it: `(name, VmRSS kB, VmHWM kB)`.
    pub final_procs: Vec<(String, u64, u64)>,
    /// The host was still running when the test stopped it (it did not crash or exit).
    pub alive_at_end: bool,
    /// Exit code, when the host ended by itself.
    pub code: Option<i32>,
}

impl HostRun {
    /// What went wrong, most telling first (a CI log keeps only the start of a failure): the
    /// host's own diagnostics, the end of its stderr, then the last trace records.
    pub fn dump(&self) -> String {
        let line = |r: &Value| {
            let mut s = r.to_string();
            s.truncate(300);
            s + "\n"
        };
        let mut out = String::from("--- the host's diagnostics ---\n");
        for r in self.trace.iter().filter(|r| r["dir"] == "diagnostic") {
            out.push_str(&line(r));
        }
        let tail: Vec<&str> = self.stderr.lines().rev().take(40).collect();
        out.push_str("--- stderr (last 40 lines) ---\n");
        for l in tail.into_iter().rev() {
            out.push_str(l);
            out.push('\n');
        }
        out.push_str("--- the trace (last 150 records) ---\n");
        for r in &self.trace[self.trace.len().saturating_sub(150)..] {
            out.push_str(&line(r));
        }
        out
    }

    /// Requests that reached the canary listener (lines `HIT ...` of the fixture's stderr).
    pub fn hits(&self) -> Vec<&str> {
        self.stderr.lines().filter(|l| l.contains(" HIT ") && !l.contains("REPORT")).collect()
    }

    /// Host log lines containing `needle`.
    pub fn log_count(&self, needle: &str) -> usize {
        self.stderr.matches(needle).count()
    }

    /// The first report of `attack`.
    pub fn report(&self, attack: &str) -> Value {
        reports(&self.trace, attack)
            .next()
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| panic!("no report from attack {attack}:\n{}", self.dump()))
    }

    pub fn report_time(&self, attack: &str) -> f64 {
        reports(&self.trace, attack).next().map(|(t, _)| t).expect("reported")
    }

    /// The automation script's first `person-report` (its `data`, parsed) and when it came.
    pub fn person_report(&self) -> (f64, Value) {
        person_reports_in(&self.trace)
            .next()
            .unwrap_or_else(|| panic!("the person (automation script) never reported:\n{}", self.dump()))
    }

    /// `(t_ms, view)` of every `host->server` tools/call of `tool`.
    pub fn calls_of(&self, tool: &str) -> Vec<(f64, String)> {
        self.trace
            .iter()
            .filter(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == tool)
            .map(|r| (r["t_ms"].as_f64().unwrap_or(0.0), r["view"].as_str().unwrap_or_default().to_owned()))
            .collect()
    }

    /// `host->server` tools/call records (view, tool name, arguments).
    pub fn server_calls(&self) -> Vec<(String, String, Value)> {
        self.trace
            .iter()
            .filter(|r| r["dir"] == "host->server" && r["msg"]["method"] == "tools/call")
            .map(|r| {
                (
                    r["view"].as_str().unwrap_or_default().to_owned(),
                    r["msg"]["params"]["name"].as_str().unwrap_or_default().to_owned(),
                    r["msg"]["params"]["arguments"].clone(),
                )
            })
            .collect()
    }

    pub fn rejected_reasons(&self, view: &str) -> Vec<String> {
        self.trace
            .iter()
            .filter(|r| r["dir"] == "rejected" && r["view"] == view)
            .map(|r| r["msg"]["reason"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// CSP violations the host recorded for `view` (`dir: "diagnostic"`, `kind: "csp"`).
    pub fn csp_violations(&self, view: &str) -> Vec<(String, String)> {
        self.trace
            .iter()
            .filter(|r| r["dir"] == "diagnostic" && r["view"] == view && r["msg"]["kind"] == "csp")
            .map(|r| {
                let d = &r["msg"]["detail"];
                (
                    d["directive"].as_str().unwrap_or_default().to_owned(),
                    d["blockedURI"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    /// Asserts the honest View `view` kept working after `t_ms`: it went on calling `honest-ok`,
    /// the answers kept reaching it (its `answered` count grows), and it was never torn down.
    pub fn assert_honest_kept_working(&self, view: &str, t_ms: f64) {
        let after: Vec<&Value> = self
            .trace
            .iter()
            .filter(|r| {
                r["dir"] == "host->server"
                    && r["view"] == view
                    && r["msg"]["params"]["name"] == "honest-ok"
                    && r["t_ms"].as_f64().unwrap_or(0.0) > t_ms
            })
            .collect();
        assert!(
            after.len() >= 3,
            "the honest View {view} made {} calls after the attack:\n{}",
            after.len(),
            self.dump()
        );
        let answered = |r: &Value| r["msg"]["params"]["arguments"]["answered"].as_u64().unwrap_or(0);
        assert!(
            answered(after.last().unwrap()) > answered(after[0]),
            "the honest View's answers stopped arriving after the attack:\n{}",
            self.dump()
        );
        let answers = self
            .trace
            .iter()
            .filter(|r| {
                r["dir"] == "host->view"
                    && r["view"] == view
                    && r["msg"]["id"].as_str().is_some_and(|id| id.starts_with("honest-"))
                    && r["msg"].get("result").is_some()
                    && r["t_ms"].as_f64().unwrap_or(0.0) > t_ms
            })
            .count();
        assert!(answers >= 2, "no answers to the honest View after the attack:\n{}", self.dump());
        assert!(
            !self.trace.iter().any(|r| r["view"] == view && r["msg"]["method"] == "ui/resource-teardown"),
            "the honest View was torn down"
        );
    }
}

/// The host's WebKit web processes (descendants named `WebKitWebProces...`).
pub fn web_processes(host: u32) -> Vec<u32> {
    descendants(host)
        .into_iter()
        .filter(|p| proc_memory(*p).is_some_and(|(name, _, _)| name.starts_with("WebKitWebProces")))
        .collect()
}

/// When the honest View (any View of `views`) called `honest-ok`, in the host's clock.
pub fn honest_calls(trace: &[Value], views: &[String]) -> Vec<f64> {
    trace
        .iter()
        .filter(|r| {
            r["dir"] == "host->server"
                && r["msg"]["params"]["name"] == "honest-ok"
                && views.iter().any(|v| r["view"] == v.as_str())
        })
        .filter_map(|r| r["t_ms"].as_f64())
        .collect()
}

/// `(t_ms, arguments)` of every `report` call whose `attack` is `attack`.
pub fn reports<'a>(trace: &'a [Value], attack: &'a str) -> impl Iterator<Item = (f64, &'a Value)> + 'a {
    trace
        .iter()
        .filter(move |r| {
            r["dir"] == "host->server"
                && r["msg"]["params"]["name"] == "report"
                && r["msg"]["params"]["arguments"]["attack"] == attack
        })
        .map(|r| (r["t_ms"].as_f64().unwrap_or(0.0), &r["msg"]["params"]["arguments"]))
}

/// Done once every attack in `attacks` reported and the honest View `honest` made `n` more
/// `honest-ok` calls after the last report.
pub fn reported_then_honest(
    attacks: &'static [&'static str],
    honest: &'static str,
    n: usize,
) -> impl Fn(&[Value]) -> bool {
    move |trace| {
        let mut last = 0.0f64;
        for a in attacks {
            match reports(trace, a).next() {
                Some((t, _)) => last = last.max(t),
                None => return false,
            }
        }
        honest_calls_after(trace, honest, last) >= n
    }
}

/// How many `honest-ok` calls the View `honest` made after `t_ms`.
pub fn honest_calls_after(trace: &[Value], honest: &str, t_ms: f64) -> usize {
    trace
        .iter()
        .filter(|r| {
            r["dir"] == "host->server"
                && r["view"] == honest
                && r["msg"]["params"]["name"] == "honest-ok"
                && r["t_ms"].as_f64().unwrap_or(0.0) > t_ms
        })
        .count()
}

/// The View `view`, or the View the host restored in its place after its web process ended
/// (following restores of restores).
pub fn restored_as(trace: &[Value], view: &str) -> String {
    let mut now = view.to_owned();
    for r in trace {
        if r["dir"] == "diagnostic" && r["msg"]["kind"] == "restored" && r["msg"]["from"] == now.as_str() {
            now = r["view"].as_str().unwrap_or_default().to_owned();
        }
    }
    now
}

pub fn read_trace(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// `(name, VmRSS kB, VmHWM kB)` of a process (VmHWM: the kernel's record of its peak RSS).
pub fn proc_memory(pid: u32) -> Option<(String, u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    };
    let name = status.lines().find_map(|l| l.strip_prefix("Name:")).unwrap_or_default().trim().to_owned();
    Some((name, field("VmRSS:")?, field("VmHWM:")?))
}

/// Every descendant of `pid` (WebKit's web and network processes, the MCP server).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(p) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else { continue };
            // The command name may contain spaces; the fields after its ')' are fixed.
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
            if let Some(ppid) = rest.split_whitespace().nth(1).and_then(|s| s.parse::<u32>().ok()) {
                parents.push((p, ppid));
            }
        }
    }
    let mut out = vec![];
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for (child, _) in parents.iter().filter(|(_, pp)| *pp == p) {
            out.push(*child);
            frontier.push(*child);
        }
    }
    out
}

/// Runs the binary with `args` (plus `--trace`) until `done(trace)` holds, the host exits, or
/// `limit` passes; samples the host's memory all along; then stops it.
pub fn run_host(args: &[String], done: impl Fn(&[Value]) -> bool, limit: Duration) -> HostRun {
    run_host_env(args, &[], done, limit)
}

/// [`run_host`] with extra environment variables for the host (test switches).
pub fn run_host_env(
    args: &[String],
    env: &[(&str, &str)],
    done: impl Fn(&[Value]) -> bool,
    limit: Duration,
) -> HostRun {
    run_host_watch(args, env, |_, trace| done(trace), limit)
}

/// [`run_host_env`] whose `done` also gets the host's pid (to act on its processes).
pub fn run_host_watch(
    args: &[String],
    env: &[(&str, &str)],
    done: impl Fn(u32, &[Value]) -> bool,
    limit: Duration,
) -> HostRun {
    assert!(
        std::env::var_os("DISPLAY").is_some(),
        "these tests open windows: run them under a display (xvfb-run -a cargo test --test e2e_hostile)"
    );
    let dir = tempfile::tempdir().unwrap();
    let trace_path = dir.path().join("trace.jsonl");
    let started = Instant::now();
    let spawn = || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
            .args(args)
            .arg("--trace")
            .arg(&trace_path)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("MCP_APPS_HOST_LOG", "mcp_apps_host=info,warn")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let (out_pipe, err_pipe) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let out_reader = std::thread::spawn(move || std::io::read_to_string(out_pipe).unwrap_or_default());
        let err_reader = std::thread::spawn(move || std::io::read_to_string(err_pipe).unwrap_or_default());
        (child, out_reader, err_reader)
    };
    let (mut child, mut out_reader, mut err_reader) = spawn();
    let mut pid = child.id();
    let mut retried = false;
    let mut rss = Vec::new();
    let mut others = 0;
    let mut final_procs = Vec::new();
    let mut last_read = Instant::now() - Duration::from_secs(1);
    let (alive_at_end, code) = loop {
        if let Some(status) = child.try_wait().unwrap() {
            // The X server refused the host at once (seen on a busy machine): once more.
            if !retried && started.elapsed() < Duration::from_secs(10) {
                let stderr =
                    std::mem::replace(&mut err_reader, std::thread::spawn(String::new)).join().unwrap_or_default();
                if stderr.contains("cannot open the display") {
                    retried = true;
                    eprintln!("the X server refused the host's connection; starting it once more");
                    std::thread::sleep(Duration::from_secs(1));
                    (child, out_reader, err_reader) = spawn();
                    pid = child.id();
                    continue;
                }
                err_reader = std::thread::spawn(move || stderr);
            }
            break (false, status.code());
        }
        let slow_tick = last_read.elapsed() >= Duration::from_millis(250);
        if slow_tick {
            others = descendants(pid).into_iter().filter_map(proc_memory).map(|(_, rss, _)| rss).sum();
        }
        if let Some((_, host, hwm)) = proc_memory(pid) {
            rss.push((started.elapsed().as_secs_f64() * 1000.0, host, hwm, others));
        }
        if slow_tick {
            last_read = Instant::now();
            if done(pid, &read_trace(&trace_path)) || started.elapsed() > limit {
                final_procs = descendants(pid).into_iter().filter_map(proc_memory).collect();
                let alive = child.try_wait().unwrap().is_none();
                let _ = child.kill();
                let _ = child.wait();
                break (alive, None);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    HostRun {
        trace: read_trace(&trace_path),
        stderr: err_reader.join().unwrap(),
        stdout: out_reader.join().unwrap(),
        elapsed: started.elapsed(),
        rss,
        final_procs,
        alive_at_end,
        code,
    }
}

/// A config file with two hostile servers named `a` and `b` (two origins), in `dir`.
pub fn two_hostile_servers(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let config = dir.path().join("mcp.json");
    let script = super::fixtures().join("hostile-server.mjs");
    let entry = |instance: &str| serde_json::json!({"command": "node", "args": [script.to_string_lossy(), "--instance", instance]});
    std::fs::write(&config, serde_json::json!({"mcpServers": {"a": entry("a"), "b": entry("b")}}).to_string()).unwrap();
    config
}

pub fn hostile(instance: Option<&str>) -> String {
    match instance {
        Some(i) => node_server("hostile-server.mjs", &format!("--instance {i}")),
        None => node_server("hostile-server.mjs", ""),
    }
}

/// `run --stdio <server> --tool A --args {..} --tool B --args {..} ... <extra>`.
pub fn views(server: &str, tools: &[(&str, Value)], extra: &[&str]) -> Vec<String> {
    let mut args = vec!["run".to_owned(), "--stdio".to_owned(), server.to_owned()];
    for (tool, arguments) in tools {
        args.extend(["--tool".to_owned(), (*tool).to_owned(), "--args".to_owned(), arguments.to_string()]);
    }
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args.extend(["--timeout".to_owned(), "80".to_owned()]);
    args
}

pub fn assert_no_hits(run: &HostRun) {
    let hits = run.hits();
    assert!(hits.is_empty(), "requests escaped the sandbox and reached the canary listener:\n{}", hits.join("\n"));
}

pub fn text(v: &Value) -> String {
    v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string())
}

/// `(t_ms, data)` of every `person-report` call (the person's automation script), oldest first.
pub fn person_reports_in(trace: &[Value]) -> impl Iterator<Item = (f64, Value)> + '_ {
    trace.iter().filter(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "person-report").map(|r| {
        let data = r["msg"]["params"]["arguments"]["data"].as_str().unwrap_or("null");
        (r["t_ms"].as_f64().unwrap_or(0.0), serde_json::from_str(data).unwrap_or(Value::Null))
    })
}

/// What the person's automation reported (`person-report` calls, newest last).
pub fn person_reports(run: &HostRun) -> Vec<Value> {
    person_reports_in(&run.trace).map(|(_, data)| data).filter(|d| !d.is_null()).collect()
}

/// `run --config <config> --automation <script> --tool A --args {..} ... --timeout 80`.
pub fn config_views(config: &Path, automation: &str, tools: &[(&str, Value)]) -> Vec<String> {
    let mut args: Vec<String> = ["run", "--config", &config.to_string_lossy(), "--automation", automation]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    for (tool, arguments) in tools {
        args.extend(["--tool".to_owned(), (*tool).to_owned(), "--args".to_owned(), arguments.to_string()]);
    }
    args.extend(["--timeout".to_owned(), "80".to_owned()]);
    args
}

pub fn write_automation(dir: &tempfile::TempDir, body: &str) -> String {
    super::automation(dir, body)
}

/// The X display's CLIPBOARD selection as text (`xclip`, which scripts/setup installs), or
/// `None` when nobody owns it (or xclip is missing, or its owner did not answer in 5 s).
pub fn x_clipboard() -> Option<String> {
    let out = Command::new("timeout")
        .args(["5", "xclip", "-o", "-selection", "clipboard"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Puts `text` on the X display's CLIPBOARD, as the person copying it in another program: xclip
/// keeps serving it in the background until another program takes the selection.
pub fn set_x_clipboard(text: &str) {
    use std::io::Write;
    let mut child = Command::new("xclip")
        .args(["-i", "-selection", "clipboard"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("xclip runs (scripts/setup installs it)");
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    child.wait().unwrap();
}

/// A real click (xdotool, X events the person's mouse would send) at `(x, y)` of the window of
/// the process `pid`, raised above the other windows of the display first.
pub fn click_window(pid: u32, x: i64, y: i64) -> bool {
    let xdotool = |args: &[&str]| {
        let out = Command::new("xdotool").args(args).output().expect("xdotool runs (scripts/setup installs it)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let Some(window) =
        xdotool(&["search", "--onlyvisible", "--pid", &pid.to_string()]).lines().next().map(str::to_owned)
    else {
        return false;
    };
    xdotool(&["windowraise", &window]);
    xdotool(&["windowfocus", &window]);
    xdotool(&["mousemove", "--window", &window, &x.to_string(), &y.to_string()]);
    xdotool(&["click", "1"]);
    true
}
