//! The local model server (`fixtures/model-server.mjs`) for the conversation's end-to-end tests,
//! and readers of the requests it logged in either wire format.

#![allow(dead_code)]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use super::common::{fixtures, run_host_env, run_host_until_env, Run};

/// How long one run may take.
const LIMIT: std::time::Duration = std::time::Duration::from_secs(90);

pub const KEY: &str = "sk-fixture-secret-4242";

/// The model server fixture, stopped when dropped.
pub struct ModelServer {
    child: Child,
    pub port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
    _script: Option<tempfile::TempDir>,
}

impl ModelServer {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// A server that answers by the rules of `script` first (see the fixture's docs).
    pub fn scripted(script: &Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script.json");
        std::fs::write(&path, script.to_string()).unwrap();
        let mut server = Self::start_with(&["--script".as_ref(), path.as_os_str()]);
        server._script = Some(dir);
        server
    }

    fn start_with(extra: &[&std::ffi::OsStr]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("requests.jsonl");
        let mut child = Command::new("node")
            .arg(fixtures().join("model-server.mjs"))
            .arg("--log")
            .arg(&log)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.path().join("stderr.txt")).unwrap())
            .spawn()
            .expect("node runs");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().strip_prefix("MODEL-SERVER PORT ").and_then(|p| p.parse().ok()).expect("a port");
        Self { child, port, log, _dir: dir, _script: None }
    }

    /// A data directory of the test's own (conversations, View storage): never the user's.
    pub fn data_home(&self) -> String {
        self._dir.path().join("data").to_string_lossy().into_owned()
    }

    /// What it said on stderr.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("stderr.txt")).unwrap_or_default()
    }

    /// The request bodies it received.
    pub fn requests(&self) -> Vec<Value> {
        read_lines(&self.log)
    }

    pub fn model_args(&self, provider: &str) -> Vec<String> {
        let url = match provider {
            "anthropic" => format!("http://127.0.0.1:{}", self.port),
            _ => format!("http://127.0.0.1:{}/v1", self.port),
        };
        vec!["--model".into(), format!("{provider}:fixture-model"), "--model-url".into(), url]
    }
}

impl ModelServer {
    /// `mcp-apps-host run` with `servers` (stdio command lines) and `flags` against this model
    /// in `provider`'s wire format, with a data directory of the test's own, until it exits.
    pub fn run(&self, provider: &str, servers: &[String], flags: &[&str]) -> Run {
        let args = self.run_args(provider, servers, flags);
        let data_home = self.data_home();
        run_host_env(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[("XDG_DATA_HOME", &data_home)], LIMIT)
    }

    /// [`Self::run`] until `done(trace)` holds (the interactive app has no exit of its own).
    pub fn run_until(
        &self,
        provider: &str,
        servers: &[String],
        flags: &[&str],
        done: impl Fn(&[Value]) -> bool,
    ) -> Run {
        let args = self.run_args(provider, servers, flags);
        let data_home = self.data_home();
        run_host_until_env(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            &[("XDG_DATA_HOME", &data_home)],
            done,
            LIMIT,
        )
    }

    fn run_args(&self, provider: &str, servers: &[String], flags: &[&str]) -> Vec<String> {
        let mut args = vec!["run".to_owned()];
        for server in servers {
            args.extend(["--stdio".to_owned(), server.clone()]);
        }
        args.extend(self.model_args(provider));
        args.extend(flags.iter().map(|f| (*f).to_owned()));
        args
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// The text of a request's messages, whatever the wire format (OpenAI strings, Anthropic blocks).
pub fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().unwrap_or_default().to_owned(),
                Some("tool_result") => message_text(b),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// The system prompt of a request in either format.
pub fn system_text(body: &Value, provider: &str) -> String {
    match provider {
        "anthropic" => body["system"].as_str().unwrap_or_default().to_owned(),
        _ => body["messages"][0]["content"].as_str().unwrap_or_default().to_owned(),
    }
}

pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["name"].as_str().or(t["function"]["name"].as_str()).unwrap_or_default().to_owned())
        .collect()
}
