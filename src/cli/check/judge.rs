//! A run's verdict, read from its trace and stderr: what the View did and did not do, its
//! session's steps, and how its picture compares with its baseline.

use super::*;

/// Reads the verdict of one `run` from its trace and stderr.
pub(super) fn judge(check: &mut ToolCheck, trace: &[Value], stderr: &str, code: Option<i32>) {
    // What a View that never started sent instead (the bridge's `handshake` diagnostics).
    let mut not_started = Vec::new();
    // The View's requests by id, to read the host's answers (what a profile's host refused).
    let mut asked: std::collections::HashMap<String, (String, Value)> = std::collections::HashMap::new();
    let host = check.profile.clone().unwrap_or_else(|| "this host".into());
    for rec in trace {
        let msg = &rec["msg"];
        match rec["dir"].as_str() {
            Some("view->host") if msg["id"].is_number() || msg["id"].is_string() => {
                if let Some(method) = msg["method"].as_str() {
                    asked.insert(msg["id"].to_string(), (method.to_owned(), msg["params"].clone()));
                }
            }
            Some("host->view") if msg.get("method").is_none() => {
                let Some((method, params)) = asked.get(&msg["id"].to_string()) else { continue };
                let wanted = params["mode"].as_str().unwrap_or_default();
                if method == "ui/request-display-mode" && msg["result"]["mode"].as_str().is_some_and(|m| m != wanted) {
                    check.warnings.push(format!(
                        "asks for {wanted}, which {host} does not offer here: it stays {}",
                        msg["result"]["mode"].as_str().unwrap_or("?")
                    ));
                }
                if msg["error"]["code"] == -32601 && method.starts_with("ui/") {
                    check.warnings.push(format!("calls {method}, which {host} does not offer (method not found)"));
                }
            }
            _ => {}
        }
    }
    check.warnings.dedup();
    for rec in trace {
        let msg = &rec["msg"];
        match rec["dir"].as_str() {
            Some("view->host") => match msg["method"].as_str() {
                Some("ui/initialize") => {
                    check.protocol_version = msg["params"]["protocolVersion"].as_str().map(str::to_owned);
                    check.app_info = msg["params"].get("appInfo").cloned();
                }
                Some("ui/notifications/initialized") if !check.handshake_completed => {
                    check.handshake_completed = true;
                    check.initialized_ms = rec["t_ms"].as_f64();
                }
                _ => {}
            },
            Some("host->proxy") if msg["method"] == "ui/notifications/sandbox-resource-ready" => {
                check.resource_fetched = true
            }
            Some("host->view") => match msg["method"].as_str() {
                Some("ui/notifications/tool-input") => check.tool_input_delivered = true,
                Some("ui/notifications/tool-result") => check.tool_result_delivered = true,
                Some("ui/notifications/tool-cancelled") => {
                    check.reasons.push(format!(
                        "the tool call failed: {}",
                        msg["params"]["reason"].as_str().unwrap_or("no reason")
                    ));
                }
                _ => {}
            },
            Some("diagnostic") => {
                let detail = &msg["detail"];
                let text = detail["message"].as_str().unwrap_or_default().to_owned();
                match msg["kind"].as_str() {
                    Some("csp") => check
                        .csp_violations
                        .push(json!({"directive": detail["directive"], "blockedURI": detail["blockedURI"]})),
                    Some("error") => check.errors.push(match (detail["source"].as_str(), detail["line"].as_u64()) {
                        (Some(source), Some(line)) => format!("{text} ({source}:{line})"),
                        _ => text,
                    }),
                    // Every console level is forwarded (for preview's log); only errors fail.
                    Some("console") if detail["level"].as_str().is_none_or(|l| l == "error") => {
                        check.console_errors.push(text)
                    }
                    Some("spec") => check
                        .warnings
                        .push(format!("{text} [{}]", detail["clause"].as_str().unwrap_or("spec clause not given"))),
                    Some("handshake") => not_started.push(text),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let error_lines: Vec<&str> = stderr.lines().filter_map(|l| l.strip_prefix("error: ")).collect();
    judge_session(check, trace);
    if !check.resource_fetched {
        check.reasons.push("the UI resource never reached the sandbox".into());
    }
    if check.resource_fetched && !check.handshake_completed {
        check.reasons.extend(not_started);
        check.reasons.push("the View never completed the handshake (no ui/notifications/initialized)".into());
    }
    if check.handshake_completed && !check.tool_input_delivered {
        check.reasons.push("tool-input was not delivered".into());
    }
    if check.handshake_completed && !check.tool_result_delivered {
        check.reasons.push("tool-result was not delivered".into());
    }
    for v in &check.csp_violations {
        check.reasons.push(format!(
            "CSP violation: {} blocked {}",
            v["directive"].as_str().unwrap_or("?"),
            v["blockedURI"].as_str().unwrap_or("?")
        ));
    }
    for e in &check.errors {
        check.reasons.push(format!("uncaught error: {e}"));
    }
    for e in &check.console_errors {
        check.reasons.push(format!("console error: {e}"));
    }
    if code != Some(0) {
        for line in error_lines {
            let line = line.to_owned();
            if !check.reasons.contains(&line) {
                check.reasons.push(line);
            }
        }
        if code.is_none() {
            check.reasons.push("the host did not finish in time".into());
        }
    }
    check.reasons.dedup();
    check.status = if check.reasons.is_empty() { "pass" } else { "fail" };
}

/// The steps of the run's interaction session (if it ran one), and the first that failed.
pub(super) fn judge_session(check: &mut ToolCheck, trace: &[Value]) {
    let Some(name) = check.session.clone() else { return };
    check.steps = trace.iter().filter(|r| r["dir"] == "session").map(|r| r["msg"].clone()).collect();
    if let Some(failed) = check.steps.iter().find(|s| s["ok"] == false) {
        check.reasons.push(format!(
            "session {name}: step {}/{} {} failed: {}",
            failed["step"],
            failed["of"],
            failed["action"].as_str().unwrap_or("?"),
            failed["detail"].as_str().unwrap_or("?")
        ));
    } else if check.handshake_completed && check.steps.iter().all(|s| s["ok"] == true) {
        // Every step is written when it ends: fewer than the script holds, and none failed,
        // means the run ended before the session did.
        let of = check.steps.first().and_then(|s| s["of"].as_u64());
        if check.steps.is_empty() || of.is_some_and(|of| of as usize > check.steps.len()) {
            check.reasons.push(format!("session {name} did not finish ({} steps ran)", check.steps.len()));
        }
    }
}

/// A tool's picture's file name (without `.png`): the tool, and the profile it was shown in.
pub(super) fn picture_name(tool: &str, profile: Option<&str>) -> String {
    let file: String =
        tool.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    match profile {
        Some(p) => format!("{file}.{p}"),
        None => file,
    }
}

/// Compares the View's own picture `view` with its baseline in `dir` (or stores it there).
pub(super) fn compare_with_baseline(check: &mut ToolCheck, dir: &Path, view: Option<&Path>, update: bool) {
    use crate::cli::baseline::{compare, Comparison, Picture};
    let name = picture_name(&check.tool, check.profile.as_deref());
    let stored = dir.join(format!("{name}.png"));
    let Some(now) = view.filter(|p| p.exists()) else {
        check.reasons.push("no picture of the View was taken, so it was not compared with its baseline".into());
        check.status = "fail";
        return;
    };
    if update {
        let copied = std::fs::create_dir_all(dir).and_then(|()| std::fs::copy(now, &stored));
        match copied {
            Ok(_) => check.baseline = Some("updated".into()),
            Err(e) => {
                check.reasons.push(format!("the baseline {} could not be written: {e}", stored.display()));
                check.status = "fail";
            }
        }
        return;
    }
    let (was, now) = match (Picture::read(&stored), Picture::read(now)) {
        (Ok(was), Ok(now)) => (was, now),
        (Err(_), _) if !stored.exists() => {
            check.reasons.push(format!("no baseline {} (run with --update-baseline to store one)", stored.display()));
            check.baseline = Some("missing".into());
            check.status = "fail";
            return;
        }
        (Err(e), _) | (_, Err(e)) => {
            check.reasons.push(format!("the pictures could not be compared: {e}"));
            check.status = "fail";
            return;
        }
    };
    let (comparison, diff) = compare(&was, &now);
    match comparison {
        Comparison::Same => check.baseline = Some("same".into()),
        Comparison::Resized { was, now } => {
            check.baseline = Some("resized".into());
            check
                .reasons
                .push(format!("the View's picture is {}x{} px, its baseline {}x{} px", now.0, now.1, was.0, was.1));
        }
        Comparison::Changed { pixels, area: (x, y, w, h) } => {
            check.baseline = Some("changed".into());
            let diff_path = dir.join(format!("{name}.diff.png"));
            let written = diff.map(|d| d.write(&diff_path));
            let said = match written {
                Some(Ok(())) => format!("; the difference is in {}", diff_path.display()),
                _ => String::new(),
            };
            check.reasons.push(format!(
                "the View looks different from its baseline: {pixels} pixels changed in the area at {x},{y} of {w}x{h} px{said}"
            ));
        }
    }
    check.status = if check.reasons.is_empty() { "pass" } else { "fail" };
}
