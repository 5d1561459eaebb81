//! The servers as the app shows them: their start, their status and tools in the picker, and
//! what changes when a server's tools or resources change; the first-run welcome and the
//! servers editor, which change the config file the app read and start, stop or restart only
//! the servers whose entry changed.

use super::*;
use crate::install::config_file::{self, ConfigEntry};
use crate::install::Resolved;
use crate::server::config::{load_config, LoadOptions};
use crate::server::failure::in_words;

/// The lines of a server's log the person is shown (the server set keeps its stderr's tail).
const LOG_LINES: usize = 40;

/// The servers as the window shows them, beyond what the server set knows.
#[derive(Default)]
pub(super) struct ServerList {
    /// Set once every server was tried at start.
    started: bool,
    /// What the status line says about the servers, while it does: said again when one of
    /// them changes, so it never tells of a start that ended or a failure that has recovered.
    pub(super) said: Option<Said>,
    /// The welcome is shown.
    welcomed: bool,
    /// Why the servers editor's last change was refused, shown in it until the next one works.
    editor_error: Option<String>,
}

/// What the status line speaks of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Said {
    /// Every server (or that there is none yet).
    All,
    /// These servers.
    Servers(Vec<String>),
}

impl ServerList {
    /// The status line speaks of `server` (or of all servers).
    fn speaks_of(&self, server: &str) -> bool {
        match &self.said {
            Some(Said::All) => true,
            Some(Said::Servers(names)) => names.iter().any(|n| n == server),
            None => false,
        }
    }

    /// Whether every server was tried at start.
    pub(super) fn all_tried(&self) -> bool {
        self.started
    }
}

impl Controller {
    /// The status line says how the servers are: which failed (the first in words), which
    /// are still starting, which are connected; or that there is none yet. Said again when one
    /// of them changes, until something else takes the line.
    pub(super) fn say_servers(&mut self) {
        self.say_servers_of(None);
    }

    /// [`Self::say_servers`] of `names` only (a server just installed), else of all.
    pub(super) fn say_servers_of(&mut self, names: Option<Vec<String>>) {
        let mut servers = self.servers.servers();
        if let Some(names) = &names {
            servers.retain(|s| names.contains(&s.name));
        }
        let labels = |keep: &dyn Fn(&ServerStatus) -> bool| -> Vec<String> {
            servers.iter().filter(|s| keep(&s.status)).map(|s| s.label.clone()).collect()
        };
        let starting = labels(&|s| matches!(s, ServerStatus::Starting | ServerStatus::Reconnecting { .. }));
        let ready = labels(&|s| *s == ServerStatus::Ready);
        let failed = servers.iter().find_map(|s| match &s.status {
            ServerStatus::Failed { reason, .. } => Some((s, reason)),
            _ => None,
        });
        let (text, error) = if servers.is_empty() && names.is_none() {
            ("No servers yet: add one, or try the demo server.".to_owned(), false)
        } else if let Some((s, reason)) = failed {
            let said = in_words(reason, &self.servers.stderr_tail(&s.name)).said;
            let others = if ready.is_empty() { String::new() } else { format!(" Connected to {}.", ready.join(", ")) };
            (format!("{}: {said}{others}", s.label), true)
        } else if !starting.is_empty() {
            (format!("Starting {}…", starting.join(", ")), false)
        } else if !ready.is_empty() {
            (format!("Connected to {}", ready.join(", ")), false)
        } else {
            let states: Vec<String> = servers.iter().map(|s| format!("{} {}", s.label, s.status.label())).collect();
            (states.join(", "), false)
        };
        self.status(&text, error);
        self.server_list.said = Some(names.map_or(Said::All, Said::Servers));
    }

    /// Every server was tried: open the tools still waiting, or fail when no server works.
    pub(super) fn on_started(&mut self) {
        self.server_list.started = true;
        let servers = self.servers.servers();
        let unreadable = self.options.launch.config.as_deref().filter(|p| servers.is_empty() && p.exists());
        if let Some(Err(e)) = unreadable.map(|p| load_config(p, &LoadOptions::new())) {
            // A config file that cannot be read: the servers editor shows why, until it is
            // fixed and read again.
            self.status(&format!("{e}; fix it, then Reload config"), true);
            self.show_servers();
            // The model answers without tools meanwhile: `--prompt` is not left unsent.
            self.send_first_prompt();
            return;
        }
        if servers.is_empty() && self.options.launch.config.is_some() {
            // The first run: the welcome says what to do, and the model answers without tools.
            self.say_servers();
            self.show_servers();
            self.send_first_prompt();
            return;
        }
        let failed: Vec<String> = servers
            .iter()
            .filter_map(|s| match &s.status {
                ServerStatus::Failed { reason, .. } => Some(reason.clone()),
                _ => None,
            })
            .collect();
        // A person's app (servers from a config file, no tool named) stays open when no server
        // works: each says why in its card and offers Retry, and the servers page can fix them.
        let persons_app = self.options.launch.config.is_some() && self.options.opens.is_empty();
        if !failed.is_empty() && failed.len() == servers.len() && !persons_app {
            // Nothing works: say why, once per server, and stop.
            for reason in &failed[..failed.len() - 1] {
                eprintln!("error: {}", say(reason));
            }
            self.fail(&failed[failed.len() - 1]);
            return;
        }
        for reason in &failed {
            eprintln!("warning: {}", say(reason));
        }
        self.say_servers();
        self.open_startup_views(true);
        self.send_first_prompt();
    }

    /// A server changed status or announced a change.
    pub(super) fn on_server_event(&mut self, event: ServerEvent) {
        let ServerEvent { server, kind } = event;
        match kind {
            ServerEventKind::Status(status) => {
                if status == ServerStatus::Ready {
                    self.open_startup_views(false);
                }
                let speaking = self.server_list.started && !self.ending.is_exiting();
                match &status {
                    ServerStatus::Failed { reason, .. } if speaking => {
                        let said = in_words(reason, &self.servers.stderr_tail(&server)).said;
                        self.status(&format!("{}: {said}", self.label(&server)), true);
                        self.server_list.said = Some(Said::Servers(vec![server.clone()]));
                    }
                    // The status line speaks of this server (or of there being none): it says
                    // how things are now, not how they were.
                    _ if speaking && self.server_list.speaks_of(&server) => self.say_servers(),
                    _ => {}
                }
                if let ServerStatus::Failed { .. } = &status {
                    // Nobody waits for this server's questions any more.
                    for dialog in self.questions.drop_elicitations_of(&server) {
                        self.shell(ShellCommand::Dismiss { dialog });
                    }
                }
                self.show_servers();
            }
            ServerEventKind::Change(change) => self.on_server_change(&server, change),
        }
    }

    /// A server's announcement reaches its own Views (the server set re-read its lists already).
    pub(super) fn on_server_change(&mut self, server: &str, change: ServerChange) {
        let Some(conn) = self.servers.current(server) else { return };
        let open = |v: &&ViewState| v.phase.is_open() && v.server == server;
        match change {
            ServerChange::Tools => {
                for v in self.views.values().filter(open) {
                    v.handle.server_tools_changed();
                }
                self.show_servers();
            }
            ServerChange::Resources => {
                for v in self.views.values().filter(open) {
                    v.handle.server_resources_changed();
                }
            }
            ServerChange::ResourceUpdated(uri)
                if self.options.developer.panel && self.options.developer.html.is_none() =>
            {
                let shows_it = |tool: &str| {
                    conn.tool_ui(tool).and_then(|u| u.ok()).and_then(|u| u.resource_uri).as_deref()
                        == Some(uri.as_str())
                };
                let views: Vec<ViewId> = self
                    .views
                    .iter()
                    .filter(|(_, v)| open(v) && v.phase.is_live() && shows_it(&v.tool))
                    .map(|(id, _)| id.clone())
                    .collect();
                if views.is_empty() {
                    return;
                }
                if !self.live_reload_allowed(server, &uri) {
                    let line = format!(
                        "{server} announced more than {LIVE_RELOADS} updates of {uri} in {} s: live reload of it is paused (use Reload)",
                        LIVE_RELOAD_WINDOW.as_secs()
                    );
                    tracing::warn!("{}", say(&line));
                    self.status(&line, true);
                    return;
                }
                tracing::info!("{} was updated; reloading its Views", say(&uri));
                self.reload(views);
            }
            ServerChange::ResourceUpdated(_) => {}
        }
    }

    /// The tool picker: every server with its status, and the tools a person may call
    /// (visibility includes `model`), UI tools first. A failed server keeps its last known tools:
    /// calling one restarts it on demand.
    pub(super) fn show_servers(&mut self) {
        let index = self.servers.tools();
        // The remembered approval modes, read once for the whole list.
        let remembered =
            self.conversation.is_on().then(|| self.approvals()).flatten().map(|a| a.load()).unwrap_or_default();
        let told_apart = self.told_apart();
        let servers: Vec<Value> = self
            .servers
            .servers()
            .into_iter()
            .map(|info| {
                let mut tools: Vec<Value> = index
                    .iter()
                    .filter(|t| t.server == info.name)
                    .filter_map(|entry| {
                        let t = &entry.tool;
                        let ui = entry.ui.as_ref().ok()?;
                        ui.visibility.model.then(|| {
                            json!({
                                "name": t["name"], "title": t.get("title").or_else(|| t.get("annotations").and_then(|a| a.get("title"))),
                                "description": t.get("description"), "hasUi": ui.resource_uri.is_some(),
                                "inputSchema": t.get("inputSchema"),
                            })
                        })
                    })
                    .collect();
                tools.sort_by_key(|t| t["hasUi"] != true);
                let mut details = None;
                let (reason, retry_in) = match &info.status {
                    ServerStatus::Failed { reason, retry_at } => {
                        // Words for the person; the reason as the log has it behind "Details".
                        let words = in_words(reason, &self.servers.stderr_tail(&info.name));
                        details = (words.details != words.said).then(|| consent::block(&words.details));
                        (Some(words.said), Some(retry_at.saturating_duration_since(Instant::now()).as_secs_f64().ceil()))
                    }
                    ServerStatus::SignInRequired { .. } => {
                        (Some("This server needs you to sign in; your browser will open.".to_owned()), None)
                    }
                    ServerStatus::SigningIn => (Some("Finish signing in in your browser.".to_owned()), None),
                    _ => (None, None),
                };
                // How long it has been starting (the window counts on from there).
                let started_ago = matches!(info.status, ServerStatus::Starting | ServerStatus::Reconnecting { .. })
                    .then(|| info.since.elapsed().as_secs_f64());
                // `name` is the key the shell sends back; `label` is what it shows.
                // The revision negotiated with it, for the person (and bug reports).
                let protocol = self.servers.current(&info.name).and_then(|c| c.revision_label());
                // The server's own words about using it (what the model is told, as the model
                // gets them: cut to the conversation's bound).
                let instructions = self.servers.current(&info.name).and_then(|c| c.instructions()).map(|i| {
                    let mut shown: String = i.chars().take(crate::conversation::MAX_INSTRUCTIONS_BYTES).collect();
                    if shown.len() < i.len() {
                        shown.push_str(" […]");
                    }
                    consent::block(&shown)
                });
                // When the model's calls to it ask first (only with a conversation).
                let approval = self.conversation.is_on().then(|| {
                    let key = crate::conversation::trust::Approvals::key(&info.identity);
                    remembered.get(&key).map(|r| r.mode).unwrap_or_default().as_str()
                });
                // What it calls itself goes beside its label, never instead (a server may not
                // rename itself); what tells it from an entry with its command line, too.
                json!({"name": info.name, "label": info.label, "callsItself": info.calls_itself,
                    "differs": told_apart.get(&info.name), "status": info.status.label(), "reason": reason,
                    "details": details, "retryIn": retry_in, "startedAgo": started_ago, "tools": tools, "protocol": protocol, "approval": approval,
                    "instructions": instructions})
            })
            .collect();
        let editor = self.editor();
        // A file that cannot be read is fixed first: no welcome offers to write into it.
        let broken = editor.as_ref().is_some_and(|e| e["broken"] == true);
        self.shell(ShellCommand::Servers { servers, editor });
        if let Some(path) = &self.options.launch.config {
            let shown = self.servers.names().is_empty() && !broken;
            if shown || self.server_list.welcomed {
                self.server_list.welcomed = shown;
                let config = path.display().to_string();
                self.shell(ShellCommand::Welcome { shown, config });
            }
        }
    }

    /// For each server of the config file whose command line another entry shares, what tells
    /// it apart (`in /home/a/notes, env: FOO`), by name: two programs behind one line are two
    /// servers, and the person must be able to see which is which (see `ServerSpec::identity`).
    fn told_apart(&self) -> HashMap<String, String> {
        let Some(specs) = self.options.launch.config.as_ref().and_then(|p| load_config(p, &LoadOptions::new()).ok())
        else {
            return HashMap::new();
        };
        let specs: Vec<&ServerSpec> = specs.servers.iter().collect();
        let said = crate::server::config::tell_apart(&specs, &crate::server::config::Surroundings::host());
        specs
            .iter()
            .zip(said)
            .filter_map(|(spec, said)| Some((spec.name().to_owned(), consent::one_line_max(&said?, 300))))
            .collect()
    }

    /// The servers editor's part of the picker: the config file's entries (disabled ones too),
    /// each with the rule the loader found it breaking; `broken` when the file itself cannot be
    /// read (its error then says why, and nothing is written over it until it is fixed).
    fn editor(&self) -> Option<Value> {
        let path = self.options.launch.config.as_ref()?;
        let (entries, error, broken) = match config_file::entries(path) {
            Ok(entries) => (entries, self.server_list.editor_error.clone(), false),
            Err(e) => (Vec::new(), Some(e), true),
        };
        let problems = match broken || entries.is_empty() {
            true => Vec::new(),
            false => load_config(path, &LoadOptions::new()).map(|l| l.errors).unwrap_or_default(),
        };
        let told_apart = self.told_apart();
        let entries: Vec<Value> = entries
            .into_iter()
            .map(|ConfigEntry { name, disabled, what }| {
                let problem = problems.iter().find(|e| e.entry == name).map(|e| consent::one_line_max(&e.rule, 500));
                json!({"name": consent::one_line_max(&name, 200), "key": name, "disabled": disabled,
                    "what": consent::one_line_max(&what, 300), "differs": told_apart.get(&name), "error": problem})
            })
            .collect();
        let found = if broken { Vec::new() } else { found_elsewhere(path) };
        Some(json!({"config": consent::one_line(&path.display().to_string()), "entries": entries,
            "error": error.map(|e| consent::one_line_max(&e, 1000)), "broken": broken, "found": found}))
    }

    /// "Add the demo server": the embedded demo server's entry goes into the config file (as
    /// `demo`, or `demo-2`... when that name is taken), then it starts in this window.
    pub(super) fn add_demo(&mut self) {
        let (command, args) = match self.options.launch.demo_command.clone() {
            Some(entry) => entry,
            None => match crate::server::config::builtin_server_entry("demo") {
                Ok(entry) => entry,
                Err(e) => return self.editor_failed(format!("cannot find this program to run its demo server: {e}")),
            },
        };
        let taken: Vec<String> = self
            .options
            .launch
            .config
            .as_deref()
            .and_then(|p| config_file::entries(p).ok())
            .unwrap_or_default()
            .into_iter()
            .map(|e| e.name)
            .collect();
        let name = std::iter::once("demo".to_owned())
            .chain((2..).map(|n| format!("demo-{n}")))
            .find(|n| !taken.contains(n))
            .unwrap_or_default();
        self.edit_config(|path| {
            config_file::add_server(path, &name, &Resolved::Stdio { command, args, env: Vec::new() }, false).map(|_| ())
        });
    }

    /// The servers editor adds `line`: an `https://` (or local `http://`) URL, else a command
    /// line.
    pub(super) fn add_server(&mut self, name: &str, line: &str) {
        let (entry, derived) = match entry_of_line(line) {
            Ok(entry) => entry,
            Err(e) => return self.editor_failed(format!("cannot add {:?}: {e}", line.trim())),
        };
        let name = match name.trim() {
            "" => derived,
            given => given.to_owned(),
        };
        self.edit_config(|path| config_file::add_server(path, &name, &entry, false).map(|_| ()));
    }

    /// The servers editor changes `server`'s entry: it runs `line` (a command line or a URL)
    /// and, when `name` is given, is called that. `apply_config` then restarts it only if its
    /// entry changed; a renamed one stops under its old name and starts under the new.
    pub(super) fn edit_server(&mut self, server: &str, name: &str, line: &str) {
        let (entry, _) = match entry_of_line(line) {
            Ok(entry) => entry,
            Err(e) => return self.editor_failed(format!("cannot change {server:?} to {:?}: {e}", line.trim())),
        };
        let name = match name.trim() {
            "" => server.to_owned(),
            given => given.to_owned(),
        };
        self.edit_config(|path| config_file::edit_server(path, server, &name, &entry));
    }

    /// The servers editor imports the servers of the config file at `file` (typed, or chosen in
    /// the file chooser) into the app's; the status line says what came in and what did not.
    pub(super) fn import_config(&mut self, file: &str) {
        let file = file.trim();
        let source = match (file.strip_prefix("~/"), std::env::var_os("HOME")) {
            (Some(rest), Some(home)) => std::path::Path::new(&home).join(rest),
            _ => std::path::PathBuf::from(file),
        };
        if file.is_empty() {
            return self.editor_failed("give the path of a config file to import".into());
        }
        let mut imported = None;
        self.edit_config(|path| config_file::import(path, &source).map(|done| imported = Some(done)));
        let Some(imported) = imported else { return };
        let added: Vec<String> = imported
            .added
            .iter()
            .map(|(from, to)| if from == to { to.clone() } else { format!("{from} as {to} (that name was taken)") })
            .collect();
        let mut line = match added.len() {
            0 => format!("Imported no server from {}", source.display()),
            n => format!(
                "Imported {n} server{} from {}: {}",
                if n == 1 { "" } else { "s" },
                source.display(),
                added.join(", ")
            ),
        };
        if !imported.skipped.is_empty() {
            let skipped: Vec<String> = imported.skipped.iter().map(|(name, why)| format!("{name} ({why})")).collect();
            line.push_str(&format!("; skipped {}", skipped.join("; ")));
        }
        tracing::info!("{}", say(&line));
        self.status(&line, !imported.skipped.is_empty());
    }

    /// The servers editor reads the config file again (the person fixed it) and brings the
    /// running servers in line with it.
    pub(super) fn reload_config(&mut self) {
        self.edit_config(|_| Ok(()));
        if self.server_list.editor_error.is_none() {
            let path = self.options.launch.config.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
            self.status(&format!("Read {path} again"), false);
        }
    }

    /// The servers editor removes `server`'s entry.
    pub(super) fn remove_server(&mut self, server: &str) {
        let identity = self.servers.identity(server);
        self.edit_config(|path| config_file::remove_server(path, server));
        // Its Views' kept storage goes with it (unless another entry runs the same server).
        let removed = self.server_list.editor_error.is_none() && self.servers.identity(server).is_none();
        if let Some(identity) = identity
            .filter(|i| removed && !self.servers.names().iter().any(|n| self.servers.identity(n).as_ref() == Some(i)))
        {
            let label = crate::sandbox::sandbox_label(&identity);
            let kept = self.options.places.view_storage.clone().or_else(crate::sandbox::storage::KeptStorage::user);
            if let Err(e) = kept.map_or(Ok(()), |k| k.remove(&label)) {
                tracing::warn!(server, "cannot remove the storage kept for the server's Views: {e}");
            }
            // And what this run holds of it (WebKit's memory, the Views still open): a server
            // added again starts empty.
            let _ = self.ui.send_event(UserEvent::Frame(FrameOp::Forget { label }));
        }
    }

    /// The servers editor enables or disables `server`.
    pub(super) fn enable_server(&mut self, server: &str, enabled: bool) {
        self.edit_config(|path| config_file::set_disabled(path, server, !enabled));
    }

    /// A server's log for the person: its stderr's last lines, and why it failed if it did.
    pub(super) fn server_log(&mut self, server: &str) {
        let mut lines = self.servers.stderr_tail(server);
        if let Some(ServerStatus::Failed { reason, .. }) = self.servers.status(server) {
            lines.push(reason);
        }
        let start = lines.len().saturating_sub(LOG_LINES);
        let lines = lines[start..].iter().map(|l| consent::one_line_max(l, 500)).collect();
        self.shell(ShellCommand::ServerLog { server: server.to_owned(), lines });
    }

    /// Changes the config file with `edit` (which checks the new file with the loader before it
    /// replaces the old one), then brings the running servers in line with it.
    fn edit_config(&mut self, edit: impl FnOnce(&std::path::Path) -> Result<(), String>) {
        let Some(path) = self.options.launch.config.clone() else {
            return self.editor_failed(
                "these servers were given on the command line: there is no config file to change".into(),
            );
        };
        match edit(&path) {
            Ok(()) => {
                self.server_list.editor_error = None;
                self.apply_config(&path);
            }
            Err(e) => self.editor_failed(e),
        }
    }

    fn editor_failed(&mut self, reason: String) {
        tracing::warn!("{}", say(&reason));
        self.status(&reason, true);
        self.server_list.editor_error = Some(reason);
        self.show_servers();
    }

    /// Brings the server set in line with the config file: new entries start, gone (or disabled)
    /// ones stop, and a server restarts only when its own entry changed.
    pub(super) fn apply_config(&mut self, path: &std::path::Path) {
        let load = match load_config(path, &LoadOptions::new()) {
            Ok(load) => load,
            Err(e) => return self.editor_failed(e.to_string()),
        };
        let running = self.servers.names();
        for name in &running {
            if !load.servers.iter().any(|s| s.name() == name) {
                tracing::info!(server = %name, "stopped: its entry is gone or disabled");
                self.servers.remove(name);
            }
        }
        for spec in load.servers {
            let name = spec.name().to_owned();
            match self.servers.spec(&name) {
                None => {
                    tracing::info!(server = %name, "started: its entry is new or enabled");
                    self.servers.add(spec);
                }
                Some(old) if old != spec => {
                    tracing::info!(server = %name, "restarted: its entry changed");
                    let servers = self.servers.clone();
                    tokio::spawn(async move {
                        if let Err(e) = servers.replace(&name, spec).await {
                            tracing::warn!(server = %name, "restart failed: {e}");
                        }
                    });
                }
                Some(_) => {}
            }
        }
        self.show_servers();
    }

    /// What the person sees for `server`: its label (see [`ServerSet::label`]), never its key.
    pub(super) fn label(&self, server: &str) -> String {
        self.servers.label(server).unwrap_or_else(|| server.to_owned())
    }

    /// `server`'s label with what it calls itself beside it (`notes (calls itself "Vault")`),
    /// for a View's card: the given name first, the server's own words after, never instead.
    pub(super) fn label_and_own_name(&self, server: &str) -> String {
        let label = consent::one_line_max(&self.label(server), 80);
        match self.servers.calls_itself(server) {
            Some(own) => format!("{label} (calls itself \"{own}\")"),
            None => label,
        }
    }
}

/// What the servers editor's `line` runs or reaches: an `https://` (or local `http://`) URL,
/// else a command line; and the name made from it.
fn entry_of_line(line: &str) -> Result<(Resolved, String), String> {
    let line = line.trim();
    let remote = line.starts_with("https://") || line.starts_with("http://");
    let derived =
        if remote { ServerSpec::from_url(line, &[] as &[String]) } else { ServerSpec::from_command_line(line) };
    let spec = derived.map_err(|e| e.to_string())?;
    let name = spec.name().to_owned();
    let entry = match spec {
        ServerSpec::Stdio { program, args, .. } => Resolved::Stdio { command: program, args, env: Vec::new() },
        ServerSpec::StreamableHttp { url, .. } => {
            Resolved::Remote { url: url.to_string(), sse: false, headers: Vec::new() }
        }
        ServerSpec::Sse { url, .. } => Resolved::Remote { url: url.to_string(), sse: true, headers: Vec::new() },
        _ => return Err("give a command line or a URL".into()),
    };
    Ok((entry, name))
}

/// Other clients' config files on this machine (see [`crate::install::other_clients`]) that the
/// editor offers to import into `config`: each with how many servers it has and how many of them
/// the person does not have yet.
fn found_elsewhere(config: &std::path::Path) -> Vec<Value> {
    let yours: Vec<String> = load_config(config, &LoadOptions::new())
        .map(|l| l.servers.iter().map(ServerSpec::identity).collect())
        .unwrap_or_default();
    crate::install::other_clients::found()
        .into_iter()
        .filter(|f| !crate::install::other_clients::same_file(&f.path, config))
        .filter_map(|f| {
            let load = load_config(&f.path, &LoadOptions::new()).ok()?;
            let new = load.servers.iter().filter(|s| !yours.contains(&s.identity())).count();
            Some(json!({"client": f.client, "path": consent::one_line(&home_relative(&f.path)),
                "key": f.path.to_string_lossy(), "servers": load.servers.len(), "new": new}))
        })
        .collect()
}

/// `path` as a person reads it: under their home folder as `~/…`.
fn home_relative(path: &std::path::Path) -> String {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from).filter(|h| h.is_absolute());
    match home.as_deref().and_then(|h| path.strip_prefix(h).ok()) {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}
