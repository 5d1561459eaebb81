//! Command-line interface: `mcp-apps-host run | inspect | check`.

mod baseline;
mod check;
mod inspect;
mod install;
#[cfg(feature = "desktop")]
mod ipc_floor;
mod key;
mod logging;
mod probe_server;
mod replay;
mod run;
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

pub(crate) fn parse_args(text: &str) -> anyhow::Result<Map<String, Value>> {
    match serde_json::from_str::<Value>(text).with_context(|| format!("--args is not valid JSON: {text}"))? {
        Value::Object(map) => Ok(map),
        other => bail!("--args must be a JSON object, got {other}"),
    }
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
    logging::init_logging();
    crate::host_env::report();
    quiet_on_closed_stdout();
    let outcome = match cli.command {
        Command::Run(args) => run::run(args),
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
        Command::Demo(args) => run::demo(args),
        Command::Install(args) => install::install(args),
        Command::Key { action } => key::key(action),
        Command::Open { target, run } => run::open(target, *run),
        Command::Preview(mut args) => {
            args.preview = true;
            if args.html.is_some() && args.server.is_empty() {
                if args.tool.is_empty() {
                    args.tool.push("counter".into());
                }
                run::demo(args)
            } else {
                run::run(args)
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
