//! `check --self`: the built-in probe View tests this host's MUSTs from inside, and the host's
//! own log tells what only it can (that a View's forged messages were dropped).

use super::*;

/// One requirement of the host self-check.
#[derive(Debug, Serialize)]
pub(super) struct Requirement {
    requirement: String,
    ok: bool,
    detail: Value,
}

/// The host's MUSTs, tested from inside by the built-in probe View (plus what only the host's
/// own log can tell: that the View's forged IPC messages were dropped).
pub(super) fn requirements(report: &Value, stderr: &str) -> Vec<Requirement> {
    let mut out: Vec<Requirement> = report
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, v)| v.get("ok").is_some())
        .map(|(name, v)| Requirement { requirement: name.clone(), ok: v["ok"] == true, detail: v["detail"].clone() })
        .collect();
    let attempts = report["ipcAttempts"].as_u64().unwrap_or(0) as usize;
    let dropped = stderr.matches("dropped IPC message without the host secret").count();
    out.push(Requirement {
        requirement: "the View cannot reach the host's IPC (forged messages dropped)".into(),
        ok: dropped >= attempts,
        detail: json!({"attempts": attempts, "dropped": dropped}),
    });
    out.push(Requirement {
        requirement: "a refused tool never reaches the server".into(),
        ok: !stderr.contains("PROBE MODEL-ONLY CALLED"),
        detail: Value::Null,
    });
    out
}

pub(super) fn self_check(args: &mut CheckArgs) -> anyhow::Result<i32> {
    args.server.stdio = vec![crate::server::config::builtin_server_command("probe")?];
    let (display, _xvfb) = match ensure_display() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(2);
        }
    };
    let tool = crate::cli::probe_server::PROBE_TOOL;
    let mut c = ToolCheck::new(tool, Some(crate::cli::probe_server::PROBE_URI.into()));
    let (trace, stderr, _) = run_one(args, display.as_deref(), tool, &json!({}), "teardown", &mut c)?;
    let report = trace
        .iter()
        .filter(|r| r["dir"] == "host->server")
        .find(|r| r["msg"]["params"]["name"] == "probe-report")
        .map(|r| r["msg"]["params"]["arguments"]["results"].clone());
    let Some(report) = report else {
        eprintln!("error: the probe View never reported; the host failed before it could run:");
        for r in &c.reasons {
            eprintln!("  - {r}");
        }
        return Ok(1);
    };
    let reqs = requirements(&report, &stderr);
    let failed = reqs.iter().filter(|r| !r.ok).count();
    if args.json {
        let out = json!({"selfCheck": reqs, "summary": {"passed": reqs.len() - failed, "failed": failed}});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for r in &reqs {
            let detail = if r.detail.is_null() || r.ok { String::new() } else { format!("  {}", r.detail) };
            println!("{} {}{detail}", if r.ok { "PASS" } else { "FAIL" }, r.requirement);
        }
        println!("{} requirements, {failed} failed", reqs.len());
    }
    if let Some(path) = &args.junit {
        let checks: Vec<ToolCheck> = reqs
            .iter()
            .map(|r| {
                let mut t = ToolCheck::new(&r.requirement, None);
                t.status = if r.ok { "pass" } else { "fail" };
                if !r.ok {
                    t.reasons.push(r.detail.to_string());
                }
                t
            })
            .collect();
        std::fs::write(path, junit("mcp-apps-host self-check", &checks))?;
    }
    Ok(if failed > 0 { 1 } else { 0 })
}
