//! A conformance runner's side of `run --test-interface`: JSON-RPC lines to the host's stdin,
//! answers from its stdout, one at a time.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A host under a runner.
pub struct Runner {
    pub child: std::process::Child,
    pub input: std::process::ChildStdin,
    pub output: BufReader<std::process::ChildStdout>,
    pub next: u64,
}

impl Runner {
    /// Starts the host on `servers` (each `--stdio`) with `extra` arguments, under a runner, with
    /// the scripted model stand-in and its data in `data`; returns once `tool` is offered.
    pub fn start(servers: &[&str], extra: &[&str], tool: &str, data: &std::path::Path) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"));
        command.arg("run");
        for server in servers {
            command.args(["--stdio", server]);
        }
        let mut child = command
            .args(["--test-interface", "--open-with", "true", "--model", "scripted"])
            .args(extra)
            .env("XDG_DATA_HOME", data)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (input, output) = (child.stdin.take().unwrap(), BufReader::new(child.stdout.take().unwrap()));
        let mut runner = Runner { child, input, output, next: 0 };
        runner.until("the server's tool", |r| {
            let tools = r.call("readModelToolList", json!({}));
            tools["result"]["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["name"] == tool)).then_some(tools)
        });
        runner
    }

    /// One request, and its answer: the next line, which must answer this request's id.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let request = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        writeln!(self.input, "{request}").unwrap();
        self.input.flush().unwrap();
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        let answer: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{method}: not JSON ({e}): {line:?}"));
        assert_eq!(answer["id"], self.next, "{answer}");
        answer
    }

    /// Asks until `f` has an answer (30 s at most).
    pub fn until(&mut self, what: &str, mut f: impl FnMut(&mut Self) -> Option<Value>) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(v) = f(self) {
                return v;
            }
            assert!(Instant::now() < deadline, "{what} never came");
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    /// Closes the host's input; the host must end, and well.
    pub fn end(mut self) {
        drop(self.input);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the host ends with its runner: {status:?}");
    }
}
