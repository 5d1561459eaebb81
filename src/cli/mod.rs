//! Command-line interface: `mcp-apps-host run | inspect | check`.

mod baseline;
mod check;
mod inspect;
mod install;
#[cfg(feature = "desktop")]
mod ipc_floor;
mod key;
mod probe_server;
mod replay;
mod server_args;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand, ValueEnum};
use serde_json::{Map, Value};

use crate::server::config::BUILTIN_SERVER_BIN;

/// A native host for MCP Apps: renders the interactive UIs of MCP servers in a sandboxed webview.
#[derive(Debug, Parser)]
#[command(name = "mcp-apps-host", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Connect to a server, call a tool and show its App UI in a window.
    Run(RunArgs),
    /// List a server's tools and UI resources and lint them (no window).
    Inspect(inspect::InspectArgs),
    /// Render every UI tool's View in a real host, headlessly, and report what works.
    Check(check::CheckArgs),
    /// Show the embedded demo server's Apps (no Node, no network). Takes run's options.
    Demo(RunArgs),
    /// run with a developer panel: live message log, host-context controls, a notification
    /// editor, the granted CSP and its violations, hot reload (`--html FILE` for a local View).
    Preview(RunArgs),
    /// Forget the stored sign-in of remote servers (their tokens are deleted).
    Logout(LogoutArgs),
    /// List the stored conversations (reopen one with `run --model ... --resume ID`, with any
    /// model), or rename or delete one.
    Conversations {
        #[command(subcommand)]
        action: Option<ConversationAction>,
    },
    /// Set when the model's calls to the servers the flags name ask first, kept across runs:
    /// `always` (before every call), `changes` (before a call the server does not mark
    /// read-only; the default) or `never` (never for the server's own data). Data that came
    /// from another server or App asks in every mode.
    Approve(ApproveArgs),
    /// Install a server into your config file from an .mcpb bundle, a registry server.json or an
    /// install link.
    #[command(long_about = INSTALL_HELP)]
    Install(install::InstallArgs),
    /// Keep the model's API key in the system keyring (`key set --provider openai|anthropic`,
    /// reading stdin), forget it, or say where secrets go (`key status`).
    Key {
        #[command(subcommand)]
        action: key::KeyAction,
    },
    /// What the desktop entry runs: the app; given an install link, an .mcpb bundle or a
    /// server.json, install it first (asking in the terminal).
    Open {
        /// An install link (mcp-apps-host://install?...), an .mcpb bundle or a server.json file.
        #[arg(value_name = "LINK|FILE")]
        target: Option<String>,
        /// The app's options, as `run` takes them.
        #[command(flatten)]
        run: Box<RunArgs>,
    },
    /// The built-in probe server of `check --self` (stdio MCP).
    #[command(name = "__probe-server", hide = true)]
    ProbeServer,
    /// The embedded demo server (stdio MCP), started by `demo`.
    #[command(name = "__demo-server", hide = true)]
    DemoServer,
    /// A recorded run's server, served again from its trace (stdio MCP), started by `check
    /// --replay`.
    #[command(name = "__replay-server", hide = true)]
    ReplayServer {
        trace: PathBuf,
        /// Serve this HTML file as the View instead of the recorded one.
        #[arg(long)]
        html: Option<PathBuf>,
        /// The recorded View (default: the first).
        #[arg(long)]
        view: Option<String>,
    },
    /// The bare page <-> Rust round trip of this WebKit (the benchmarks' floor).
    #[command(name = "__ipc-floor", hide = true)]
    IpcFloor {
        /// Round trips.
        #[arg(default_value_t = 1000)]
        n: usize,
    },
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    #[command(flatten)]
    server: server_args::ServerArgs,
    /// A tool whose UI to show (repeatable: several Views at once); `SERVER/TOOL` when several
    /// servers have a tool of that name. Without it the app opens with its tool picker.
    #[arg(long)]
    tool: Vec<String>,
    /// A directory servers may work in, offered in `roots/list` (repeatable; default: none).
    #[arg(long, value_name = "DIR")]
    root: Vec<PathBuf>,
    /// Arguments of the tool at the same position, as a JSON object (default `{}`).
    #[arg(long, value_name = "JSON")]
    args: Vec<String>,
    /// Write every message crossing a boundary to this JSON Lines file.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Exit 0 once every View reached this point (non-zero on failure or timeout).
    #[arg(long, value_enum, value_name = "POINT")]
    exit_after: Option<ExitAfterArg>,
    /// Seconds to wait for the View to initialize (and for --exit-after) before failing.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    timeout: f64,
    /// How consent prompts (links, messages, downloads) are answered.
    #[arg(long, value_enum, default_value = "ask")]
    consent: ConsentArg,
    /// Open links with this command (the URL is appended) instead of the system browser.
    #[arg(long, value_name = "COMMAND LINE")]
    open_with: Option<String>,
    /// Save downloads here instead of the user's download folder.
    #[arg(long, value_name = "DIR")]
    downloads: Option<PathBuf>,
    /// The Apps' web content may use this much memory (MB); above it the host stops it and the
    /// Apps restart (default: a quarter of the machine's memory, at most 4096).
    #[arg(long, value_name = "MB", value_parser = clap::value_parser!(u64).range(64..))]
    web_memory_limit: Option<u64>,
    /// How many Views stay live when more are open [default: 10]. The others, out of sight for
    /// 2 s, sleep to give their memory back (their card stays) and wake with their input and
    /// result when you scroll to them. 0: no View sleeps
    #[arg(long, value_name = "N")]
    live_views: Option<usize>,
    /// Stop the Apps' web content when it has not responded for this long and nobody answered
    /// the "not responding" question (default 15).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    stop_unresponsive: Option<u64>,
    /// Start in this theme instead of the system's.
    #[arg(long, value_enum)]
    theme: Option<ThemeArg>,
    /// Evaluate this JavaScript file in the host shell once it is ready (automation, tests).
    #[arg(long, value_name = "FILE")]
    automation: Option<PathBuf>,
    /// Write a PNG screenshot (WebKit's snapshot) once the View initialized and settled.
    #[arg(long, value_name = "FILE")]
    screenshot: Option<PathBuf>,
    /// Milliseconds a View settles before the screenshot or the --exit-after exit.
    #[arg(long, value_name = "MS", default_value_t = 500)]
    settle_ms: u64,
    /// Serve this local HTML file as the View of the opened tool(s) and reload it when it changes
    /// (with no server flags: the demo server's `counter` tool provides the data).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Run this interaction session (a JSON script: click, type, press, waitFor, expectCall,
    /// expectText, screenshot) in the View once it initialized, with real input events; exit 0
    /// when every step passed. Without --tool, the script's `tool` is opened.
    #[arg(long, value_name = "FILE")]
    session: Option<PathBuf>,
    /// Take a conformance runner's requests on stdin and answer on stdout, one JSON-RPC object a
    /// line (`displayTestApp`, `resetEnvironment`, `getConversation`, `getConversationContext`,
    /// `changeHostContext`, `confirmAction`, `sendMessage`, `callTool`, `readModelToolList`,
    /// `interact`; see the App developers' guide). The run ends when stdin closes.
    #[arg(long)]
    test_interface: bool,
    /// Render OpenAI Apps SDK widgets (`text/html+skybridge`, `openai/outputTemplate`) without
    /// the `window.openai` shim (they then get no `window.openai`).
    #[arg(long)]
    no_openai_shim: bool,
    /// Stand in for another host: tell and allow Views what it does (`vscode`, `claude-web`,
    /// `chatgpt`...; `check --profile all` lists them). Profiles are data files (see docs/app-developers.md).
    #[arg(long, value_name = "NAME")]
    profile: Option<String>,
    /// Hold a conversation with this model, which calls the servers' tools: `PROVIDER:NAME`
    /// (`openai:`, any OpenAI-compatible endpoint; `anthropic:`; `ollama:`), or `scripted` for
    /// the offline scripted demo model (not a real model). Default: the config file's `model`
    /// section, if it has one.
    #[arg(long, value_name = "PROVIDER:NAME")]
    model: Option<String>,
    /// The model API's base URL (default: OPENAI_BASE_URL, ANTHROPIC_BASE_URL or OLLAMA_HOST,
    /// else the provider's public endpoint).
    #[arg(long, value_name = "URL", requires = "model")]
    model_url: Option<String>,
    /// Read the model API's key from this file, which only its owner may read (default:
    /// OPENAI_API_KEY or ANTHROPIC_API_KEY).
    #[arg(long, value_name = "FILE", requires = "model")]
    model_key_file: Option<PathBuf>,
    /// The first prompt for the model, sent once the servers are connected.
    #[arg(long, value_name = "TEXT")]
    prompt: Option<String>,
    /// Reopen a stored conversation (`last`, or an id from `conversations`): its turns and its
    /// Views come back from what was stored, no tool is called again.
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    #[arg(skip)]
    preview: bool,
}

#[derive(Debug, clap::Args)]
struct LogoutArgs {
    #[command(flatten)]
    server: server_args::ServerArgs,
}

/// `logout`: deletes the sign-in tokens of every remote server the flags name, from the system
/// keyring and from their owner-only file.
fn logout(args: LogoutArgs) -> anyhow::Result<i32> {
    use crate::server::auth::TokenFile;
    use crate::server::ServerSpec;
    let mut remote = 0;
    for spec in args.server.resolve_all()? {
        if !matches!(spec, ServerSpec::StreamableHttp { .. } | ServerSpec::Sse { .. }) {
            continue;
        }
        remote += 1;
        let file = TokenFile::for_server(&spec.identity(), None).context("no data directory for sign-in tokens")?;
        match file.forget() {
            Ok(true) => println!("signed out of {} (its tokens are deleted)", spec.name()),
            Ok(false) => println!("{} had no stored sign-in", spec.name()),
            Err(e) => bail!("cannot delete {}: {e}", file.path().display()),
        }
    }
    if remote == 0 {
        bail!("none of these servers is remote; only remote servers sign in");
    }
    Ok(0)
}

#[derive(Debug, clap::Subcommand)]
enum ConversationAction {
    /// List them, newest first (the default).
    List,
    /// Give one a title.
    Rename {
        /// Its id.
        id: String,
        /// The title.
        title: String,
    },
    /// Delete one.
    Delete {
        /// Its id.
        id: String,
    },
}

#[derive(Debug, clap::Args)]
struct ApproveArgs {
    /// The mode: always, changes or never.
    #[arg(value_parser = ["always", "changes", "never"])]
    mode: String,
    #[command(flatten)]
    server: server_args::ServerArgs,
}

/// `approve`: remembers the mode for every server the flags name.
fn approve(args: ApproveArgs) -> anyhow::Result<i32> {
    use crate::conversation::trust::{Approval, Approvals};
    let mode = Approval::parse(&args.mode).context("the mode is always, changes or never")?;
    let approvals = Approvals::user().context("no data directory for approval modes")?;
    for spec in args.server.resolve_all()? {
        approvals
            .set(&spec.identity(), spec.name(), mode)
            .with_context(|| format!("cannot write {}", approvals.path().display()))?;
        println!("{}: {}", spec.name(), Approval::ALL.iter().find(|(a, _)| *a == mode).map_or("", |(_, w)| w));
    }
    Ok(0)
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ConsentArg {
    Ask,
    Allow,
    Deny,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ThemeArg {
    Light,
    Dark,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ExitAfterArg {
    Initialized,
    Result,
    Teardown,
    /// The model answered the prompt (with --prompt).
    Answer,
}

/// The newest stored conversation.
#[cfg(feature = "desktop")]
fn last_conversation() -> anyhow::Result<String> {
    let store = crate::conversation::store::Store::user().context("no data directory for conversations")?;
    let list = store.list().with_context(|| format!("cannot read {}", store.dir().display()))?;
    Ok(list.first().context("no stored conversation yet")?.id.clone())
}

/// `conversations [list|rename|delete]`.
fn manage_conversations(action: Option<ConversationAction>) -> anyhow::Result<i32> {
    let store = || crate::conversation::store::Store::user().context("no data directory for conversations");
    match action {
        None | Some(ConversationAction::List) => conversations(),
        Some(ConversationAction::Rename { id, title }) => {
            store()?.rename(&id, &title).with_context(|| format!("cannot rename the conversation {id}"))?;
            println!("renamed {id}");
            Ok(0)
        }
        Some(ConversationAction::Delete { id }) => {
            store()?.delete(&id).with_context(|| format!("cannot delete the conversation {id}"))?;
            println!("deleted {id}");
            Ok(0)
        }
    }
}

/// `conversations`: the stored conversations, newest first.
fn conversations() -> anyhow::Result<i32> {
    let store = crate::conversation::store::Store::user().context("no data directory for conversations")?;
    let list = store.list().with_context(|| format!("cannot read {}", store.dir().display()))?;
    if list.is_empty() {
        println!("no stored conversation ({})", store.dir().display());
    }
    for c in list {
        let age = c.modified.elapsed().map_or(0, |d| d.as_secs());
        let age = match age {
            s if s < 3600 => format!("{} min ago", s / 60),
            s if s < 86_400 => format!("{} h ago", s / 3600),
            s => format!("{} days ago", s / 86_400),
        };
        println!("{}  {age:>12}  {}", c.id, crate::consent::one_line_max(&c.title, 80));
    }
    Ok(0)
}

/// The model `--model` names, with `--model-url` and `--model-key-file`, else the config
/// file's `model` section, with the key rules of [`crate::model::key_policy`].
fn model_of(args: &RunArgs) -> anyhow::Result<Option<std::sync::Arc<dyn crate::model::Model>>> {
    use crate::model::{ApiKey, ModelSpec, ScriptedModel};
    // The flags, else the config file's `model` section.
    let (spec, url, key_file, config) = match &args.model {
        Some(spec) => (spec.clone(), args.model_url.clone(), args.model_key_file.clone(), None),
        None => match args.server.config_model()? {
            Some((m, path)) => (m.name, m.url, m.key_file, Some(path)),
            None => return Ok(None),
        },
    };
    if spec == "scripted" {
        if url.is_some() || key_file.is_some() {
            bail!("the scripted demo model takes no --model-url or --model-key-file");
        }
        return Ok(Some(std::sync::Arc::new(ScriptedModel)));
    }
    let mut spec = ModelSpec::parse(&spec, url.as_deref())?;
    // No key from the environment or a key file: the one `key set` kept, which then follows
    // the environment's rules (its provider's endpoint, or one named on the command line; a
    // config file's other endpoint asks first).
    let mut source = KeySource::Environment;
    if spec.api_key.is_none() && key_file.is_none() && spec.key_variable().is_some() {
        if let Some(k) = key::stored_model_key(provider_word(&spec)) {
            spec.api_key = Some(ApiKey::new(k));
            source = KeySource::Stored;
        }
    }
    match (&key_file, &config) {
        (Some(path), Some(_)) => {
            crate::model::key_policy::key_file_allowed(path, &own_dirs()).map_err(anyhow::Error::msg)?;
            spec.api_key = Some(ApiKey::from_file(path)?);
        }
        (Some(path), None) => spec.api_key = Some(ApiKey::from_file(path)?),
        (None, Some(config)) if spec.api_key.is_some() && url.is_some() => {
            let named = ModelSpec::parse(&format!("{}:{}", provider_word(&spec), spec.name), None)?.base_url;
            check_config_endpoint(&spec, &named, config, source)?;
        }
        _ => {}
    }
    Ok(Some(spec.build()?))
}

fn provider_word(spec: &crate::model::ModelSpec) -> &'static str {
    spec.provider.as_str()
}

/// The host's own directories: its config directory and its data directory.
fn own_dirs() -> Vec<std::path::PathBuf> {
    let Some(dirs) = directories::ProjectDirs::from("", "", "mcp-apps-host") else { return Vec::new() };
    vec![dirs.config_dir().to_path_buf(), dirs.data_dir().to_path_buf()]
}

/// Where the model's key came from, for the question a config file's endpoint asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeySource {
    /// `OPENAI_API_KEY`/`ANTHROPIC_API_KEY`.
    Environment,
    /// What `key set` kept (the keyring or its owner-only file).
    Stored,
}

/// What the host asks (and says when it cannot ask) before a config file's endpoint gets the
/// key: whose key it is and where it came from.
fn endpoint_question(config: &std::path::Path, variable: &str, origin: &str, source: KeySource) -> String {
    let key = match source {
        KeySource::Environment => format!("your {variable} (from the environment)"),
        KeySource::Stored => "the model API key you stored with `mcp-apps-host key set`".to_owned(),
    };
    format!(
        "The config file {} sends {key} to {origin}, which neither the environment nor the command line named.",
        config.display()
    )
}

/// A config file points the key from the environment (or the one `key set` kept) at its own
/// URL: allowed when that is the origin the environment names anyway (`named`), or one the
/// person said yes to, here or before; else the key is not sent and the host says why.
fn check_config_endpoint(
    spec: &crate::model::ModelSpec,
    named: &url::Url,
    config: &std::path::Path,
    source: KeySource,
) -> anyhow::Result<()> {
    use crate::model::key_policy::{origin_of, EndpointApprovals};
    let origin = origin_of(&spec.base_url);
    let Some(variable) = spec.key_variable() else { return Ok(()) };
    if origin == origin_of(named) {
        return Ok(());
    }
    let approvals = EndpointApprovals::user();
    if approvals.as_ref().is_some_and(|a| a.allows(variable, &origin)) {
        return Ok(());
    }
    let question = endpoint_question(config, variable, &origin, source);
    let terminal =
        std::io::IsTerminal::is_terminal(&std::io::stdin()) && std::io::IsTerminal::is_terminal(&std::io::stderr());
    if terminal {
        eprint!("{question}\nSend your key to {origin}? [y/N] ");
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if matches!(answer.trim(), "y" | "Y" | "yes") {
            if let Some(a) = &approvals {
                if let Err(e) = a.allow(variable, &origin) {
                    eprintln!("warning: the answer is not kept for next time: {e}");
                }
            }
            return Ok(());
        }
    }
    bail!(
        "{question} The key was not sent. To send it, pass --model-url {} on the command line, or answer yes \
         when the host asks in a terminal.",
        spec.base_url
    )
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MCP_APPS_HOST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("mcp_apps_host=info,warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| OneLine(std::io::stderr()))
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}

/// A log writer that keeps every record on one line: a newline or carriage return inside a
/// record (a server's or View's text in a message) is written escaped, so no peer can forge a
/// line of the host's log. tracing's fmt layer writes each record with one `write_all`.
struct OneLine(std::io::Stderr);

impl std::io::Write for OneLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf).map(|()| buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        let body = buf.strip_suffix(b"\n").unwrap_or(buf);
        if !body.iter().any(|b| matches!(b, b'\n' | b'\r')) {
            return self.0.write_all(buf);
        }
        let mut out = Vec::with_capacity(buf.len() + 16);
        for &b in body {
            match b {
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b => out.push(b),
            }
        }
        if body.len() < buf.len() {
            out.push(b'\n');
        }
        self.0.write_all(&out)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

pub(crate) fn parse_args(text: &str) -> anyhow::Result<Map<String, Value>> {
    match serde_json::from_str::<Value>(text).with_context(|| format!("--args is not valid JSON: {text}"))? {
        Value::Object(map) => Ok(map),
        other => bail!("--args must be a JSON object, got {other}"),
    }
}

/// `run --test-interface`: a runner's JSON-RPC requests, a line each on stdin, go to the run;
/// each answer is written to stdout as it comes (requests may overlap). When stdin closes, the
/// process ends: a runner that goes takes its host with it.
#[cfg(feature = "desktop")]
fn serve_test_interface() -> crate::app::test_interface::TestRequests {
    use std::io::{BufRead, Write};
    let (tx, requests) = crate::app::test_interface::TestRequests::channel();
    // One line at a time: the lock on stdout keeps overlapping answers whole.
    fn write(line: Value) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
    }
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                write(
                    serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "not JSON"}}),
                );
                continue;
            };
            let id = msg.get("id").cloned().unwrap_or(Value::Null);
            let Some(method) = msg.get("method").and_then(Value::as_str) else {
                write(
                    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": "no method"}}),
                );
                continue;
            };
            let (reply, answer) = tokio::sync::oneshot::channel();
            let params = msg.get("params").cloned().unwrap_or(Value::Null);
            let request = crate::app::test_interface::TestRequest { method: method.to_owned(), params, reply };
            if tx.send(request).is_err() {
                break;
            }
            std::thread::spawn(move || {
                let line = match answer.blocking_recv() {
                    Ok(Ok(result)) => serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Ok(Err(message)) => {
                        serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": message}})
                    }
                    Err(_) => {
                        serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "the host ended before it answered"}})
                    }
                };
                write(line);
            });
        }
        // The runner went: so does the host.
        std::process::exit(0);
    });
    requests
}

#[cfg(feature = "desktop")]
fn run(args: RunArgs) -> anyhow::Result<i32> {
    let Some(door) = front_door(&args, &crate::app::single_instance::Knock::Raise)? else { return Ok(0) };
    run_with(args, Launch { door, ..Launch::default() })
}

/// `run`, with a server to install after the app's own dialog (`open` without a terminal).
#[cfg(feature = "desktop")]
fn run_with(args: RunArgs, launch: Launch) -> anyhow::Result<i32> {
    use crate::desktop::RunOptions;
    use crate::host::{Consent, ExitAfter};
    use crate::protocol::Theme;
    let (servers, config) = args.server.app_servers()?;
    if args.args.len() > args.tool.len() {
        bail!("--args given {} times for {} --tool", args.args.len(), args.tool.len());
    }
    let mut options = RunOptions::app_with(servers);
    options.config = config;
    options.install = launch.install.map(crate::app::install_request::InstallSlot::new);
    options.startup_error = launch.error;
    options.front_door = launch.door;
    for dir in &args.root {
        options.roots.push(crate::server::requests::Root::directory(dir)?);
    }
    for (i, tool) in args.tool.iter().enumerate() {
        let arguments = match args.args.get(i) {
            Some(text) => parse_args(text)?,
            None => Map::new(),
        };
        options.opens.push((tool.clone(), arguments));
    }
    if let Some(path) = &args.session {
        // Its screenshots go beside the run's screenshot, else into the current directory.
        let pictures =
            args.screenshot.as_deref().and_then(std::path::Path::parent).filter(|p| !p.as_os_str().is_empty());
        let script = crate::host::Interaction::read(path, pictures.unwrap_or(std::path::Path::new(".")))
            .map_err(anyhow::Error::msg)?;
        if options.opens.is_empty() {
            let Some(tool) = script.tool.clone() else {
                bail!("--session needs --tool, or a \"tool\" in the script");
            };
            options.opens.push((tool, script.arguments.clone().unwrap_or_default()));
        }
        options.interaction = Some(script);
    }
    if args.test_interface {
        options.test_requests = Some(serve_test_interface());
    }
    let answer = matches!(args.exit_after, Some(ExitAfterArg::Answer));
    if answer && args.prompt.is_none() {
        bail!("--exit-after answer needs --prompt");
    }
    if options.opens.is_empty() && args.exit_after.is_some() && !answer {
        bail!("--exit-after needs at least one --tool");
    }
    options.model = model_of(&args)?.map(crate::desktop::SharedModel);
    if options.model.is_none() && (args.prompt.is_some() || args.resume.is_some()) {
        bail!("--prompt and --resume need a model: --model PROVIDER:NAME, or a \"model\" section in the config file");
    }
    options.prompt = args.prompt.clone();
    options.resume = match args.resume.as_deref() {
        Some("last") => Some(last_conversation()?),
        other => other.map(str::to_owned),
    };
    options.trace = args.trace;
    options.exit_after = args.exit_after.map(|e| match e {
        ExitAfterArg::Initialized => ExitAfter::Initialized,
        ExitAfterArg::Result => ExitAfter::Result,
        ExitAfterArg::Teardown => ExitAfter::Teardown,
        ExitAfterArg::Answer => ExitAfter::Answer,
    });
    if options.interaction.is_some() && options.exit_after.is_none() {
        // A View that never starts ends the run too (the session ends it otherwise).
        options.exit_after = Some(ExitAfter::Initialized);
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        bail!("--timeout must be a positive number of seconds");
    }
    options.timeout = std::time::Duration::from_secs_f64(args.timeout);
    options.consent = match args.consent {
        ConsentArg::Ask => Consent::Ask,
        ConsentArg::Allow => Consent::Allow,
        ConsentArg::Deny => Consent::Deny,
    };
    options.opener = args.open_with;
    options.screenshot = args.screenshot;
    options.settle = std::time::Duration::from_millis(args.settle_ms);
    options.preview = args.preview;
    options.openai_shim = !args.no_openai_shim;
    if let Some(name) = &args.profile {
        options.profile = Some(crate::profile::HostProfile::named(name).map_err(anyhow::Error::msg)?);
    }
    options.html = args.html.map(|p| std::path::absolute(&p).unwrap_or(p));
    options.downloads = args.downloads;
    options.web_memory_limit_mb = args.web_memory_limit;
    options.live_views = args.live_views;
    options.stop_unresponsive = args.stop_unresponsive.map(std::time::Duration::from_secs);
    options.theme = args.theme.map(|t| match t {
        ThemeArg::Light => Theme::Light,
        ThemeArg::Dark => Theme::Dark,
    });
    if let Some(path) = &args.automation {
        let script =
            std::fs::read_to_string(path).with_context(|| format!("cannot read --automation {}", path.display()))?;
        options.automation = Some(script);
    }
    if std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
        bail!("no display: set DISPLAY (for example run under `xvfb-run -a`)");
    }
    Ok(crate::desktop::run(options)?)
}

#[cfg(not(feature = "desktop"))]
fn run(args: RunArgs) -> anyhow::Result<i32> {
    let _ = args.server.app_servers()?;
    let _ = model_of(&args)?;
    for text in &args.args {
        parse_args(text)?;
    }
    bail!("this build has no window support: rebuild with the `desktop` feature")
}

/// The long help of `install` (clap takes the struct's doc comment for `--help` otherwise).
const INSTALL_HELP: &str = "Install a server into your config file: from an .mcpb bundle (unpacked into your data \
directory; a signed bundle's signature is verified and its signer named, a bundle changed after it was \
signed refused), a registry server.json, from a file or a web address such as the \
registry API's (its npm package run with npx, its PyPI package with uvx, or its remote) or an install link \
(mcp-apps-host://install?config=<base64url JSON>, see docs/user-guide.md). Shows what will run and asks for each \
setting (secrets without echo), or takes --yes with --set KEY=VALUE. The config file is rewritten as JSON: its \
other keys and their order are kept, its formatting is not, and a file with comments is refused rather than \
rewritten.";

/// `open`: installs what it is given (asking in the terminal, or in the app's own dialog when
/// there is none), then opens the app on the config file, or hands both to the app already
/// running on that file (see `app::single_instance`).
#[cfg(feature = "desktop")]
fn open(target: Option<String>, run: RunArgs) -> anyhow::Result<i32> {
    use crate::app::single_instance::Knock;
    let mut knock = Knock::Raise;
    let mut in_app = None;
    if let Some(source) = target {
        // After `--`: a link or file name is never read as an option.
        let args = install_args(&source, run.server.config.as_deref())?;
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            install::install(args)?;
            knock = Knock::Reload;
        } else {
            // Opened from the browser or the file manager: the app asks, in its own dialog. A
            // file's path is made whole: the running app may have another working directory.
            let source = match std::path::Path::new(&source) {
                p if !source.contains("://") && p.exists() => std::path::absolute(p)?.to_string_lossy().into_owned(),
                _ => source,
            };
            knock = Knock::Open { source };
            in_app = Some(args);
        }
    }
    let Some(door) = front_door(&run, &knock)? else { return Ok(0) };
    // The first app: what was opened is read here, once; an error is said in the window.
    let (install, error) = match in_app.map(install::in_app).transpose() {
        Ok(request) => (request, None),
        Err(e) => (None, Some(format!("{e:#}"))),
    };
    run_with(run, Launch { install, error, door })
}

/// `open` without the desktop feature: the terminal install only.
#[cfg(not(feature = "desktop"))]
fn open(target: Option<String>, run: RunArgs) -> anyhow::Result<i32> {
    if let Some(source) = target {
        install::install(install_args(&source, run.server.config.as_deref())?)?;
    }
    self::run(run)
}

/// `install` of one source, into the app's config file when `--config` names one.
fn install_args(source: &str, config: Option<&std::path::Path>) -> anyhow::Result<install::InstallArgs> {
    let mut words: Vec<std::ffi::OsString> = vec!["mcp-apps-host".into(), "install".into()];
    if let Some(config) = config {
        words.extend(["--config".into(), config.as_os_str().to_owned()]);
    }
    words.extend(["--".into(), source.into()]);
    match Cli::try_parse_from(words)?.command {
        Command::Install(args) => Ok(args),
        _ => bail!("cannot read {source:?} as something to install"),
    }
}

/// What `run` starts with besides its flags: a server opened from outside to ask about, or why
/// it could not be read, and the door of the first app on its config file.
#[cfg(feature = "desktop")]
#[derive(Default)]
struct Launch {
    install: Option<crate::app::install_request::InstallRequest>,
    error: Option<String>,
    door: Option<crate::app::single_instance::FrontDoor>,
}

/// The app on the person's config file is one app: the first launch on it gets its front door
/// (`Some`), a later one hands `knock` to it and gets `None` (it then ends). A run with servers
/// on the command line is a developer's and runs alone, as does one whose door cannot be made.
#[cfg(feature = "desktop")]
fn front_door(
    run: &RunArgs,
    knock: &crate::app::single_instance::Knock,
) -> anyhow::Result<Option<Option<crate::app::single_instance::FrontDoor>>> {
    use crate::app::single_instance::{claim, Claim, FrontDoor, Opener};
    let Some(config) = run.server.app_config()? else { return Ok(Some(None)) };
    match claim(&config, knock) {
        Ok(Claim::Handed) => {
            eprintln!("mcp-apps-host already runs on {}: handed over to its window", config.display());
            Ok(None)
        }
        Ok(Claim::First(door)) => {
            let file = config.clone();
            let opener: Opener = std::sync::Arc::new(move |source: String| {
                install_args(&source, Some(&file)).and_then(install::in_app).map_err(|e| format!("{e:#}"))
            });
            Ok(Some(Some(FrontDoor::new(door, Some(opener)))))
        }
        Err(e) => {
            tracing::warn!("single instance: {e}: this app runs on its own");
            Ok(Some(None))
        }
    }
}

/// `demo`: `run` on the embedded (in-process) demo server, starting with the weather and counter Views.
fn demo(mut args: RunArgs) -> anyhow::Result<i32> {
    args.server = server_args::ServerArgs { builtin: Some("demo".into()), ..Default::default() };
    if args.tool.is_empty() {
        args.tool.extend(["weather".to_owned(), "counter".to_owned()]);
    }
    run(args)
}

/// Runs the CLI and returns the process exit code (0 ok, 1 failure, 2 usage).
/// A reader that stops early (`mcp-apps-host inspect ... | head`) closes stdout, and `println!`
/// panics on the broken pipe. That ends the program as it ends any Unix tool: quietly, with
/// status 141 (128 + SIGPIPE). SIGPIPE itself stays ignored (Rust's default): a write into a
/// stdio server that died must be an error, not the end of the host.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

pub fn main() -> ExitCode {
    // Before any thread exists: it may set an environment variable.
    crate::host_env::settle();
    let cli = Cli::parse();
    init_logging();
    crate::host_env::report();
    quiet_on_closed_stdout();
    let outcome = match cli.command {
        Command::Run(args) => run(args),
        Command::Inspect(args) => inspect::inspect(args),
        Command::Check(args) => check::check(args),
        Command::ProbeServer => probe_server::serve(),
        Command::Conversations { action } => manage_conversations(action),
        #[cfg(feature = "desktop")]
        Command::IpcFloor { n } => ipc_floor::run(n),
        #[cfg(not(feature = "desktop"))]
        Command::IpcFloor { .. } => Err(anyhow::anyhow!("__ipc-floor needs the desktop feature")),
        Command::Logout(args) => logout(args),
        Command::Approve(args) => approve(args),
        Command::Demo(args) => demo(args),
        Command::Install(args) => install::install(args),
        Command::Key { action } => key::key(action),
        Command::Open { target, run } => open(target, *run),
        Command::Preview(mut args) => {
            args.preview = true;
            if args.html.is_some() && args.server.is_empty() {
                if args.tool.is_empty() {
                    args.tool.push("counter".into());
                }
                demo(args)
            } else {
                run(args)
            }
        }
        Command::DemoServer => serve_demo(),
        Command::ReplayServer { trace, html, view } => replay::serve(&trace, html.as_deref(), view.as_deref()),
    };
    exit_code(outcome)
}

fn exit_code(outcome: anyhow::Result<i32>) -> ExitCode {
    match outcome {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn serve_demo() -> anyhow::Result<i32> {
    let server = crate::demo::DemoServer::default();
    crate::demo::serve_stdio(|m, p| server.handle(m, p)).map(|()| 0).map_err(Into::into)
}

/// `main` of the [`BUILTIN_SERVER_BIN`] binary: a built-in MCP server on stdio, by name
/// (`probe`: the server of `check --self`; `demo`: the embedded demo server). That binary links
/// neither GTK nor WebKit, so it starts in about 1 ms of CPU where `mcp-apps-host __probe-server`
/// pays the dynamic linker about 50 ms (measured with `perf stat`), on the same two cores as
/// the host and its web processes that start beside it.
#[doc(hidden)]
pub fn builtin_server_main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["probe"] => probe_server::serve(),
        ["demo"] => serve_demo(),
        _ => {
            eprintln!("usage: {BUILTIN_SERVER_BIN} probe|demo\n\nServes a built-in MCP server on stdio: `probe` (the server of `mcp-apps-host check --self`) or `demo` (the embedded demo server).");
            return ExitCode::from(2);
        }
    };
    exit_code(outcome)
}

/// The command line that starts the built-in server `name` (`probe`, `demo`): the small
/// [`BUILTIN_SERVER_BIN`] beside this binary when it is there (they are built and installed
/// together), else this binary's own `__<name>-server`.
pub(crate) fn builtin_server_command(name: &str) -> std::io::Result<String> {
    let (program, args) = builtin_server_entry(name)?;
    Ok(shell_words::join(std::iter::once(program).chain(args)))
}

/// [`builtin_server_command`] as a program and its arguments (a config file's `command` and
/// `args`).
pub(crate) fn builtin_server_entry(name: &str) -> std::io::Result<(String, Vec<String>)> {
    let exe = std::env::current_exe()?;
    let small = exe.with_file_name(format!("{BUILTIN_SERVER_BIN}{}", std::env::consts::EXE_SUFFIX));
    Ok(if small.is_file() {
        (small.to_string_lossy().into_owned(), vec![name.to_owned()])
    } else {
        (exe.to_string_lossy().into_owned(), vec![format!("__{name}-server")])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_question_says_where_the_key_comes_from() {
        let config = std::path::Path::new("/p/mcp.json");
        let asked = endpoint_question(config, "OPENAI_API_KEY", "https://elsewhere.example", KeySource::Stored);
        assert_eq!(
            asked,
            "The config file /p/mcp.json sends the model API key you stored with `mcp-apps-host key set` to \
             https://elsewhere.example, which neither the environment nor the command line named."
        );
        let asked = endpoint_question(config, "OPENAI_API_KEY", "https://elsewhere.example", KeySource::Environment);
        assert!(asked.contains("sends your OPENAI_API_KEY (from the environment) to https://elsewhere.example"));
        assert!(!asked.contains("key set"));
    }
}
