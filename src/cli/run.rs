//! `run`, `open` and `demo`: the flags made into the app's options, the model and its key,
//! and the one app per config file.

use anyhow::bail;
#[cfg(feature = "desktop")]
use anyhow::Context;
#[cfg(feature = "desktop")]
use serde_json::{Map, Value};

use super::{install, install_args, key, parse_args, server_args, RunArgs};
#[cfg(feature = "desktop")]
use super::{last_conversation, ConsentArg, ExitAfterArg, ThemeArg};
use crate::model::key_policy::{check_config_endpoint, KeySource};

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
            check_config_endpoint(&spec, &named, config, source, ask_in_terminal).map_err(anyhow::Error::msg)?;
        }
        _ => {}
    }
    Ok(Some(spec.build()?))
}

fn provider_word(spec: &crate::model::ModelSpec) -> &'static str {
    spec.provider.as_str()
}

/// Puts a config file's endpoint question to the person when the host runs in a terminal
/// (no: when there is no one to ask).
fn ask_in_terminal(question: &str, origin: &str) -> std::io::Result<bool> {
    let terminal =
        std::io::IsTerminal::is_terminal(&std::io::stdin()) && std::io::IsTerminal::is_terminal(&std::io::stderr());
    if !terminal {
        return Ok(false);
    }
    eprint!("{question}\nSend your key to {origin}? [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// The host's own directories: its config directory and its data directory.
fn own_dirs() -> Vec<std::path::PathBuf> {
    let Some(dirs) = directories::ProjectDirs::from("", "", "mcp-apps-host") else { return Vec::new() };
    vec![dirs.config_dir().to_path_buf(), dirs.data_dir().to_path_buf()]
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
pub(super) fn run(args: RunArgs) -> anyhow::Result<i32> {
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
    options.launch.config = config;
    options.launch.install = launch.install.map(crate::app::install_request::InstallSlot::new);
    options.launch.startup_error = launch.error;
    options.launch.front_door = launch.door;
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
        options.automation.interaction = Some(script);
    }
    if args.test_interface {
        options.automation.test_requests = Some(serve_test_interface());
    }
    let answer = matches!(args.exit_after, Some(ExitAfterArg::Answer));
    if answer && args.prompt.is_none() {
        bail!("--exit-after answer needs --prompt");
    }
    if options.opens.is_empty() && args.exit_after.is_some() && !answer {
        bail!("--exit-after needs at least one --tool");
    }
    options.conversation.model = model_of(&args)?.map(crate::desktop::SharedModel);
    if options.conversation.model.is_none() && (args.prompt.is_some() || args.resume.is_some()) {
        bail!("--prompt and --resume need a model: --model PROVIDER:NAME, or a \"model\" section in the config file");
    }
    options.conversation.prompt = args.prompt.clone();
    options.conversation.resume = match args.resume.as_deref() {
        Some("last") => Some(last_conversation()?),
        other => other.map(str::to_owned),
    };
    options.trace = args.trace;
    options.automation.exit_after = args.exit_after.map(|e| match e {
        ExitAfterArg::Initialized => ExitAfter::Initialized,
        ExitAfterArg::Result => ExitAfter::Result,
        ExitAfterArg::Teardown => ExitAfter::Teardown,
        ExitAfterArg::Answer => ExitAfter::Answer,
    });
    if options.automation.interaction.is_some() && options.automation.exit_after.is_none() {
        // A View that never starts ends the run too (the session ends it otherwise).
        options.automation.exit_after = Some(ExitAfter::Initialized);
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
    options.automation.screenshot = args.screenshot;
    options.automation.settle = std::time::Duration::from_millis(args.settle_ms);
    options.developer.panel = args.preview;
    options.openai_shim = !args.no_openai_shim;
    if let Some(name) = &args.profile {
        options.profile = Some(crate::profile::HostProfile::named(name).map_err(anyhow::Error::msg)?);
    }
    options.developer.html = args.html.map(|p| std::path::absolute(&p).unwrap_or(p));
    options.places.downloads = args.downloads;
    options.limits.web_memory_limit_mb = args.web_memory_limit;
    options.limits.live_views = args.live_views;
    options.limits.stop_unresponsive = args.stop_unresponsive.map(std::time::Duration::from_secs);
    options.theme = args.theme.map(|t| match t {
        ThemeArg::Light => Theme::Light,
        ThemeArg::Dark => Theme::Dark,
    });
    if let Some(path) = &args.automation {
        let script =
            std::fs::read_to_string(path).with_context(|| format!("cannot read --automation {}", path.display()))?;
        options.automation.script = Some(script);
    }
    if std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
        bail!("no display: set DISPLAY (for example run under `xvfb-run -a`)");
    }
    Ok(crate::desktop::run(options)?)
}

#[cfg(not(feature = "desktop"))]
pub(super) fn run(args: RunArgs) -> anyhow::Result<i32> {
    let _ = args.server.app_servers()?;
    let _ = model_of(&args)?;
    for text in &args.args {
        parse_args(text)?;
    }
    bail!("this build has no window support: rebuild with the `desktop` feature")
}

/// `open`: installs what it is given (asking in the terminal, or in the app's own dialog when
/// there is none), then opens the app on the config file, or hands both to the app already
/// running on that file (see `app::single_instance`).
#[cfg(feature = "desktop")]
pub(super) fn open(target: Option<String>, run: RunArgs) -> anyhow::Result<i32> {
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
pub(super) fn open(target: Option<String>, run: RunArgs) -> anyhow::Result<i32> {
    if let Some(source) = target {
        install::install(install_args(&source, run.server.config.as_deref())?)?;
    }
    self::run(run)
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
pub(super) fn demo(mut args: RunArgs) -> anyhow::Result<i32> {
    args.server = server_args::ServerArgs { builtin: Some("demo".into()), ..Default::default() };
    if args.tool.is_empty() {
        args.tool.extend(["weather".to_owned(), "counter".to_owned()]);
    }
    run(args)
}
