//! The servers as the app shows them: their start, their status and tools in the picker, and
//! what changes when a server's tools or resources change.

use super::*;

impl Controller {
    /// Every server was tried: open the tools still waiting, or fail when no server works.
    pub(super) fn on_started(&mut self) {
        self.servers_started = true;
        let servers = self.servers.servers();
        let failed: Vec<String> = servers
            .iter()
            .filter_map(|s| match &s.status {
                ServerStatus::Failed { reason, .. } => Some(reason.clone()),
                _ => None,
            })
            .collect();
        if !failed.is_empty() && failed.len() == servers.len() {
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
        let ready: Vec<&str> =
            servers.iter().filter(|s| s.status == ServerStatus::Ready).map(|s| s.label.as_str()).collect();
        self.status(&format!("Connected to {}", ready.join(", ")), !failed.is_empty());
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
                if let ServerStatus::Failed { reason, .. } = &status {
                    if self.servers_started && self.exiting.is_none() {
                        self.status(&format!("{} failed: {reason}", self.label(&server)), true);
                    }
                    // Nobody waits for this server's questions any more.
                    let orphaned: Vec<u64> =
                        self.elicits.iter().filter(|(_, (s, _))| *s == server).map(|(d, _)| *d).collect();
                    for dialog in orphaned {
                        self.elicits.remove(&dialog);
                        self.elicit_cmds.remove(&dialog);
                        self.shell(ShellCommand::Dismiss { dialog });
                    }
                }
                self.show_servers();
            }
            ServerEventKind::Change(change) => self.on_server_change(&server, change),
        }
    }

    /// A server's announcement reaches its own Views (the registry re-read its lists already).
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
            ServerChange::ResourceUpdated(uri) if self.options.preview && self.options.html.is_none() => {
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
        let remembered = self.chat.as_ref().and_then(|_| self.approvals()).map(|a| a.load()).unwrap_or_default();
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
                let (reason, retry_in) = match &info.status {
                    ServerStatus::Failed { reason, retry_at } => {
                        (Some(reason.clone()), Some(retry_at.saturating_duration_since(Instant::now()).as_secs_f64().ceil()))
                    }
                    ServerStatus::SignInRequired { .. } => {
                        (Some("This server needs you to sign in; your browser will open.".to_owned()), None)
                    }
                    ServerStatus::SigningIn => (Some("Finish signing in in your browser.".to_owned()), None),
                    _ => (None, None),
                };
                // `name` is the key the shell sends back; `label` is what it shows.
                // The revision negotiated with it, for the person (and bug reports).
                let protocol = self.servers.current(&info.name).and_then(|c| c.revision_label());
                // The server's own words about using it (what the model is told, as the model
                // gets them: cut to the conversation's bound).
                let instructions = self.servers.current(&info.name).and_then(|c| c.instructions()).map(|i| {
                    let mut shown: String = i.chars().take(conversation::MAX_INSTRUCTIONS_BYTES).collect();
                    if shown.len() < i.len() {
                        shown.push_str(" […]");
                    }
                    consent::block(&shown)
                });
                // When the model's calls to it ask first (only with a conversation).
                let approval = self.chat.as_ref().map(|_| {
                    let key = conversation::trust::Approvals::key(&info.identity);
                    remembered.get(&key).map(|r| r.mode).unwrap_or_default().as_str()
                });
                json!({"name": info.name, "label": info.label, "status": info.status.label(), "reason": reason,
                    "retryIn": retry_in, "tools": tools, "protocol": protocol, "approval": approval,
                    "instructions": instructions})
            })
            .collect();
        self.shell(ShellCommand::Servers { servers });
    }

    /// What the person sees for `server`: its label (see [`Registry::label`]), never its key.
    pub(super) fn label(&self, server: &str) -> String {
        self.servers.label(server).unwrap_or_else(|| server.to_owned())
    }
}
