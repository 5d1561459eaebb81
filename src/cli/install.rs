//! `install FILE|LINK`: adds a server from a registry `server.json` or an install link to the
//! config file, after showing what will run and asking for its settings.

use std::collections::HashMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{bail, Context};

use crate::install::{config_file, link, mcpb, server_json, Plan, Setting, SEP};
use crate::server::config::default_config_path;

/// Install a server into your config file: from an `.mcpb` bundle (unpacked into your data
/// directory), a registry `server.json` from a file or web address (its npm package run with
/// npx, its PyPI package with uvx, or its remote) or an install link
/// (`mcp-apps-host://install?config=<base64url JSON>`, see docs/user-guide.md). Shows what will run and
/// asks for each setting (secrets without echo), or takes `--yes` with `--set KEY=VALUE`. The
/// file is rewritten as JSON: its other keys and their order are kept, its formatting is not (a
/// file with comments is refused, not rewritten).
#[derive(Debug, Clone, clap::Args)]
pub struct InstallArgs {
    /// An `.mcpb` bundle, a `server.json` file or web address (the registry API's answer for
    /// one server, `https://REGISTRY/v0/servers/NAME/versions/latest`), or an install link.
    #[arg(value_name = "FILE|LINK")]
    source: String,
    /// The config file to add the server to (default: ~/.config/mcp-apps-host/mcp.json; made
    /// when missing, readable by you only).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The server's name in the config file (default: the last part of its registry name, or
    /// the link's `name`).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// A setting's value (repeatable); the settings are listed before anything is asked. A
    /// command line is visible to other users of the machine: let secrets be asked instead.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Install without asking: settings come from --set and their defaults, and a required
    /// setting without a value fails the install.
    #[arg(long, short = 'y')]
    yes: bool,
    /// Overwrite a server of the same name in the config file.
    #[arg(long)]
    replace: bool,
    /// Install the server.json's remote instead of its package.
    #[arg(long)]
    remote: bool,
}

/// A source read once: its plan, its bundle (an `.mcpb`'s bytes as read), and the config file
/// it goes into. What the person is shown is made from it, and so is what is installed: nothing
/// is read again between the question and the yes (a web address could answer otherwise the
/// second time, a file could have changed).
struct Source {
    plan: Plan,
    bundle: Option<mcpb::Bundle>,
    config: PathBuf,
}

/// Reads the source, the one time it is read.
fn read_source(args: &mut InstallArgs) -> anyhow::Result<Source> {
    // A desktop's `%u` may hand a local file over as a file: URL.
    if args.source.starts_with("file:") {
        let path = url::Url::parse(&args.source)
            .ok()
            .and_then(|u| u.to_file_path().ok())
            .with_context(|| format!("{} is not a local file's URL", args.source))?;
        args.source = path.to_string_lossy().into_owned();
    }
    let mut bundle = None;
    let mut plan = if args.source.to_ascii_lowercase().ends_with(".mcpb") && !args.source.contains("://") {
        let dir = mcpb::bundles_dir().context("no data directory to unpack the bundle into")?;
        let b = mcpb::read(std::path::Path::new(&args.source), &dir, args.name.as_deref())
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("cannot install {}", args.source))?;
        let plan = b.plan.clone();
        bundle = Some(b);
        plan
    } else {
        read_plan(args)?
    };
    if let Some(name) = args.name.as_ref().filter(|_| bundle.is_none()) {
        crate::install::check_name(name).map_err(anyhow::Error::msg)?;
        plan.name = name.clone();
    }
    let config = match &args.config {
        Some(p) => p.clone(),
        None => default_config_path().context("no config directory: give --config FILE")?,
    };
    Ok(Source { plan, bundle, config })
}

/// For `open` with no terminal to ask in: what the app's own dialog shows (what will run, the
/// signature, the settings), and the install it carries out with the person's answers, of the
/// source as read for the dialog.
#[cfg(feature = "desktop")]
pub(crate) fn in_app(mut args: InstallArgs) -> anyhow::Result<crate::app::install_request::InstallRequest> {
    // (A bundle's signature is one of its plan's facts.)
    let source = read_source(&mut args)?;
    let agreement = source.plan.agreement();
    let (name, settings, config) = (source.plan.name.clone(), source.plan.settings.clone(), source.config.clone());
    let said_name = name.clone();
    let perform = Box::new(move |answers: Vec<(String, String)>| {
        let answers = source.plan.check_answers(&answers)?;
        // What the terminal would be told goes to the log (stdout may be a runner's line).
        let mut log = std::io::stderr();
        show(&source, &mut log).map_err(|e| e.to_string())?;
        install_source(source, answers, args.replace, &mut log)
            .map(|_| format!("{said_name} was installed"))
            .map_err(|e| format!("{e:#}"))
    });
    Ok(crate::app::install_request::InstallRequest { name, agreement, settings, config, perform })
}

/// Runs `install`; what was installed and where its secrets went is said on stdout.
pub fn install(args: InstallArgs) -> anyhow::Result<i32> {
    install_saying(args, &mut std::io::stdout())
}

/// What the person agrees to, whole: every line of what runs, the warnings, the settings, the
/// config file.
fn show(source: &Source, err: &mut dyn Write) -> std::io::Result<()> {
    let agreement = source.plan.agreement();
    writeln!(err, "{}", agreement.text())?;
    for w in &agreement.warnings {
        writeln!(err, "     Warning: {w}")?;
    }
    if !source.plan.settings.is_empty() {
        writeln!(err, "    Settings:")?;
        for s in &source.plan.settings {
            writeln!(err, "              {}", describe(s))?;
        }
    }
    writeln!(err, "        Into: {}", source.config.display())
}

/// `install`, saying what was installed on `said`.
fn install_saying(mut args: InstallArgs, said: &mut dyn Write) -> anyhow::Result<i32> {
    let source = read_source(&mut args)?;
    let given: Vec<(String, String)> = args
        .set
        .iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .with_context(|| format!("--set {kv:?} is not KEY=VALUE"))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut answers = source.plan.check_answers(&given).map_err(anyhow::Error::msg)?;
    show(&source, &mut std::io::stderr().lock())?;

    if !args.yes {
        if !std::io::stdin().is_terminal() {
            bail!(
                "nothing was installed: not in a terminal, so nobody can agree. Check what it runs (above) and \
                 pass --yes, with --set KEY=VALUE for its settings"
            );
        }
        ask_settings(&source.plan, &mut answers)?;
        if !confirm(&format!("Install {} into {}? [y/N] ", source.plan.name, source.config.display()))? {
            bail!("nothing was installed (you said no)");
        }
    }
    install_source(source, answers, args.replace, said)
}

/// Installs the source as it was read and shown, with the person's answers.
fn install_source(
    source: Source,
    mut answers: HashMap<String, String>,
    replace: bool,
    said: &mut dyn Write,
) -> anyhow::Result<i32> {
    let Source { plan, bundle, config: path } = source;
    // Secret settings go to the keyring (or an owner-only file); the entry refers to them.
    let mut secrets = Vec::new();
    for s in plan.settings.iter().filter(|s| s.secret && !s.multiple) {
        if let Some(value) = answers.get_mut(&s.key).filter(|v| !v.is_empty()) {
            secrets.push((s.key.clone(), std::mem::replace(value, crate::secrets::reference(&s.key))));
        }
    }
    let entry = plan.resolve(&answers).map_err(anyhow::Error::msg).context("nothing was installed")?;
    // Dropped without keep (the config refused below), the unpacked bundle goes again and a
    // replaced one comes back.
    let unpacked = match &bundle {
        Some(b) => Some(mcpb::unpack(b, replace).map_err(anyhow::Error::msg).context("nothing was installed")?),
        None => None,
    };
    let written = config_file::add_server(&path, &plan.name, &entry, replace)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("nothing was installed into {}", path.display()))?;
    if !secrets.is_empty() {
        store_secrets(&written.path, &plan.name, &secrets, said)?;
    }
    if let Some(u) = unpacked {
        u.keep();
    }
    let verb = if written.replaced { "replaced" } else { "installed" };
    match &bundle {
        Some(b) => {
            writeln!(said, "{verb} {} in {} (bundle {})", plan.name, written.path.display(), b.signature.short())?
        }
        None => writeln!(said, "{verb} {} in {}", plan.name, written.path.display())?,
    }
    answers.retain(|k, _| !secrets.iter().any(|(key, _)| key == k));
    if written.readable_by_others && plan.writes_secret(&answers) {
        eprintln!(
            "warning: {} holds a secret setting now and other users may read it (chmod 600 it)",
            written.path.display()
        );
    }
    Ok(0)
}

/// Stores the secret settings of the server `name` just written to `config`, under the
/// server's identity as the host will read it, and says where each went.
fn store_secrets(
    config: &std::path::Path,
    name: &str,
    secrets: &[(String, String)],
    said: &mut dyn Write,
) -> anyhow::Result<()> {
    use crate::server::config::{load_config, LoadOptions};
    let load = load_config(config, &LoadOptions::new())?;
    let spec = load
        .servers
        .iter()
        .find(|s| s.name() == name)
        .with_context(|| format!("{name} is not in {} after it was written", config.display()))?;
    // Secrets are found by the entry as written (see `ServerSpec::written_identity`).
    let identity = spec.written_identity();
    for (key, value) in secrets {
        let secret = crate::secrets::Secret::setting(name, &identity, key);
        let place = crate::secrets::blocking(|| crate::secrets::store(&secret, value))
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("{name} is in {}, but its secret {key} could not be kept", config.display()))?;
        writeln!(said, "secret {key}: kept in {place}; the config refers to it as {}", crate::secrets::reference(key))?;
    }
    Ok(())
}

/// The plan for the source: an install link, or a server.json file.
fn read_plan(args: &InstallArgs) -> anyhow::Result<Plan> {
    let source = &args.source;
    if source.starts_with(&format!("{}:", link::SCHEME)) {
        if args.remote {
            bail!("--remote is for a server.json; an install link names one server");
        }
        return link::plan(source).map_err(anyhow::Error::msg);
    }
    let text = if source.starts_with("http://") || source.starts_with("https://") {
        crate::install::registry::fetch(source).map_err(anyhow::Error::msg)?
    } else {
        std::fs::read_to_string(source).with_context(|| format!("cannot read {source}"))?
    };
    let pick = if args.remote { server_json::Pick::Remote } else { server_json::Pick::First };
    server_json::plan(&text, pick).map_err(anyhow::Error::msg).with_context(|| format!("cannot install {source}"))
}

/// `KEY (required, secret): description [default: x] [choices: a, b]`.
fn describe(s: &Setting) -> String {
    let mut marks = Vec::new();
    if s.required {
        marks.push("required");
    }
    if s.secret {
        marks.push("secret");
    }
    // Everything here comes from the source: shown escaped, as any consent text.
    let mut text = crate::consent::one_line_max(&s.key, 100);
    if !marks.is_empty() {
        text.push_str(&format!(" ({})", marks.join(", ")));
    }
    if !s.description.is_empty() {
        text.push_str(&format!(": {}", crate::consent::one_line_max(&s.description, 200)));
    }
    if s.multiple {
        text.push_str(" [several values: one a line, an empty line ends]");
    }
    if let Some(d) = s.default.as_ref().filter(|_| !s.secret) {
        // A default is part of what runs when the answer is left empty: shown whole.
        text.push_str(&format!(" [default: {}]", crate::text::whole_line(&d.replace(SEP, ", "))));
    }
    if !s.choices.is_empty() {
        text.push_str(&format!(" [choices: {}]", crate::text::whole_line(&s.choices.join(", "))));
    }
    text
}

/// Asks for every setting not given with --set; an empty answer keeps the default.
fn ask_settings(plan: &Plan, answers: &mut HashMap<String, String>) -> anyhow::Result<()> {
    for s in &plan.settings {
        if answers.contains_key(&s.key) {
            continue;
        }
        loop {
            let prompt = format!("{}: ", describe(s));
            let value = if s.secret { read_secret(&prompt)? } else { read_line(&prompt)? };
            if value.is_empty() && s.required && s.default.is_none() && !answers.contains_key(&s.key) {
                eprintln!("{} is required", s.key);
                continue;
            }
            if !value.is_empty() {
                if let Err(e) = s.check(&value) {
                    eprintln!("{e}");
                    continue;
                }
                match answers.get_mut(&s.key) {
                    Some(values) => {
                        values.push(SEP);
                        values.push_str(&value);
                    }
                    None => {
                        answers.insert(s.key.clone(), value);
                    }
                }
                if s.multiple {
                    continue;
                }
            }
            break;
        }
    }
    Ok(())
}

fn read_line(prompt: &str) -> anyhow::Result<String> {
    eprint!("{prompt}");
    std::io::stderr().flush()?;
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line)? == 0 {
        bail!("nothing was installed: the input ended");
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

/// Reads a line with the terminal's echo off (`stty`, on the terminal that is stdin), and
/// turns it back on whatever happens.
fn read_secret(prompt: &str) -> anyhow::Result<String> {
    let stty = |arg: &str| {
        std::process::Command::new("stty")
            .arg(arg)
            .stdin(std::process::Stdio::inherit())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !stty("-echo") {
        bail!("cannot turn the terminal's echo off to ask for a secret: give it with --set KEY=VALUE");
    }
    let line = read_line(prompt);
    stty("echo");
    eprintln!();
    line
}

fn confirm(question: &str) -> anyhow::Result<bool> {
    Ok(matches!(read_line(question)?.trim(), "y" | "Y" | "yes"))
}
