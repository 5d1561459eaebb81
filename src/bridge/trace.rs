//! The JSON Lines trace: one object per message crossing a boundary.
//!
//! `{"t_ms": <ms since start>, "view": "<id>" | null, "dir": "<direction>", "msg": <message>}`.
//! Tests, `check`, benchmarks and bug reports all read this one format.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

/// Which boundary a message crossed, and which way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Direction {
    /// From a View (through its proxy) to the host.
    ViewToHost,
    /// From the host to a View.
    HostToView,
    /// From a sandbox proxy to the host (`ui/notifications/sandbox-*`).
    ProxyToHost,
    /// From the host to a sandbox proxy.
    HostToProxy,
    /// From the host to an MCP server.
    HostToServer,
    /// From an MCP server to the host.
    ServerToHost,
    /// Something the host dropped, with the reason (`msg` is `{"reason", "data"}`).
    Rejected,
    /// A diagnostic about a View (`msg` is `{"kind": "csp" | "error" | "console", "detail"}`).
    Diagnostic,
    /// A request of the conversation to its model (what was sent, in short: never a key).
    HostToModel,
    /// The model's answer (its text and tool calls, once complete).
    ModelToHost,
    /// A figure the host measured (`msg` is `{"kind", "detail"}`; `kind` `memory`: the web
    /// content's resident memory once a run settled).
    Figure,
    /// A step of an interaction session and its outcome (`msg` is `{"step", "of", "session",
    /// "action", "ok", "ms", "detail"}`; `ok` is null for a step not run).
    Session,
}

impl Direction {
    /// The `dir` string in the trace.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ViewToHost => "view->host",
            Self::HostToView => "host->view",
            Self::ProxyToHost => "proxy->host",
            Self::HostToProxy => "host->proxy",
            Self::HostToServer => "host->server",
            Self::ServerToHost => "server->host",
            Self::Rejected => "rejected",
            Self::Diagnostic => "diagnostic",
            Self::HostToModel => "host->model",
            Self::ModelToHost => "model->host",
            Self::Figure => "figure",
            Self::Session => "session",
        }
    }
}

/// A shared trace writer. Cloning is cheap; every clone writes to the same file.
#[derive(Clone)]
pub struct Trace {
    start: Instant,
    out: Arc<Mutex<Option<BufWriter<File>>>>,
    tap: Option<tokio::sync::mpsc::UnboundedSender<Value>>,
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trace").finish_non_exhaustive()
    }
}

impl Trace {
    /// Creates (truncates) the trace file. `start` is time zero of `t_ms`.
    pub fn create(path: &Path, start: Instant) -> std::io::Result<Self> {
        let file = File::create(path)?;
        Ok(Self { start, out: Arc::new(Mutex::new(Some(BufWriter::new(file)))), tap: None })
    }

    /// A trace that records nothing.
    pub fn disabled() -> Self {
        Self { start: Instant::now(), out: Arc::new(Mutex::new(None)), tap: None }
    }

    /// Also hands every record to `tap` (a developer panel's live log).
    pub fn with_tap(mut self, tap: tokio::sync::mpsc::UnboundedSender<Value>) -> Self {
        self.tap = Some(tap);
        self
    }

    /// Appends one record. Each line is flushed, so a crash loses nothing before it.
    pub fn record(&self, view: Option<&str>, dir: Direction, msg: &Value) {
        if !self.is_recording() {
            return;
        }
        let t_ms = self.start.elapsed().as_secs_f64() * 1000.0;
        // Written as it is serialized: the message is not copied into a record first.
        let line = Line { t_ms: (t_ms * 1000.0).round() / 1000.0, view, dir: dir.as_str(), msg };
        if let Some(tap) = &self.tap {
            let _ = tap.send(serde_json::to_value(&line).unwrap_or_default());
        }
        let mut guard = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let Some(out) = guard.as_mut() else { return };
        // A full disk must not take the host down: the trace is evidence, not state.
        let written = serde_json::to_writer(&mut *out, &line).map_err(std::io::Error::from);
        if written.and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush()).is_err() {
            tracing::warn!("trace: write failed; tracing stopped");
            *guard = None;
        }
    }

    /// A request the host sends a server (`host->server`), for `view` if it is on a View's
    /// behalf: the one shape every server call is traced in.
    pub fn server_request(&self, view: Option<&str>, method: &str, params: &Value) {
        self.record(view, Direction::HostToServer, &json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The server's answer to [`Trace::server_request`] (`server->host`): its result, or the
    /// error as JSON-RPC.
    pub fn server_answer(&self, view: Option<&str>, method: &str, outcome: Result<&Value, &crate::protocol::RpcError>) {
        let msg = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "method": method, "result": result}),
            Err(e) => json!({"jsonrpc": "2.0", "method": method, "error": e.to_value()}),
        };
        self.record(view, Direction::ServerToHost, &msg);
    }

    /// One request of the host's own to a server, traced both ways: the request, then the answer
    /// (its result as `shown` makes it, for a result too big to log whole, or its error). A
    /// View's own requests are traced by its session, which forwards them.
    pub async fn server_call(
        &self,
        view: Option<&str>,
        method: &str,
        params: &Value,
        call: impl std::future::Future<Output = Result<Value, crate::protocol::RpcError>>,
        shown: impl FnOnce(&Value) -> Value,
    ) -> Result<Value, crate::protocol::RpcError> {
        self.server_request(view, method, params);
        let outcome = call.await;
        match &outcome {
            Ok(result) => self.server_answer(view, method, Ok(&shown(result))),
            Err(e) => self.server_answer(view, method, Err(e)),
        }
        outcome
    }

    /// True when records are written somewhere.
    pub fn is_enabled(&self) -> bool {
        self.out.lock().map(|g| g.is_some()).unwrap_or(false)
    }

    /// True when a record would go anywhere (the file or the tap): callers skip building one
    /// otherwise.
    pub(crate) fn is_recording(&self) -> bool {
        self.tap.is_some() || self.is_enabled()
    }
}

/// One line of the trace file.
#[derive(serde::Serialize)]
struct Line<'a> {
    t_ms: f64,
    view: Option<&'a str>,
    dir: &'a str,
    msg: &'a Value,
}
