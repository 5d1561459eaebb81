//! Helpers for the server tests: fixture servers in child processes that are always killed.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_apps_host::server::ServerSpec;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn node_modules_hint() -> String {
    format!("run scripts/setup (npm ci in {})", fixtures().display())
}

/// A fixture script path, checked to exist.
pub fn fixture(script: &str) -> PathBuf {
    let path = fixtures().join(script);
    assert!(path.exists(), "{} is missing; {}", path.display(), node_modules_hint());
    path
}

/// A stdio spec for `node <fixture script> <args>`.
pub fn node_stdio(script: &str, args: &[&str]) -> ServerSpec {
    let mut line = format!("node '{}'", fixture(script).display());
    for arg in args {
        line.push_str(&format!(" '{arg}'"));
    }
    ServerSpec::from_command_line(&line).expect("a valid command line")
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0").local_addr().expect("local addr").port()
}

/// A server in a child process: killed (and reaped) when dropped, so no test leaves one behind.
pub struct Server {
    child: Child,
    /// The port it listens on.
    pub port: u16,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts `node <fixture> <args>` (a fault-server-*.mjs HTTP fixture) and waits for its
    /// "LISTENING <port>" line.
    pub fn fixture(script: &str, args: &[&str]) -> Self {
        let mut cmd = Command::new("node");
        cmd.arg(fixture(script)).args(args);
        let (child, lines, port_rx) = spawn_logged(cmd);
        let port = port_rx.recv_timeout(Duration::from_secs(15)).unwrap_or_else(|_| {
            panic!("{script} {args:?} printed no LISTENING line; output: {:?}", lines.lock().unwrap())
        });
        Self { child, port, lines }
    }

    /// Starts an npm server with `PORT=<free port>` and waits until the port accepts connections.
    pub fn npm(script: &str, args: &[&str]) -> Self {
        let port = free_port();
        let mut cmd = Command::new("node");
        cmd.arg(fixture(script)).args(args).env("PORT", port.to_string());
        let (child, lines, _) = spawn_logged(cmd);
        let mut server = Self { child, port, lines };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("{script} exited ({status}) before listening; output: {:?}", server.output());
            }
            assert!(Instant::now() < deadline, "{script} did not listen on {port}: {:?}", server.output());
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Everything the server printed so far (stdout and stderr, in arrival order per stream).
    pub fn output(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// The printed lines that start with `prefix`.
    pub fn lines_starting(&self, prefix: &str) -> Vec<String> {
        self.output().into_iter().filter(|l| l.starts_with(prefix)).collect()
    }

    /// Waits (bounded) until a printed line contains `needle`.
    pub async fn wait_for_line(&self, needle: &str, limit: Duration) -> Option<String> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(line) = self.output().into_iter().find(|l| l.contains(needle)) {
                return Some(line);
            }
            if Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The lines starting with `prefix`, once there are at least `count` of them (or after
    /// `limit`): the output is read by another thread, so it may lag behind what a test just saw.
    pub async fn wait_for_lines(&self, prefix: &str, count: usize, limit: Duration) -> Vec<String> {
        let deadline = Instant::now() + limit;
        loop {
            let lines = self.lines_starting(prefix);
            if lines.len() >= count || Instant::now() > deadline {
                return lines;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Whether the process has exited.
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type Spawned = (Child, Arc<Mutex<Vec<String>>>, std::sync::mpsc::Receiver<u16>);

fn spawn_logged(mut cmd: Command) -> Spawned {
    cmd.current_dir(fixtures()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}; is node installed?"));
    let lines = Arc::new(Mutex::new(Vec::new()));
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    for (stream, port_tx) in [
        (Box::new(stdout) as Box<dyn std::io::Read + Send>, Some(port_tx)),
        (Box::new(stderr) as Box<dyn std::io::Read + Send>, None),
    ] {
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if let (Some(tx), Some(port)) = (&port_tx, line.strip_prefix("LISTENING ")) {
                    if let Ok(port) = port.trim().parse() {
                        let _ = tx.send(port);
                    }
                }
                lines.lock().unwrap().push(line);
            }
        });
    }
    (child, lines, port_rx)
}

/// Whether a process with this id still exists (a zombie counts as gone).
pub fn process_exists(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // Field 3, after the parenthesised command name, is the state; Z = zombie, X = dead.
            let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X"))
        }
        Err(_) => false,
    }
}

/// The text of the first content block of a `CallToolResult`.
pub fn first_text(result: &serde_json::Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content in {result}")).to_owned()
}

/// The text of the first entry of a `ReadResourceResult`.
pub fn first_resource_text(result: &serde_json::Value) -> String {
    let content = &result["contents"][0];
    content["text"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| content["blob"].as_str().map(|b| format!("<blob {} chars>", b.len())))
        .unwrap_or_else(|| panic!("no contents in {result}"))
}
