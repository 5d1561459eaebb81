//! Opening a tool call end to end: the call, its UI resource read, the session started, the
//! View mounted in a card and a webview of its own; what its session reports; its teardown.

use super::*;

/// How long after a View started from a kept UI resource the resource is read again: past the
/// View's first seconds, its busiest (its load, its first calls). Read at once, the server's
/// answer and its parse took the CPU from the View's load (measured); a few seconds later they
/// would still land in the middle of what the View does first.
const UI_REFRESH_DELAY: Duration = Duration::from_secs(10);
/// At most this many servers get a web process before they answered (see
/// [`Controller::prepare_startup_frames`]).
const MAX_PREPARED: usize = 2;

mod reports;

/// The Views of the run: open ones, ones being prepared, the ones named at start, and what a
/// View's session, setup and call report back on.
pub(super) struct Views {
    /// Mounted Views (open, closing, or gone and kept for the exit goals), by id.
    open: HashMap<ViewId, ViewState>,
    /// Views still being prepared, by id (they move into `open` when mounted).
    pending: HashMap<ViewId, Pending>,
    /// Cached results handed to reloaded Views instead of calling the tool again.
    cached_results: HashMap<ViewId, Value>,
    /// Tool results that arrived before their View was mounted.
    early_results: HashMap<ViewId, Value>,
    /// The number in the next View's id (`v1`, `v2`, ...).
    next_view: u64,
    /// Tools named at start whose server is not ready yet: each opens when its own server is.
    startup_waiting: Vec<StartupOpen>,
    /// Ids of the Views named at start (their failure is the run's).
    startup_ids: HashSet<ViewId>,
    /// Where sessions, fetches and tool calls report back (set when the loop starts).
    channels: Option<Channels>,
    /// Where a View's teardown says it is done.
    teardowns: mpsc::UnboundedSender<ViewId>,
    /// The sessions of Views opened for a model's call, until the conversation takes them.
    model_sessions: HashMap<ViewId, oneshot::Receiver<ViewHandle>>,
}

impl Views {
    pub(super) fn new(teardowns: mpsc::UnboundedSender<ViewId>) -> Self {
        Self {
            open: HashMap::new(),
            pending: HashMap::new(),
            cached_results: HashMap::new(),
            early_results: HashMap::new(),
            next_view: 1,
            startup_waiting: Vec::new(),
            startup_ids: HashSet::new(),
            channels: None,
            teardowns,
            model_sessions: HashMap::new(),
        }
    }

    /// A mounted View (open, closing, or gone and kept for the exit goals).
    pub(super) fn get(&self, id: &str) -> Option<&ViewState> {
        self.open.get(id)
    }

    pub(super) fn get_mut(&mut self, id: &str) -> Option<&mut ViewState> {
        self.open.get_mut(id)
    }

    pub(super) fn contains_key(&self, id: &str) -> bool {
        self.open.contains_key(id)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&ViewId, &ViewState)> {
        self.open.iter()
    }

    pub(super) fn keys(&self) -> impl Iterator<Item = &ViewId> {
        self.open.keys()
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &ViewState> {
        self.open.values()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    pub(super) fn insert(&mut self, id: ViewId, view: ViewState) {
        self.open.insert(id, view);
    }

    pub(super) fn remove(&mut self, id: &str) -> Option<ViewState> {
        self.open.remove(id)
    }

    /// Every mounted View, taken out (the web content restarts).
    pub(super) fn drain(&mut self) -> impl Iterator<Item = (ViewId, ViewState)> + '_ {
        self.open.drain()
    }

    /// Forgets every mounted View (closed Views' records are not needed by a fresh page).
    pub(super) fn clear(&mut self) {
        self.open.clear();
    }

    /// No View is open or being prepared.
    pub(super) fn idle(&self) -> bool {
        self.open.values().all(|v| !v.phase.is_open()) && self.pending.is_empty()
    }

    /// Whether `id` is being prepared (not mounted yet).
    pub(super) fn is_pending(&self, id: &str) -> bool {
        self.pending.contains_key(id)
    }

    pub(super) fn pending_mut(&mut self, id: &str) -> Option<&mut Pending> {
        self.pending.get_mut(id)
    }

    /// `id` is no longer being prepared (cancelled, failed or mounted).
    pub(super) fn remove_pending(&mut self, id: &str) -> Option<Pending> {
        self.pending.remove(id)
    }

    /// The Views being prepared, each with its server.
    pub(super) fn pending_servers(&self) -> impl Iterator<Item = (&ViewId, &str)> {
        self.pending.iter().map(|(id, p)| (id, p.server.as_str()))
    }

    /// The id the next View opened gets.
    pub(super) fn next_id(&self) -> ViewId {
        format!("v{}", self.next_view)
    }

    /// Takes the next View's id for a View opened later (named at start, a model's call).
    pub(super) fn reserve_id(&mut self) -> ViewId {
        let id = self.next_id();
        self.next_view += 1;
        id
    }

    /// Changes with every View opened (a recycle scheduled before one was opened is stale).
    pub(super) fn generation(&self) -> u64 {
        self.next_view
    }

    /// `id` reopens with `result` instead of calling its tool again.
    pub(super) fn cache_result(&mut self, id: &str, result: Value) {
        self.cached_results.insert(id.to_owned(), result);
    }

    /// `id` did not open: its cached result is dropped.
    pub(super) fn uncache(&mut self, id: &str) {
        self.cached_results.remove(id);
    }

    /// A tool's call failed (why): a View woken in its View's place is told so again.
    pub(super) fn call_failed(&mut self, id: &str, reason: &str) {
        if let Some(v) = self.open.get_mut(id) {
            v.call_failed = Some(reason.to_owned());
        }
    }

    /// `id`, being prepared, gets `result` at its mount (as a woken View's cached one).
    pub(super) fn result_for_mount(&mut self, id: &str, result: &Value) {
        if let Some(p) = self.pending.get_mut(id) {
            p.result = Some(result.clone());
        }
    }

    /// The outcome of a call made for a View that slept reaches `id`, woken in its place: kept,
    /// and told to it at once.
    pub(super) fn late_outcome(&mut self, id: &str, outcome: &std::result::Result<Value, String>) {
        let Some(v) = self.open.get_mut(id) else { return };
        match outcome {
            Ok(result) => {
                v.result = Some(result.clone());
                v.handle.tool_result(result.clone());
            }
            Err(e) => {
                v.call_failed = Some(e.clone());
                v.handle.tool_cancelled(Some(format!("tool call failed: {e}")));
            }
        }
    }

    /// A tool's result arrived: kept by its View, or for its mount if it is not mounted yet.
    pub(super) fn result_arrived(&mut self, id: &str, result: &Value) {
        match self.open.get_mut(id) {
            Some(v) => v.result = Some(result.clone()),
            None => {
                self.early_results.insert(id.to_owned(), result.clone());
            }
        }
    }

    /// Tools named at start, in order: each keeps its order's id (v1, v2, ...) whichever
    /// server is ready first.
    pub(super) fn named_at_start(&mut self, opens: Vec<(String, Map<String, Value>)>) {
        for (tool, arguments) in opens {
            let id = self.reserve_id();
            self.startup_ids.insert(id.clone());
            self.startup_waiting.push(StartupOpen { id, tool, arguments });
        }
    }

    /// Whether `id` was named at start (its failure is the run's).
    pub(super) fn is_startup(&self, id: &str) -> bool {
        self.startup_ids.contains(id)
    }

    /// The session of `id`, opened for a model's call (once it exists), for the call's task.
    pub(super) fn take_model_session(&mut self, id: &str) -> Option<oneshot::Receiver<ViewHandle>> {
        self.model_sessions.remove(id)
    }

    /// Where sessions, fetches and tool calls report back, once the loop runs.
    pub(super) fn set_channels(&mut self, channels: Channels) {
        self.channels = Some(channels);
    }

    pub(super) fn channels(&self) -> Channels {
        self.channels.clone().expect("channels exist while running")
    }
}

impl Controller {
    /// Starts the tool call and returns the future that fetches the UI and starts the session.
    pub(super) fn prepare_view(
        &mut self,
        entry: &ToolEntry,
        view_id: &str,
        arguments: Map<String, Value>,
        model_call: bool,
    ) -> Result<impl std::future::Future<Output = Setup> + Send + 'static> {
        let channels = self.views.channels.clone().expect("channels exist while running");
        let (out, results) = (channels.out, channels.results);
        let tool_name = entry.name().to_owned();
        let server = entry.server.clone();
        let tool = entry.tool.clone();
        let ui = entry.ui.clone()?;
        let openai_template = ui.openai_template;
        if ui.legacy_key_only {
            tracing::warn!(tool = %tool_name, "tool uses only the deprecated _meta[\"ui/resourceUri\"] key");
        }
        let uri = ui.resource_uri.ok_or_else(|| Error::NoUi { tool: tool_name.clone() })?;

        let trace = self.trace.clone();
        let view_id: ViewId = view_id.to_owned();
        let (session_tx, session_rx) = oneshot::channel::<ViewHandle>();
        let cached = if model_call { None } else { self.views.cached_results.remove(&view_id) };
        let pending =
            Pending { server: server.clone(), arguments: arguments.clone(), task: None, result: cached.clone() };
        self.views.pending.insert(view_id.clone(), pending);

        // A View woken in the place of one whose call is out: that call's outcome comes to it.
        let awaited = self.hibernation.opens_without_call(&view_id);
        if awaited {
            drop(session_rx);
        } else if model_call {
            // The model's call is made by the conversation once its arguments are complete (and
            // allowed): it takes the session from here (see `conversation.rs`, `model_call_started`).
            self.views.model_sessions.insert(view_id.clone(), session_rx);
        } else if cached.is_none() {
            // The tool call: its outcome goes to the View once the session exists. (A reload
            // gets its last result again at its mount, see `mount`: the tool is not called.)
            let (servers, server) = (self.servers.clone(), server.clone());
            let trace = trace.clone();
            let view_id = view_id.clone();
            let arguments = arguments.clone();
            let tool_name = tool_name.clone();
            tokio::spawn(async move {
                let outcome = call_tool_traced(&servers, &trace, Some(&view_id), &server, &tool_name, arguments).await;
                let Ok(handle) = session_rx.await else { return };
                match &outcome {
                    Ok(result) => handle.tool_result(result.clone()),
                    Err(e) => handle.tool_cancelled(Some(format!("tool call failed: {}", e.message))),
                }
                let _ = results.send((view_id, outcome.map_err(|e| e.to_string())));
            });
        }
        let html_file = self.options.developer.html.clone();
        let preview = self.options.developer.panel;
        let profile = self.options.profile.clone();
        let openai_shim = self.options.openai_shim && profile.as_ref().is_none_or(|p| p.openai_shim);
        let ui = self.ui.clone();

        let servers = self.servers.clone();
        let proxies = self.proxies.clone();
        let host_context = self.host_context(DisplayMode::Inline);
        let policy: Arc<dyn HostPolicy> = match &self.options.policy {
            Some(custom) => custom.0.clone(),
            None => Arc::new(DialogPolicy {
                asks: self.questions.asks(),
                consent: self.options.consent,
                opener: self.options.opener.clone(),
                downloads: self.options.places.downloads.clone().unwrap_or_else(default_downloads),
                display_modes: self.display_modes(),
                offers: self.options.profile.as_ref().map(|p| p.offers),
            }),
        };
        Ok(async move {
            let conn = servers.connection(&server).await?;
            let read = match &html_file {
                // An App author's local file stands in for the server's resource.
                Some(path) => {
                    let html = tokio::fs::read_to_string(path)
                        .await
                        .map_err(|e| Error::Desktop(format!("cannot read --html {}: {e}", path.display())))?;
                    Arc::new(
                        json!({"contents": [{"uri": uri, "mimeType": crate::protocol::RESOURCE_MIME_TYPE, "text": html}]}),
                    )
                }
                None => {
                    // The HTML itself is in the host->proxy record; here only how many contents came.
                    let shown = |read: &Value| json!({"contents": read.get("contents").and_then(Value::as_array).map_or(0, Vec::len)});
                    let params = json!({"uri": uri});
                    // Preview shows an App author the resource as the server has it now.
                    match conn.kept_ui_resource(&uri).filter(|_| !preview) {
                        // The copy the last View of this resource got: this View starts without
                        // waiting for the server, and the resource is read again for the next.
                        Some((kept, refresh)) => {
                            if refresh {
                                let (conn, trace, uri) = (conn.clone(), trace.clone(), uri.clone());
                                tokio::spawn(async move {
                                    // Once the View had its start: on a busy machine the server's
                                    // answer and its parse would take CPU from the View's load.
                                    tokio::time::sleep(UI_REFRESH_DELAY).await;
                                    let read = conn.read_ui_resource(uri);
                                    let read = trace.server_call(None, methods::RESOURCES_READ, &params, read, shown);
                                    if let Err(e) = read.await {
                                        tracing::info!("the UI resource could not be read again: {}", e.message);
                                    }
                                });
                            }
                            kept
                        }
                        None => {
                            let read = conn.read_ui_resource(uri.clone());
                            let read = trace.server_call(Some(&view_id), methods::RESOURCES_READ, &params, read, shown);
                            Arc::new(read.await.map_err(|e| Error::Request {
                                server: server.clone(),
                                method: format!("resources/read {uri}"),
                                reason: e.to_string(),
                            })?)
                        }
                    }
                }
            };
            let resource = ui_resource_from_read(&uri, &read, conn.listed_resource(&uri).as_ref())?;
            for w in &resource.meta.warnings {
                tracing::warn!(resource = %uri, "{w}");
            }
            // A host profile honours only the fields its host does.
            let honoured = profile.as_ref().map(|p| p.honoured_csp(resource.meta.csp.as_ref()));
            let csp = build_csp(honoured.as_ref().map_or(resource.meta.csp.as_ref(), Option::as_ref));
            for r in &csp.rejected {
                tracing::warn!(resource = %uri, "CSP entry {:?} in {} rejected: {}", r.entry, r.field, r.reason);
            }
            tracing::info!(resource = %uri, "CSP: {}", csp.header);
            let label = sandbox_label(&servers.identity(&server).unwrap_or_default());
            let clipboard_write = resource.meta.permissions.as_ref().is_some_and(|p| p.clipboard_write.is_some());
            proxies.insert(&view_id, ProxyPolicy { label: label.clone(), csp: csp.header.clone(), clipboard_write });
            if preview && html_file.is_none() {
                // Hot reload on resources/updated needs the server to announce them.
                if let Err(e) = conn.subscribe(&uri).await {
                    tracing::info!(resource = %uri, "no live reload from the server: {e}");
                }
            }
            if preview {
                let cmd = ShellCommand::Csp {
                    view: view_id.clone(),
                    header: csp.header.clone(),
                    granted: serde_json::to_value(&csp.granted).unwrap_or_default(),
                    rejected: csp
                        .rejected
                        .iter()
                        .map(|r| json!({"field": r.field, "entry": r.entry, "reason": r.reason}))
                        .collect(),
                };
                let _ = ui.send_event(UserEvent::Shell(cmd.to_text()));
            }

            let shim = openai_shim && (resource.openai_template || openai_template);
            // The View's document is served by URL from its origin (with its CSP header), so
            // its frame streams it and a proxy page made in advance can take it. An OpenAI
            // widget's document is written by the proxy instead: its scripts wait for the shim.
            let (html, document_url) = if shim {
                (resource.html, None)
            } else {
                // The session needs the HTML only to trace it.
                let traced = if trace.is_recording() { resource.html.clone() } else { String::new() };
                let token = proxies.put_document(&view_id, resource.html);
                (traced, Some(document_url(&label, &view_id, &token)))
            };
            let mut config = ViewConfig::new(view_id.clone(), tool, html);
            config.document_url = document_url;
            // What the person sees (consent prompts, the side panel): the server's label.
            config.server_name = servers.label(&server).unwrap_or_else(|| server.clone());
            // The controller relays the server's list_changed notifications (see `on_server_change`).
            config.forwards_list_changed = true;
            config.openai_shim = shim;
            config.granted_csp = csp.granted;
            if let Some(p) = &profile {
                config.host_info =
                    crate::protocol::Implementation::new(p.host_info.name.clone(), p.host_info.version.clone());
            }
            config.granted_permissions = resource.meta.permissions.clone().filter(|p| !p.is_empty());
            config.host_context = host_context;
            config.policy = policy;
            // Messages for the View go from its session straight to the UI thread, into its
            // own webview: the controller does not relay them (the hot path).
            config.post_sink = Some(ui.line_to(view_id.clone()));
            let handle = ViewSession::spawn(config, servers.port(&server), out, trace);
            if !model_call {
                handle.tool_input(arguments);
            }
            let _ = session_tx.send(handle.clone());
            Ok(handle)
        })
    }

    pub(super) fn host_context(&self, mode: DisplayMode) -> HostContext {
        HostContext {
            theme: Some(self.theme),
            styles: Some(host_styles(self.theme)),
            display_mode: Some(mode),
            available_display_modes: Some(self.display_modes()),
            container_dimensions: Some(self.container(mode)),
            locale: Some(crate::protocol::locale::bcp47_locale(sys_locale::get_locale().as_deref())),
            time_zone: Some(crate::protocol::locale::iana_time_zone(iana_time_zone::get_timezone().ok().as_deref())),
            user_agent: Some(format!("mcp-apps-host/{}", env!("CARGO_PKG_VERSION"))),
            platform: Some(self.options.profile.as_ref().map_or("desktop", |p| p.platform.as_str()).to_owned()),
            device_capabilities: Some(json!({"touch": false, "hover": true})),
            ..Default::default()
        }
    }

    /// Calls `tool` with `arguments`: a View for tools with a UI, a text card for the others.
    /// `server` picks the server; without it the tool's name must be unique among the servers
    /// (or given as `server/tool`).
    pub(super) fn open(
        &mut self,
        server: Option<&str>,
        tool: &str,
        arguments: Map<String, Value>,
        how: Opening,
    ) -> Result<()> {
        let entry = match (server, self.servers.find_tool(server, tool)) {
            (None, Err(e)) => match tool.split_once('/') {
                Some((server, name)) if self.servers.names().iter().any(|n| n == server) => {
                    self.servers.find_tool(Some(server), name)?
                }
                _ => return Err(e),
            },
            (_, found) => found?,
        };
        let id: ViewId = match &how {
            Opening::Startup(id) | Opening::Model(id) => id.clone(),
            _ => {
                let id = format!("v{}", self.views.next_view);
                self.views.next_view += 1;
                id
            }
        };
        let has_ui = entry.ui.as_ref().is_ok_and(|u| u.resource_uri.is_some());
        if !has_ui && how == Opening::Person {
            self.call_plain(&entry, &id, arguments);
            return Ok(());
        }
        let fetch = self.prepare_view(&entry, &id, arguments, matches!(how, Opening::Model(_)))?;
        // A sleeping View's card stands for it while it wakes.
        if how != Opening::Wake {
            let label = tool_label(entry.name());
            self.status(&format!("Calling {label} on {}…", self.label(&entry.server)), false);
            self.shell(ShellCommand::Pending { view: id.clone(), title: card_title(&entry) });
        }
        let setup = self.views.channels.clone().expect("running").setup;
        let tool = entry.name().to_owned();
        let view = id.clone();
        let task = tokio::spawn(async move {
            let outcome = fetch.await;
            let _ = setup.send((view, tool, outcome));
        });
        if let Some(pending) = self.views.pending.get_mut(&id) {
            pending.task = Some(task.abort_handle());
        }
        Ok(())
    }

    /// The servers the tools named at start will open on start their web process now, while
    /// they connect: a cold start's first View then waits for the slower of the two, not for
    /// one after the other (measured: about 200 ms of a cold start was the View's web process
    /// starting after the server had answered). A bare tool name may open on any server: its
    /// servers are prepared only when they are few, so that a long config does not start a
    /// process for each of its servers. A prepared process no View came to goes after 30 s.
    pub(super) fn prepare_startup_frames(&self) {
        let names = self.servers.names();
        let mut servers: Vec<&String> = Vec::new();
        for open in &self.views.startup_waiting {
            match open.tool.split_once('/') {
                Some((server, _)) if names.iter().any(|n| n == server) => {
                    servers.extend(names.iter().filter(|n| *n == server));
                }
                _ => servers.extend(names.iter()),
            }
        }
        let mut labels: Vec<String> = Vec::new();
        for server in servers {
            let label = sandbox_label(&self.servers.identity(server).unwrap_or_default());
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
        if labels.len() > MAX_PREPARED {
            return;
        }
        for label in labels {
            let _ = self.ui.send_event(UserEvent::Frame(FrameOp::Prepare { label }));
        }
    }

    /// Opens the tools named at start whose server is ready now; each waits for its own server
    /// only. Once every server was tried (`settled`), what still cannot open fails the run.
    pub(super) fn open_startup_views(&mut self, settled: bool) {
        if self.ending.is_exiting() || self.views.startup_waiting.is_empty() {
            return;
        }
        let ready: Vec<String> =
            self.servers.servers().into_iter().filter(|s| s.status == ServerStatus::Ready).map(|s| s.name).collect();
        let names = self.servers.names();
        let mut still = Vec::new();
        for open in std::mem::take(&mut self.views.startup_waiting) {
            // `server/tool` names its server; a bare name opens on the first ready server that has it.
            let target = match open.tool.split_once('/') {
                Some((server, name)) if names.iter().any(|n| n == server) => {
                    ready.iter().any(|r| r == server).then(|| (Some(server.to_owned()), name.to_owned()))
                }
                _ => ready
                    .iter()
                    .any(|r| self.servers.find_tool(Some(r), &open.tool).is_ok())
                    .then(|| (None, open.tool.clone())),
            };
            let outcome = match target {
                Some((server, name)) => {
                    self.open(server.as_deref(), &name, open.arguments.clone(), Opening::Startup(open.id.clone()))
                }
                None if settled => {
                    self.open(None, &open.tool, open.arguments.clone(), Opening::Startup(open.id.clone()))
                }
                None => {
                    still.push(open);
                    continue;
                }
            };
            if let Err(e) = outcome {
                // A tool named on the command line that cannot open is the run's failure.
                self.fail(&e.to_string());
                return;
            }
        }
        self.views.startup_waiting = still;
    }

    /// A tool without a UI: its result is shown as text.
    pub(super) fn call_plain(&mut self, entry: &ToolEntry, id: &str, arguments: Map<String, Value>) {
        let tool = entry.name().to_owned();
        self.shell(ShellCommand::Pending { view: id.to_owned(), title: card_title(entry) });
        let (servers, server, ui, trace, id) =
            (self.servers.clone(), entry.server.clone(), self.ui.clone(), self.trace.clone(), id.to_owned());
        tokio::spawn(async move {
            let outcome = call_tool_traced(&servers, &trace, Some(&id), &server, &tool, arguments).await;
            let (text, error) = match &outcome {
                Ok(r) => result_for_person(r),
                Err(e) => (e.to_string(), true),
            };
            let cmd =
                ShellCommand::Text { view: Some(id), title: tool_label(&tool), text: consent::block(&text), error };
            let _ = ui.send_event(UserEvent::Shell(cmd.to_text()));
        });
    }

    /// A View's first inline height, for the current window (see [`FIRST_HEIGHT_SHARE`]).
    pub(super) fn first_height(&self) -> f64 {
        ((self.window.1 - HEADER_PX - STREAM_CHROME_PX) * FIRST_HEIGHT_SHARE)
            .floor()
            .clamp(MIN_FIRST_HEIGHT, INLINE_MAX_HEIGHT)
    }

    pub(super) fn mount(&mut self, handle: ViewHandle, tool: &str) {
        self.recovery.view_mounted();
        let id = handle.id().to_owned();
        // A View that wakes takes its sleeper's card, height and place.
        let woken = self.woken(&id);
        let first_height = woken.as_ref().map_or_else(|| self.first_height(), |(_, h)| *h);
        let Pending { server, arguments, result: known, .. } = self.views.pending.remove(&id).unwrap_or_default();
        let label = sandbox_label(&self.servers.identity(&server).unwrap_or_default());
        // The card (with the slot) in the shell, the View in a webview of its own over the slot.
        self.shell(ShellCommand::Mount {
            view: id.clone(),
            origin: sandbox_origin(&label),
            title: self.servers.find_tool(Some(&server), tool).map_or_else(|_| tool_label(tool), |e| card_title(&e)),
            server: self.label_and_own_name(&server),
            height: first_height,
            replaces: woken.map(|(old, _)| old),
        });
        self.hibernation.mounted(&id, Instant::now());
        let src = format!("{}/proxy.html?view={id}", sandbox_origin(&label));
        let document = self.proxies.document_token(&id).map(|token| document_url(&label, &id, &token));
        let _ = self.ui.send_event(UserEvent::Frame(FrameOp::Mount(FrameMount {
            view: id.clone(),
            label: label.clone(),
            src,
            document,
            origins: self.proxies.policy(&id).map(|p| crate::sandbox::csp::request_origins(&p.csp)).unwrap_or_default(),
            clipboard_write: self.proxies.policy(&id).is_some_and(|p| p.clipboard_write),
            session: handle.clone(),
            height: first_height,
        })));
        self.status(&format!("{} from {}", tool_label(tool), self.label(&server)), false);
        // A reopened View has its last result from its mount: a stop at any moment after
        // reopens it with that result again, never with a call of its tool.
        if let Some(known) = &known {
            handle.tool_result(known.clone());
        }
        let early = self.views.early_results.remove(&id);
        let result = known.or(early);
        // Woken in the place of a View whose call failed: it hears so again, as that View did.
        let call_failed = self.hibernation.take_call_failed(&id);
        if let (Some(reason), None) = (&call_failed, &result) {
            handle.tool_cancelled(Some(format!("tool call failed: {reason}")));
        }
        self.views.insert(
            id,
            ViewState {
                handle,
                server,
                label,
                tool: tool.to_owned(),
                arguments,
                result,
                call_failed,
                phase: Phase::Mounted,
                reached: Milestones::default(),
                frame: FrameHeight::new(first_height),
                mode: DisplayMode::Inline,
                mode_changed: None,
                mode_tokens: MODE_CHANGE_BURST,
                person_chose_inline: false,
            },
        );
    }
}

/// A tool call of the host's own (the person's, the model's, a View's first): through the
/// server's port like a View's calls (restart and sign-in on demand), traced both ways.
pub(super) async fn call_tool_traced(
    servers: &Arc<ServerSet>,
    trace: &Trace,
    view: Option<&str>,
    server: &str,
    tool: &str,
    arguments: Map<String, Value>,
) -> std::result::Result<Value, crate::protocol::RpcError> {
    let params = json!({"name": tool, "arguments": arguments});
    let call = servers.port(server).call_tool(tool.to_owned(), Some(arguments), CallControl::default());
    trace.server_call(view, methods::TOOLS_CALL, &params, call, Value::clone).await
}

/// A tool result as a person reads it on a card (its text blocks, else its structured content)
/// and whether it is an error.
pub(super) fn result_for_person(result: &Value) -> (String, bool) {
    let blocks = result.get("content").and_then(Value::as_array).map(|b| content_text(b)).unwrap_or_default();
    let text = if blocks.is_empty() {
        result.get("structuredContent").map(Value::to_string).unwrap_or_default()
    } else {
        blocks
    };
    (text, result.get("isError") == Some(&Value::Bool(true)))
}

/// Where a View's document is served: its own URL of its server's sandbox origin, with the
/// token only the host knows (see `ProxyPages::put_document`).
fn document_url(label: &str, view: &str, token: &str) -> String {
    format!("{}/view.html?view={view}&t={token}", sandbox_origin(label))
}

/// What a tool's card is headed with: the tool's `title` (or its annotations' title), as a
/// person reads it, else its name. The server's words, so shown as one line of text only; what
/// a person decides on (consent) names the tool by its name.
pub(super) fn card_title(entry: &ToolEntry) -> String {
    let tool = &entry.tool;
    let title = tool
        .get("title")
        .and_then(Value::as_str)
        .or_else(|| tool.pointer("/annotations/title").and_then(Value::as_str));
    match title.map(str::trim).filter(|t| !t.is_empty()) {
        Some(title) => consent::one_line_max(title, 80),
        None => tool_label(entry.name()),
    }
}
