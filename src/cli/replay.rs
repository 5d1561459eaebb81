//! Record and replay (`check --replay TRACE`): a run's trace (`--trace`) holds what its server
//! answered the host for one View (the tool call that opened it, the View's own calls, its
//! resource as the host handed it to the sandbox). Replayed, that recording is the server: a
//! stdio MCP server (`__replay-server`, run by `check`) that lists the recorded tool, serves the
//! recorded resource (or a new build of the View, `--html`), and answers each tool call with the
//! answer recorded for the same call. So a View is tested against the exact inputs a real run
//! gave it, offline, with every check of `check` (profiles, sessions, baselines); and `check`
//! compares what the host sent the View in the replay with what it sent in the recording.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::demo::RpcFailure;

/// What the replay serves, read from a trace.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The View the recording is of (`v1`, ...).
    pub view: String,
    /// The tool whose call opened the View, and its arguments.
    pub tool: String,
    pub arguments: Value,
    uri: String,
    /// The opening tool's definition, as the host told the View (`hostContext.toolInfo`).
    definition: Option<Value>,
    html: String,
    csp: Value,
    permissions: Value,
    /// Every tool call of the View's, with its recorded answer (`result` or `error`).
    calls: Vec<(String, Value, Value)>,
    /// Every message the host sent the View.
    pub to_view: Vec<Value>,
}

fn records(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read the trace {}: {e}", path.display()))?;
    Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}

impl Recording {
    /// Reads the recording of `view` (else of the first View that got its resource) from a trace.
    pub fn read(path: &Path, view: Option<&str>) -> Result<Self, String> {
        let all = records(path)?;
        let ready =
            |r: &Value| r["dir"] == "host->proxy" && r["msg"]["method"] == "ui/notifications/sandbox-resource-ready";
        let view = match view {
            Some(v) => v.to_owned(),
            None => {
                all.iter().find(|r| ready(r)).and_then(|r| r["view"].as_str()).map(str::to_owned).ok_or_else(|| {
                    format!(
                        "{}: no View got its resource in this trace (record one with `run --trace FILE`)",
                        path.display()
                    )
                })?
            }
        };
        let mine: Vec<&Value> = all.iter().filter(|r| r["view"] == view.as_str()).collect();
        let resource = mine
            .iter()
            .find(|r| ready(r))
            .ok_or_else(|| format!("{}: the View {view} never got its resource", path.display()))?;
        let params = &resource["msg"]["params"];
        let html = params["html"].as_str().filter(|h| !h.is_empty()).ok_or_else(|| {
            format!("{}: the trace does not hold the View's HTML (it was recorded without a copy)", path.display())
        })?;
        let uri = mine
            .iter()
            .find(|r| r["dir"] == "host->server" && r["msg"]["method"] == "resources/read")
            .and_then(|r| r["msg"]["params"]["uri"].as_str())
            .unwrap_or("ui://replay/view.html")
            .to_owned();
        // Tool calls and their answers, in order (the trace has no ids: the n-th answer of a
        // method is taken to be the n-th call's; calls a View makes at once may pair otherwise).
        let mut asked: Vec<(String, Value)> = Vec::new();
        let mut calls = Vec::new();
        for r in &mine {
            let msg = &r["msg"];
            if msg["method"] != "tools/call" {
                continue;
            }
            match r["dir"].as_str() {
                Some("host->server") => asked.push((
                    msg["params"]["name"].as_str().unwrap_or_default().to_owned(),
                    msg["params"]["arguments"].clone(),
                )),
                Some("server->host") if !asked.is_empty() => {
                    let (name, arguments) = asked.remove(0);
                    let answer = match msg.get("error") {
                        Some(e) => json!({ "error": e }),
                        None => json!({ "result": msg["result"] }),
                    };
                    calls.push((name, arguments, answer));
                }
                _ => {}
            }
        }
        let (tool, arguments, _) = calls
            .first()
            .cloned()
            .ok_or_else(|| format!("{}: the View {view}'s tool call has no recorded answer", path.display()))?;
        let to_view: Vec<Value> = mine.iter().filter(|r| r["dir"] == "host->view").map(|r| r["msg"].clone()).collect();
        let definition = to_view
            .iter()
            .find_map(|m| m["result"]["hostContext"]["toolInfo"]["tool"].as_object())
            .filter(|t| t.get("name").and_then(Value::as_str) == Some(tool.as_str()))
            .map(|t| Value::Object(t.clone()));
        Ok(Self {
            view,
            tool,
            arguments,
            uri,
            definition,
            html: html.to_owned(),
            csp: params["csp"].clone(),
            permissions: params["permissions"].clone(),
            calls,
            to_view,
        })
    }

    /// The tools: the one that opens the View, and each other one the View called.
    fn tools(&self) -> Value {
        let mut names: Vec<&str> = Vec::new();
        for (name, _, _) in &self.calls {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        let tools: Vec<Value> = names
            .into_iter()
            .map(|name| {
                if name == self.tool {
                    // As the server defined it, when the host told the View (`toolInfo`).
                    if let Some(definition) = &self.definition {
                        return definition.clone();
                    }
                    let ui = json!({"resourceUri": self.uri, "visibility": ["model", "app"]});
                    return json!({"name": name, "description": "replayed from a recording",
                        "inputSchema": {"type": "object"}, "_meta": {"ui": ui}});
                }
                json!({"name": name, "description": "replayed from a recording", "inputSchema": {"type": "object"}})
            })
            .collect();
        json!(tools)
    }

    fn resource(&self, html: &str) -> Value {
        let mut ui = json!({});
        if self.csp.is_object() {
            ui["csp"] = self.csp.clone();
        }
        if self.permissions.is_object() {
            ui["permissions"] = self.permissions.clone();
        }
        json!({"contents": [{"uri": self.uri, "mimeType": crate::protocol::RESOURCE_MIME_TYPE, "text": html, "_meta": {"ui": ui}}]})
    }
}

/// The replay server's state: the recording, the View's HTML it serves, and which recorded
/// calls were answered already (each once; the same call again gets the next recorded answer).
struct Replay {
    recording: Recording,
    html: String,
    used: Mutex<Vec<bool>>,
}

impl Replay {
    fn answer(&self, method: &str, params: &Value) -> Result<Value, RpcFailure> {
        match method {
            "initialize" => Ok(crate::demo::initialize_result("mcp-apps-host-replay", params)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({"tools": self.recording.tools()})),
            "resources/list" => Ok(json!({"resources": [{"uri": self.recording.uri, "name": "the recorded View",
                "mimeType": crate::protocol::RESOURCE_MIME_TYPE}]})),
            "resources/read" if params["uri"] == self.recording.uri.as_str() => Ok(self.recording.resource(&self.html)),
            "resources/read" => Err((-32002, format!("Resource not found: {}", params["uri"]))),
            "tools/call" => self.call(params["name"].as_str().unwrap_or_default(), &params["arguments"]),
            _ => Err((-32601, format!("method not found: {method}"))),
        }
    }

    /// The recorded answer to this call: the first unused one with these arguments, else the
    /// first unused one of this tool; an error that says so when the recording has none.
    fn call(&self, name: &str, arguments: &Value) -> Result<Value, RpcFailure> {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let calls = &self.recording.calls;
        let same = |i: usize| {
            calls[i].0 == name && (calls[i].1 == *arguments || (calls[i].1.is_null() && arguments == &json!({})))
        };
        let pick = (0..calls.len())
            .find(|&i| !used[i] && same(i))
            .or_else(|| (0..calls.len()).find(|&i| !used[i] && calls[i].0 == name));
        let Some(i) = pick else {
            return Err((-32603, format!("the recording has no answer to {name} with {arguments}")));
        };
        used[i] = true;
        let answer = &calls[i].2;
        match answer.get("error") {
            Some(e) => Err((
                e["code"].as_i64().unwrap_or(-32603),
                e["message"].as_str().unwrap_or("recorded error").to_owned(),
            )),
            None => Ok(answer["result"].clone()),
        }
    }
}

/// `__replay-server TRACE [--html FILE] [--view ID]`: serves the recording on stdin/stdout.
pub fn serve(trace: &Path, html: Option<&Path>, view: Option<&str>) -> anyhow::Result<i32> {
    let recording = Recording::read(trace, view).map_err(anyhow::Error::msg)?;
    let html = match html {
        Some(path) => {
            std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?
        }
        None => recording.html.clone(),
    };
    let used = Mutex::new(vec![false; recording.calls.len()]);
    let replay = Replay { recording, html, used };
    crate::demo::serve_stdio(|m, p| replay.answer(m, p))?;
    Ok(0)
}

/// The command line of the replay server for `check --replay`.
pub fn server_command(trace: &Path, view: &str, html: Option<&Path>) -> anyhow::Result<String> {
    let exe = std::env::current_exe()?;
    let abs = |p: &Path| -> PathBuf { std::path::absolute(p).unwrap_or_else(|_| p.to_owned()) };
    let mut words = vec![
        exe.to_string_lossy().into_owned(),
        "__replay-server".into(),
        abs(trace).to_string_lossy().into_owned(),
        "--view".into(),
        view.to_owned(),
    ];
    if let Some(html) = html {
        words.push("--html".into());
        words.push(abs(html).to_string_lossy().into_owned());
    }
    Ok(shell_words::join(words))
}

/// How the host's messages to the View in a replay compare with the recording's: how many of
/// the recorded ones came again (the same method, or the same answer to the same request, the
/// same params or result), and what differs. Ids and the host's own clock are not compared.
pub fn compare(recorded: &[Value], replayed: &[Value]) -> Value {
    let key = |m: &Value| {
        let mut m = m.clone();
        if let Some(o) = m.as_object_mut() {
            o.remove("id");
        }
        m
    };
    let mut left: Vec<Value> = replayed.iter().map(key).collect();
    let mut differences = Vec::new();
    let mut same = 0;
    for m in recorded {
        let k = key(m);
        match left.iter().position(|r| *r == k) {
            Some(i) => {
                left.remove(i);
                same += 1;
            }
            None => {
                let what = m["method"].as_str().map_or_else(|| "an answer".to_owned(), str::to_owned);
                let mut text = k.to_string();
                if text.len() > 200 {
                    let cut = (0..=200).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
                    text.truncate(cut);
                    text.push('…');
                }
                differences.push(format!("{what} as recorded did not come again: {text}"));
            }
        }
    }
    json!({"recorded": recorded.len(), "replayed": replayed.len(), "same": same, "differences": differences})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(lines: &[Value]) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        std::fs::write(file.path(), text.join("\n")).unwrap();
        file
    }

    fn recorded() -> tempfile::NamedTempFile {
        trace(&[
            json!({"view": "v1", "dir": "host->server", "msg": {"method": "tools/call", "params": {"name": "t", "arguments": {"a": 1}}}}),
            json!({"view": "v1", "dir": "host->server", "msg": {"method": "resources/read", "params": {"uri": "ui://x/v.html"}}}),
            json!({"view": "v1", "dir": "server->host", "msg": {"method": "tools/call", "result": {"content": [{"type": "text", "text": "first"}]}}}),
            json!({"view": "v1", "dir": "host->proxy", "msg": {"method": "ui/notifications/sandbox-resource-ready", "params": {"html": "<p>v</p>", "csp": {"connectDomains": ["https://a.example"]}}}}),
            json!({"view": "v1", "dir": "host->view", "msg": {"method": "ui/notifications/tool-result", "params": {"content": []}}}),
            json!({"view": "v1", "dir": "host->server", "msg": {"method": "tools/call", "params": {"name": "u", "arguments": {}}}}),
            json!({"view": "v1", "dir": "server->host", "msg": {"method": "tools/call", "error": {"code": -32000, "message": "nope"}}}),
            json!({"view": "v2", "dir": "host->server", "msg": {"method": "tools/call", "params": {"name": "other", "arguments": {}}}}),
        ])
    }

    #[test]
    fn a_recording_answers_what_the_server_answered() {
        let file = recorded();
        let r = Recording::read(file.path(), None).unwrap();
        assert_eq!((r.view.as_str(), r.tool.as_str(), &r.arguments), ("v1", "t", &json!({"a": 1})));
        let replay = Replay { html: r.html.clone(), used: Mutex::new(vec![false; r.calls.len()]), recording: r };
        let tools = replay.answer("tools/list", &json!({})).unwrap();
        let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["t", "u"], "another View's tools are not this recording's");
        assert_eq!(tools["tools"][0]["_meta"]["ui"]["resourceUri"], "ui://x/v.html");
        let read = replay.answer("resources/read", &json!({"uri": "ui://x/v.html"})).unwrap();
        assert_eq!(read["contents"][0]["text"], "<p>v</p>");
        assert_eq!(read["contents"][0]["_meta"]["ui"]["csp"]["connectDomains"][0], "https://a.example");
        let first = replay.answer("tools/call", &json!({"name": "t", "arguments": {"a": 1}})).unwrap();
        assert_eq!(first["content"][0]["text"], "first");
        let again = replay.answer("tools/call", &json!({"name": "t", "arguments": {"a": 1}})).unwrap_err();
        assert!(again.1.contains("no answer to t"), "each recorded answer is given once: {again:?}");
        let error = replay.answer("tools/call", &json!({"name": "u", "arguments": {}})).unwrap_err();
        assert_eq!(error, (-32000, "nope".to_owned()), "a recorded error comes again");
    }

    #[test]
    fn a_trace_without_a_view_is_refused_with_how_to_record_one() {
        let file = trace(&[json!({"view": null, "dir": "host->model", "msg": {}})]);
        let e = Recording::read(file.path(), None).unwrap_err();
        assert!(e.contains("run --trace"), "{e}");
        assert!(Recording::read(Path::new("/nonexistent/trace.jsonl"), None).unwrap_err().contains("cannot read"));
    }

    #[test]
    fn the_comparison_names_what_did_not_come_again() {
        let recorded = [
            json!({"method": "ui/notifications/tool-input", "params": {"arguments": {}}}),
            json!({"id": 1, "result": {"x": 1}}),
        ];
        let same = compare(
            &recorded,
            &[
                json!({"id": 7, "result": {"x": 1}}),
                json!({"method": "ui/notifications/tool-input", "params": {"arguments": {}}}),
            ],
        );
        assert_eq!((same["same"].as_u64(), same["differences"].as_array().map(Vec::len)), (Some(2), Some(0)));
        let other =
            compare(&recorded, &[json!({"method": "ui/notifications/tool-input", "params": {"arguments": {"b": 2}}})]);
        assert_eq!(other["same"], 0);
        assert!(other["differences"][0].as_str().unwrap().starts_with("ui/notifications/tool-input as recorded"));
    }
}
