//! The app against a fake window: no display, no webview. The window here is a channel of
//! [`UserEvent`]s read by the test and a channel of [`HostInput`] it writes; a View is the test
//! speaking JSON-RPC into the session the app mounted (as the proxy page and the App would), and
//! the server is the built-in demo server, in process. What is asserted is what the person and
//! the View would see: shell commands, posts to the View, the exit code.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::proxies::ProxyPages;
use super::shell::{ShellCommand, ShellMessage};
use super::window::{FrameOp, HostInput, Ui, UserEvent};
use super::{Controller, ExitAfter, RunOptions};
use crate::bridge::ViewHandle;
use crate::protocol::{methods, Theme};
use crate::server::ServerSpec;

/// Long enough for anything the app does here; a test that waits this long has failed.
const LIMIT: Duration = Duration::from_secs(10);

/// The fake window: what the app asked of it, and its line back.
struct Window {
    events: mpsc::UnboundedReceiver<UserEvent>,
    input: mpsc::UnboundedSender<HostInput>,
    /// Shell commands seen so far, in order.
    shell: Vec<ShellCommand>,
    /// Views mounted so far: their sessions (the View's IPC line).
    mounted: Vec<ViewHandle>,
    /// Sandbox labels whose web process the app asked for ahead of a View, with how many
    /// Views were mounted when it asked.
    prepared: Vec<(String, usize)>,
    /// Messages posted to each View, parsed, in order.
    posts: Vec<(String, Value)>,
    exit: Option<i32>,
    /// What the window's scheme handler serves (each View's document).
    proxies: ProxyPages,
}

impl Window {
    /// Starts the app with `options` on the demo server; the shell is ready and alive.
    fn open(options: RunOptions) -> Self {
        Self::open_with(options, |_, _| {})
    }

    /// Like [`Self::open`]; `at_once` sees every event the moment the app sends it and may
    /// answer on the window's line before the app goes on (as a signal from the UI thread
    /// can come between any two steps of the app).
    fn open_with(
        mut options: RunOptions,
        at_once: impl Fn(&UserEvent, &mpsc::UnboundedSender<HostInput>) + Send + Sync + 'static,
    ) -> Self {
        options.automation.settle = Duration::ZERO;
        let (tx, events) = mpsc::unbounded_channel();
        let (input, from_ui) = mpsc::unbounded_channel();
        let line = input.clone();
        let ui = Ui::new(move |event| {
            at_once(&event, &line);
            tx.send(event).is_ok()
        });
        let proxies = ProxyPages::default();
        let (app, receivers) = Controller::new(options, ui, proxies.clone(), Theme::Light, Instant::now());
        tokio::spawn(app.run(from_ui, receivers));
        let _ = input.send(HostInput::Shell(ShellMessage::Ready));
        // The shell's heartbeat, as the page sends it (without it the app judges the shell hung).
        let alive = input.clone();
        tokio::spawn(async move {
            while alive.send(HostInput::Shell(ShellMessage::Alive)).is_ok() {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        Self {
            events,
            input,
            shell: Vec::new(),
            mounted: Vec::new(),
            prepared: Vec::new(),
            posts: Vec::new(),
            exit: None,
            proxies,
        }
    }

    fn demo(tool: &str, arguments: Value) -> RunOptions {
        let mut options = RunOptions::new(ServerSpec::builtin("demo"), tool);
        options.opens = vec![(tool.to_owned(), arguments.as_object().cloned().unwrap_or_default())];
        options.timeout = LIMIT;
        options
    }

    /// Reads events until `found` picks one (or the limit passes: a failure naming `what`).
    async fn until<T>(&mut self, what: &str, mut found: impl FnMut(&mut Self, &UserEvent) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let event = match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(event)) => event,
                Ok(None) => panic!("the app ended while waiting for {what}; shell: {:?}", self.shell),
                Err(_) => panic!("no {what} within {LIMIT:?}; shell: {:?}; posts: {:?}", self.shell, self.posts),
            };
            match &event {
                UserEvent::Shell(text) => {
                    let command: ShellCommand = serde_json::from_str(text).expect("a shell command");
                    self.shell.push(command);
                }
                UserEvent::Frame(FrameOp::Mount(mount)) => self.mounted.push(mount.session.clone()),
                UserEvent::Frame(FrameOp::Prepare { label }) => self.prepared.push((label.clone(), self.mounted.len())),
                UserEvent::Frame(FrameOp::Post { view, msg }) => {
                    self.posts.push((view.clone(), serde_json::from_str(msg).expect("a JSON post")));
                }
                UserEvent::Exit(code) => self.exit = Some(*code),
                _ => {}
            }
            if let Some(value) = found(self, &event) {
                return value;
            }
        }
    }

    /// The next View the app mounts.
    async fn mounted_view(&mut self) -> ViewHandle {
        let seen = self.mounted.len();
        self.until("a mounted View", |w, _| w.mounted.get(seen).cloned()).await
    }

    /// The next message posted to `view` that `pick` accepts.
    async fn post_to(&mut self, view: &str, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
        let seen = self.posts.len();
        self.until(what, |w, _| w.posts[seen..].iter().find(|(v, m)| v == view && pick(m)).map(|(_, m)| m.clone()))
            .await
    }

    async fn method_to(&mut self, view: &str, method: &str) -> Value {
        self.post_to(view, method, |m| m["method"] == method).await
    }

    async fn answer_to(&mut self, view: &str, id: i64) -> Value {
        self.post_to(view, &format!("the answer to request {id}"), |m| m["id"] == json!(id)).await
    }

    /// The exit code the app reached.
    async fn exit_code(&mut self) -> i32 {
        if let Some(code) = self.exit {
            return code;
        }
        self.until("the exit", |w, _| w.exit).await
    }

    /// The first shell command (seen so far or still to come) that `pick` accepts.
    async fn shell_command<T>(&mut self, what: &str, pick: impl Fn(&ShellCommand) -> Option<T>) -> T {
        if let Some(found) = self.shell.iter().find_map(&pick) {
            return found;
        }
        self.until(what, |w, _| w.shell.iter().find_map(&pick)).await
    }

    fn person(&self, message: ShellMessage) {
        let _ = self.input.send(HostInput::Shell(message));
    }
}

/// What a View says, as its proxy page would pass it on.
fn say(view: &ViewHandle, message: Value) {
    view.from_view(message.to_string());
}

/// The proxy's ready, the App's `ui/initialize` and `initialized`: returns the initialize result.
async fn initialize(window: &mut Window, view: &ViewHandle) -> Value {
    let id = view.id().to_owned();
    say(view, json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY, "params": {}}));
    let ready = window.method_to(&id, methods::SANDBOX_RESOURCE_READY).await;
    // The frame loads the View's document by URL, from what the window serves.
    let src = ready["params"]["src"].as_str().unwrap_or_default();
    let token = src.split_once(&format!("/view.html?view={id}&t=")).map(|(_, t)| t).unwrap_or_default();
    assert_eq!(token.len(), 32, "the View's document URL, with its token: {ready}");
    assert_eq!(ready["params"]["html"], "", "the HTML is not sent as well: {ready}");
    let html = window.proxies.take_document(&id, token).unwrap_or_default();
    assert!(html.contains('<'), "the View's HTML, served once: {html:?}");
    say(
        view,
        json!({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {
            "appInfo": {"name": "fake", "version": "1"}, "appCapabilities": {}, "protocolVersion": "2026-01-26"}}),
    );
    let result = window.answer_to(&id, 1).await;
    say(view, json!({"jsonrpc": "2.0", "method": methods::INITIALIZED}));
    result
}

#[tokio::test]
async fn a_tool_opens_end_to_end_and_the_run_ends_at_its_result() {
    let mut options = Window::demo("weather", json!({"city": "Lisbon"}));
    options.automation.exit_after = Some(ExitAfter::Result);
    let mut window = Window::open(options);
    let view = window.mounted_view().await;
    // The card comes first, with the View's own sandbox origin.
    let origin = window
        .shell_command("the View's card", |c| match c {
            ShellCommand::Mount { view: v, origin, .. } if v == view.id() => Some(origin.clone()),
            _ => None,
        })
        .await;
    assert!(origin.starts_with("mcp-sandbox://"), "{origin}");
    let init = initialize(&mut window, &view).await;
    assert_eq!(init["result"]["hostContext"]["theme"], "light", "{init}");
    assert_eq!(init["result"]["hostContext"]["displayMode"], "inline", "{init}");
    let input = window.method_to(view.id(), methods::TOOL_INPUT).await;
    assert_eq!(input["params"]["arguments"], json!({"city": "Lisbon"}));
    let result = window.method_to(view.id(), methods::TOOL_RESULT).await;
    assert!(result["params"]["structuredContent"]["city"].as_str().is_some(), "{result}");
    // Nothing but the handshake reached the View before it initialized.
    let before: Vec<&Value> =
        window.posts.iter().take_while(|(_, m)| m["method"] != methods::TOOL_INPUT).map(|(_, m)| m).collect();
    assert!(before.iter().all(|m| m["method"] == methods::SANDBOX_RESOURCE_READY || m["id"] == json!(1)), "{before:?}");
    assert_eq!(window.exit_code().await, 0);
}

#[tokio::test]
async fn the_server_of_a_tool_named_at_start_gets_its_web_process_before_it_answered() {
    let mut window = Window::open(Window::demo("counter", json!({})));
    let label = window
        .until("the View's frame", |_, e| match e {
            UserEvent::Frame(FrameOp::Mount(m)) => Some(m.label.clone()),
            _ => None,
        })
        .await;
    assert_eq!(window.prepared, vec![(label, 0)], "asked for once, for the View's own label, before its mount");
}

/// The window makes a server's next proxy page once its View initialized (its load and
/// handshake are work for the same web process): it is told which View, and when.
#[tokio::test]
async fn the_window_is_told_when_a_view_initialized() {
    let mut window = Window::open(Window::demo("counter", json!({})));
    let view = window.mounted_view().await;
    initialize(&mut window, &view).await;
    let told = window
        .until("the window told the View initialized", |_, e| match e {
            UserEvent::Frame(FrameOp::Initialized { view }) => Some(view.clone()),
            _ => None,
        })
        .await;
    assert_eq!(told, view.id());
}

#[tokio::test]
async fn a_bare_tool_name_among_many_servers_starts_no_web_process_ahead() {
    // Three servers (two cannot start): the tool may open on any of them, so none is prepared.
    let missing = |name: &str| ServerSpec::Stdio {
        name: name.into(),
        program: format!("/nonexistent/{name}"),
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
    };
    let mut options = RunOptions::app_with(vec![ServerSpec::builtin("demo"), missing("a"), missing("b")]);
    options.opens = vec![("counter".into(), serde_json::Map::new())];
    options.timeout = LIMIT;
    let mut window = Window::open(options);
    window.mounted_view().await;
    assert!(window.prepared.is_empty(), "{:?}", window.prepared);
}

#[tokio::test]
async fn the_run_ends_at_initialized_when_that_is_its_goal() {
    let mut options = Window::demo("counter", json!({}));
    options.automation.exit_after = Some(ExitAfter::Initialized);
    let mut window = Window::open(options);
    let view = window.mounted_view().await;
    initialize(&mut window, &view).await;
    assert_eq!(window.exit_code().await, 0);
}

#[tokio::test]
async fn a_view_that_never_initializes_fails_the_run_with_the_reason() {
    let mut options = Window::demo("weather", json!({"city": "Lisbon"}));
    options.automation.exit_after = Some(ExitAfter::Result);
    options.timeout = Duration::from_secs(2);
    let mut window = Window::open(options);
    let view = window.mounted_view().await;
    // The proxy loads, the App never speaks.
    say(&view, json!({"jsonrpc": "2.0", "method": methods::SANDBOX_PROXY_READY, "params": {}}));
    let started = Instant::now();
    assert_eq!(window.exit_code().await, 1);
    assert!(started.elapsed() < LIMIT);
    let said = window.shell.iter().any(|c| {
        matches!(c, ShellCommand::Status { text, error: true } if text.contains("did not send ui/notifications/initialized"))
    });
    assert!(said, "the person is told why: {:?}", window.shell);
    assert!(
        !window.posts.iter().any(|(_, m)| m["method"] == methods::TOOL_INPUT),
        "no input for a View that did not initialize"
    );
}

/// An App asks to open a link: the person sees the dialog and answers.
async fn link_asked(accept: bool) -> (Window, Value) {
    let marker = tempfile::NamedTempFile::new().unwrap();
    let path = marker.path().to_owned();
    drop(marker);
    let mut options = Window::demo("weather", json!({"city": "Lisbon"}));
    // The "browser" leaves a file with the URL it was given.
    options.opener = Some(format!("sh -c 'echo \"$0\" > {}'", path.display()));
    let mut window = Window::open(options);
    let view = window.mounted_view().await;
    initialize(&mut window, &view).await;
    say(
        &view,
        json!({"jsonrpc": "2.0", "id": 7, "method": "ui/open-link", "params": {"url": "https://example.org/page"}}),
    );
    let (dialog, subject) = window
        .shell_command("the consent dialog", |c| match c {
            ShellCommand::Confirm { dialog, subject, .. } => Some((*dialog, subject.clone())),
            _ => None,
        })
        .await;
    assert_eq!(subject, vec!["example.org".to_owned()], "the site comes first, as the host wrote it");
    window.person(ShellMessage::Answer { dialog, accepted: accept, remember: false });
    let answer = window.answer_to(view.id(), 7).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    let opened = loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if !text.is_empty() || !accept || Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let _ = std::fs::remove_file(&path);
    (window, json!({"answer": answer, "opened": opened}))
}

#[tokio::test]
async fn a_link_opens_only_after_the_person_said_yes() {
    let (_window, yes) = link_asked(true).await;
    assert_eq!(yes["answer"]["result"], json!({}), "{yes}");
    assert_eq!(yes["opened"].as_str().unwrap().trim(), "https://example.org/page");

    let (_window, no) = link_asked(false).await;
    assert_eq!(no["answer"]["result"]["isError"], true, "the View is told it was refused: {no}");
    assert_eq!(no["opened"], "", "nothing was opened");
}

#[tokio::test]
async fn a_view_that_ignores_its_teardown_is_closed_after_the_timeout_and_the_app_exits() {
    let mut window = Window::open(Window::demo("counter", json!({})));
    let view = window.mounted_view().await;
    initialize(&mut window, &view).await;
    window.method_to(view.id(), methods::TOOL_RESULT).await;
    let _ = window.input.send(HostInput::CloseRequested);
    // The View is asked to tear down and never answers.
    window.method_to(view.id(), methods::RESOURCE_TEARDOWN).await;
    let asked = Instant::now();
    assert_eq!(window.exit_code().await, 0);
    let took = asked.elapsed();
    assert!(took >= Duration::from_millis(2500), "the View had its time to answer: {took:?}");
    assert!(took < Duration::from_secs(8), "bounded by the teardown timeout: {took:?}");
}

#[tokio::test]
async fn a_view_that_answers_its_teardown_lets_the_app_exit_at_once() {
    let mut window = Window::open(Window::demo("counter", json!({})));
    let view = window.mounted_view().await;
    initialize(&mut window, &view).await;
    let _ = window.input.send(HostInput::CloseRequested);
    let teardown = window.method_to(view.id(), methods::RESOURCE_TEARDOWN).await;
    let asked = Instant::now();
    say(&view, json!({"jsonrpc": "2.0", "id": teardown["id"], "result": {}}));
    assert_eq!(window.exit_code().await, 0);
    assert!(asked.elapsed() < Duration::from_secs(2), "{:?}", asked.elapsed());
}

#[tokio::test]
async fn a_tool_the_person_picks_without_a_ui_shows_its_result_as_text() {
    // The app with its picker: nothing opened at start.
    let mut options = RunOptions::app_with(vec![ServerSpec::builtin("demo")]);
    options.timeout = LIMIT;
    let mut window = Window::open(options);
    window
        .shell_command("the demo's tools in the picker", |c| match c {
            ShellCommand::Servers { servers, .. } if servers.iter().any(|s| s["status"] == "ready") => Some(()),
            _ => None,
        })
        .await;
    let arguments = json!({"name": "Ada"}).as_object().cloned().unwrap();
    window.person(ShellMessage::CallTool { server: None, tool: "greet".into(), arguments });
    let text = window
        .shell_command("the result card", |c| match c {
            ShellCommand::Text { title, text, error: false, .. } if title == "greet" => Some(text.clone()),
            _ => None,
        })
        .await;
    assert!(text.contains("Ada"), "{text}");
    assert!(window.mounted.is_empty(), "no View for a tool without a UI");
}

#[tokio::test]
async fn the_run_ends_once_a_view_that_asked_to_close_is_torn_down() {
    let mut options = Window::demo("counter", json!({}));
    options.automation.exit_after = Some(ExitAfter::Teardown);
    let mut window = Window::open(options);
    let view = window.mounted_view().await;
    initialize(&mut window, &view).await;
    window.method_to(view.id(), methods::TOOL_RESULT).await;
    say(&view, json!({"jsonrpc": "2.0", "method": methods::REQUEST_TEARDOWN, "params": {}}));
    let teardown = window.method_to(view.id(), methods::RESOURCE_TEARDOWN).await;
    say(&view, json!({"jsonrpc": "2.0", "id": teardown["id"], "result": {}}));
    // Its webview goes first, then the run ends (a wait that fails the test if it does not come).
    window
        .until("the View's webview destroyed", |_, e| {
            matches!(e, UserEvent::Frame(FrameOp::Unmount { .. })).then_some(())
        })
        .await;
    assert_eq!(window.exit_code().await, 0);
}

/// `tools/call`s the app sent to its servers, by tool name, from its trace file.
fn tool_calls(trace: &std::path::Path, tool: &str) -> usize {
    std::fs::read_to_string(trace)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| {
            r["dir"] == "host->server" && r["msg"]["method"] == "tools/call" && r["msg"]["params"]["name"] == tool
        })
        .count()
}

/// Every web process killed at once: the View's own process is reported gone first (it is
/// reopened with its last result), then the shell's, the moment the reopened View has its
/// webview. It comes back again with that result: the tool is called once.
#[tokio::test]
async fn a_view_reopened_twice_in_a_row_keeps_its_result_and_the_tool_is_called_once() {
    use super::window::{FrameSignal, WebContentOp, WebContentSignal};
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let mut options = Window::demo("weather", json!({"city": "Lisbon"}));
    options.trace = Some(trace.clone());
    let mounts = std::sync::atomic::AtomicUsize::new(0);
    let mut window = Window::open_with(options, move |event, line| {
        if matches!(event, UserEvent::Frame(FrameOp::Mount(_)))
            && mounts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 1
        {
            let _ = line.send(HostInput::WebContent(WebContentSignal::Terminated("the web content crashed".into())));
        }
    });
    let first = window.mounted_view().await;
    initialize(&mut window, &first).await;
    let result = window.method_to(first.id(), methods::TOOL_RESULT).await;
    let gone = FrameSignal::Gone { view: first.id().to_owned(), reason: "the web content crashed".into() };
    let _ = window.input.send(HostInput::Frame(gone));
    let second = window.mounted_view().await;
    window
        .until("the shell's restart", |_, e| matches!(e, UserEvent::WebContent(WebContentOp::Restart)).then_some(()))
        .await;
    window.person(ShellMessage::Ready);
    let third = window.mounted_view().await;
    assert_ne!(third.id(), second.id());
    initialize(&mut window, &third).await;
    let again = window.method_to(third.id(), methods::TOOL_RESULT).await;
    assert_eq!(again["params"], result["params"], "the last result again");
    assert_eq!(tool_calls(&trace, "weather"), 1, "the tool was called again");
}

/// A stdio server that behaves (`tests/fixtures/fault-server-stdio.mjs ok`), answering as `label`:
/// its stderr says each method it gets with its process id.
fn node_server(label: &str) -> (String, Vec<String>) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fault-server-stdio.mjs");
    ("node".to_owned(), vec![script.to_string_lossy().into_owned(), "ok".to_owned(), label.to_owned()])
}

/// The app on the config file `path`, as `run` with no server flags opens it.
fn on_config(path: &std::path::Path) -> Window {
    let load = crate::server::config::load_config(path, &Default::default()).map(|l| l.servers).unwrap_or_default();
    let mut options = RunOptions::app_with(load);
    options.launch.config = Some(path.to_owned());
    options.timeout = LIMIT;
    options.launch.demo_command = Some(node_server("demo"));
    Window::open(options)
}

/// The statuses of the last servers list.
fn statuses(window: &Window) -> Vec<(String, String)> {
    window
        .shell
        .iter()
        .rev()
        .find_map(|c| match c {
            ShellCommand::Servers { servers, .. } => Some(
                servers
                    .iter()
                    .map(|s| (s["name"].as_str().unwrap().to_owned(), s["status"].as_str().unwrap().to_owned())),
            ),
            _ => None,
        })
        .map(|s| s.collect())
        .unwrap_or_default()
}

impl Window {
    /// Waits until the last servers list is `want` (name and status each, in order).
    async fn servers_are(&mut self, want: &[(&str, &str)]) {
        let want: Vec<(String, String)> = want.iter().map(|(n, s)| (n.to_string(), s.to_string())).collect();
        let what = format!("the servers {want:?}");
        self.until(&what, |w, _| (statuses(w) == want).then_some(())).await;
    }

    /// The process id a server's log names (each method it gets is logged with it).
    async fn server_pid(&mut self, server: &str) -> String {
        self.person(ShellMessage::ServerLog { server: server.to_owned() });
        let seen = self.shell.len();
        let lines = self
            .until("the server's log", |w, _| {
                w.shell[seen..].iter().find_map(|c| match c {
                    ShellCommand::ServerLog { server: s, lines } if s == server => Some(lines.clone()),
                    _ => None,
                })
            })
            .await;
        let line =
            lines.iter().find(|l| l.starts_with("METHOD ")).unwrap_or_else(|| panic!("no METHOD line: {lines:?}"));
        line.rsplit(' ').next().unwrap().to_owned()
    }
}

#[tokio::test]
async fn with_no_server_the_app_welcomes_and_adds_the_demo_server_in_one_click() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config/mcp.json");
    let mut window = on_config(&path);
    let config = window
        .shell_command("the welcome", |c| match c {
            ShellCommand::Welcome { shown: true, config } => Some(config.clone()),
            _ => None,
        })
        .await;
    assert_eq!(config, path.display().to_string());
    assert!(!path.exists());

    window.person(ShellMessage::AddDemo);
    window.servers_are(&[("demo", "ready")]).await;
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let (command, args) = node_server("demo");
    assert_eq!(written, json!({"mcpServers": {"demo": {"command": command, "args": args}}}));
    window
        .shell_command("the welcome's end", |c| matches!(c, ShellCommand::Welcome { shown: false, .. }).then_some(()))
        .await;
    assert!(window.exit.is_none(), "the app did not exit");
}

#[tokio::test]
async fn the_servers_editor_writes_the_file_and_restarts_only_the_server_it_changed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let entry = |label: &str| {
        let (command, args) = node_server(label);
        json!({"command": command, "args": args})
    };
    let mut a = entry("a");
    a["autoApprove"] = json!(["work"]);
    std::fs::write(&path, json!({"theme": "dark", "mcpServers": {"a": a, "b": entry("b")}}).to_string()).unwrap();
    let mut window = on_config(&path);
    window.servers_are(&[("a", "ready"), ("b", "ready")]).await;
    let a_pid = window.server_pid("a").await;
    let read = || -> Value { serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap() };

    // Disable b: its entry says so, it stops, a runs on.
    window.person(ShellMessage::EnableServer { server: "b".into(), enabled: false });
    window.servers_are(&[("a", "ready")]).await;
    assert_eq!(read()["mcpServers"]["b"]["disabled"], true);
    let editor = window
        .shell
        .iter()
        .rev()
        .find_map(|c| match c {
            ShellCommand::Servers { editor: Some(e), .. } => Some(e.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(editor["entries"][1]["name"], "b");
    assert_eq!(editor["entries"][1]["disabled"], true, "a disabled server stays listed: {editor}");

    // Enable it again, then add c and remove it.
    window.person(ShellMessage::EnableServer { server: "b".into(), enabled: true });
    window.servers_are(&[("a", "ready"), ("b", "ready")]).await;
    assert!(read()["mcpServers"]["b"].get("disabled").is_none());
    let (command, args) = node_server("c");
    let line = shell_words::join(std::iter::once(command.clone()).chain(args.clone()));
    window.person(ShellMessage::AddServer { name: "c".into(), line });
    window.servers_are(&[("a", "ready"), ("b", "ready"), ("c", "ready")]).await;
    assert_eq!(read()["mcpServers"]["c"], json!({"command": command, "args": args}));
    window.person(ShellMessage::RemoveServer { server: "c".into() });
    window.servers_are(&[("a", "ready"), ("b", "ready")]).await;
    assert!(read()["mcpServers"].get("c").is_none());

    // The person's own keys stayed; a bad entry is refused and said so, the file unchanged.
    let before = std::fs::read_to_string(&path).unwrap();
    assert_eq!(read()["theme"], "dark");
    assert_eq!(read()["mcpServers"]["a"]["autoApprove"], json!(["work"]));
    window.person(ShellMessage::AddServer { name: "x".into(), line: "http://example.com/mcp".into() });
    window
        .shell_command("the refusal", |c| match c {
            ShellCommand::Servers { editor: Some(e), .. } if e["error"].is_string() => Some(()),
            _ => None,
        })
        .await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);

    // a was never restarted: the same process, and it never left "ready".
    assert_eq!(window.server_pid("a").await, a_pid);
    let a_statuses: Vec<String> = window
        .shell
        .iter()
        .filter_map(|c| match c {
            ShellCommand::Servers { servers, .. } => {
                servers.iter().find(|s| s["name"] == "a").map(|s| s["status"].as_str().unwrap().to_owned())
            }
            _ => None,
        })
        .skip_while(|s| s != "ready")
        .collect();
    assert!(a_statuses.iter().all(|s| s == "ready"), "{a_statuses:?}");
}

/// The native file chooser is the host's install dialog's only: with no install dialog open,
/// the page's request opens none and a chosen path goes into no field (a server's question,
/// whose form is the server's, never gets one).
#[tokio::test]
async fn a_file_chooser_opens_for_the_install_dialog_only() {
    let mut window = Window::open(Window::demo("weather", json!({"city": "Lisbon"})));
    let _view = window.mounted_view().await;
    window.person(ShellMessage::ChoosePath { field: "elicit-root".into(), directory: true });
    window.person(ShellMessage::PathChosen { field: "elicit-root".into(), path: "/etc".into() });
    // Handled in order: once the log is shown, the two above were too.
    window.person(ShellMessage::ServerLog { server: "demo".into() });
    let mut chooser = false;
    window
        .until("the server's log", |w, e| {
            chooser |= matches!(e, UserEvent::ChooseFile(_));
            w.shell.iter().any(|c| matches!(c, ShellCommand::ServerLog { .. })).then_some(())
        })
        .await;
    assert!(!chooser, "a chooser opened with no install dialog");
    assert!(!window.shell.iter().any(|c| matches!(c, ShellCommand::PathChosen { .. })));
}

/// A server the person removes takes its Views' kept storage with it; another server's stays.
#[tokio::test]
async fn a_removed_servers_kept_view_storage_goes_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let entry = |label: &str| {
        let (command, args) = node_server(label);
        json!({"command": command, "args": args})
    };
    std::fs::write(&path, json!({"mcpServers": {"a": entry("a"), "c": entry("c")}}).to_string()).unwrap();
    let load = crate::server::config::load_config(&path, &Default::default()).unwrap().servers;
    let kept = crate::sandbox::storage::KeptStorage::at(dir.path().join("view-storage"));
    let items = crate::sandbox::storage::Items::from([("draft".to_owned(), "kept".to_owned())]);
    let file = |name: &str| {
        let spec = load.iter().find(|s| s.name() == name).unwrap();
        let label = crate::sandbox::sandbox_label(&spec.identity());
        kept.save(&label, &items).unwrap();
        dir.path().join("view-storage").join(format!("{label}.json"))
    };
    let (a, c) = (file("a"), file("c"));
    let label_of =
        |name: &str| crate::sandbox::sandbox_label(&load.iter().find(|s| s.name() == name).unwrap().identity());
    let c_label = label_of("c");
    let mut databases = crate::sandbox::storage::Databases::new();
    crate::sandbox::storage::merge_databases(&mut databases, r#"{"databases":[{"name":"d","version":1,"stores":[]}]}"#)
        .unwrap();
    kept.save_databases(&c_label, &databases).unwrap();
    let c_databases = kept.databases_path(&c_label).unwrap();
    let mut options = RunOptions::app_with(load.clone());
    options.launch.config = Some(path.clone());
    options.timeout = LIMIT;
    options.places.view_storage = Some(kept.clone());
    let mut window = Window::open(options);
    window.servers_are(&[("a", "ready"), ("c", "ready")]).await;
    window.person(ShellMessage::RemoveServer { server: "c".into() });
    // What the run holds of it goes too (WebKit keeps a View's storage in memory for the run).
    let mut forgotten = None;
    let want = vec![("a".to_owned(), "ready".to_owned())];
    window
        .until("the removed server's storage forgotten, and the server gone", |w, e| {
            if let UserEvent::Frame(FrameOp::Forget { label }) = e {
                forgotten = Some(label.clone());
            }
            (forgotten.is_some() && statuses(w) == want).then_some(())
        })
        .await;
    assert_eq!(forgotten, Some(c_label));
    assert!(!c.exists() && !c_databases.exists(), "the removed server's storage is gone");
    assert!(a.exists(), "the other server's storage stays");
}
