//! What the person does in the shell (pick a tool, answer a dialog, stop an App, change the
//! theme, resize the window) and the questions put to them (consent, elicitation, sampling).

use super::*;

impl Controller {
    pub(super) fn on_shell(&mut self, msg: ShellMessage) {
        match msg {
            ShellMessage::Alive => {
                if let Some(hung) = self.recovery.supervisor.alive(Instant::now()) {
                    let line = format!("the Apps respond again after {:.1} s", hung.as_secs_f64());
                    tracing::warn!("{line}");
                    self.trace.record(
                        None,
                        Direction::Diagnostic,
                        &json!({"kind": "responsive", "after_ms": hung.as_millis() as u64}),
                    );
                    let _ = self.ui.send_event(UserEvent::WebContent(WebContentOp::DismissHung));
                    self.status(&format!("The Apps were not responding; {line}."), false);
                }
            }
            ShellMessage::Ready if self.recovery.recycling => {
                // A fresh shell after a recycle or a stop: give it the state the old one had.
                self.recovery.recycling = false;
                self.shell_page.ready = true;
                self.recovery.supervisor.alive(Instant::now());
                self.trace.record(None, Direction::Diagnostic, &json!({"kind": "recycled"}));
                self.shell(ShellCommand::Theme { theme: self.theme });
                self.show_servers();
                for cmd in self.shell_page.history.clone() {
                    self.shell(cmd);
                }
                for text in std::mem::take(&mut self.shell_page.backlog) {
                    let _ = self.ui.send_event(UserEvent::Shell(text));
                }
                self.restore_views();
            }
            ShellMessage::Ready => {
                self.shell_page.ready = true;
                self.recovery.supervisor.alive(Instant::now());
                for text in std::mem::take(&mut self.shell_page.backlog) {
                    let _ = self.ui.send_event(UserEvent::Shell(text));
                }
                if let Some(script) = self.options.automation.clone() {
                    let _ = self.ui.send_event(UserEvent::Eval(script));
                }
                self.show_install_request();
            }
            ShellMessage::Diagnostic { view, data } => {
                let kind = data.get("kind").and_then(Value::as_str).unwrap_or("unknown").to_owned();
                let detail = data.get("detail").cloned().unwrap_or(Value::Null);
                // The View's file, not the proxy's URL. Console chatter below a warning is the
                // App's own business: in the host's log at debug (preview's panel and the trace
                // keep every line), so an App that logs each message costs the host no write.
                let detail = match self.views.open.get(&view) {
                    Some(v) => v.handle.locate_diagnostic(detail),
                    None => detail,
                };
                match detail["level"].as_str() {
                    Some("log" | "info" | "debug") => tracing::debug!(view = %view, "View {kind:?}: {detail}"),
                    _ => tracing::warn!(view = %view, "View {kind:?}: {detail}"),
                }
                self.trace.record(Some(&view), Direction::Diagnostic, &json!({"kind": kind, "detail": detail}));
                if self.options.preview {
                    self.shell(ShellCommand::Diagnostic { view: view.clone(), kind, detail });
                }
            }
            ShellMessage::Dropped { view, reason } => {
                tracing::warn!(view = %view, "the View's proxy dropped a message: {reason}");
                self.trace.record(Some(&view), Direction::Rejected, &json!({"reason": reason}));
            }
            // Carried out on the UI thread (`desktop/frames/`), never sent here.
            ShellMessage::Frames { .. } | ShellMessage::Keyboard { .. } => {}
            ShellMessage::Wait { view } => self.wait_for(&view),
            ShellMessage::StopApp { view } => self.stop_app(&view),
            ShellMessage::Answer { dialog, accepted, remember } => {
                if let Some((_, reply)) = self.questions.dialogs.remove(&dialog) {
                    tracing::info!(dialog, accepted, remember, "consent answered");
                    self.chat_consent_answered(dialog, accepted && remember);
                    let _ = reply.send(accepted);
                } else {
                    tracing::debug!(dialog, "an answer to a dialog nobody waits for");
                }
            }
            ShellMessage::Theme { theme } => self.set_theme(theme),
            ShellMessage::Reopen { id } => self.reopen_conversation(&id),
            ShellMessage::StopTurn => self.stop_turn(),
            ShellMessage::Prompt { text, attach, edit } => {
                let text: String = text.trim().chars().take(MAX_PROMPT_CHARS).collect();
                if text.is_empty() {
                } else if edit {
                    self.chat_input(crate::conversation::Input::Edit(text));
                } else {
                    self.prompt_with(text, attach);
                }
            }
            ShellMessage::Retry => self.chat_input(crate::conversation::Input::Retry),
            ShellMessage::SwitchModel { name } => self.switch_model(&name),
            ShellMessage::RenameConversation { id, title } => self.rename_conversation(&id, &title),
            ShellMessage::DeleteConversation { id } => self.delete_conversation(&id),
            ShellMessage::RunPrompt { server, name, arguments } => self.run_server_prompt(server, name, arguments),
            ShellMessage::DevSend { view, method, params } => {
                let allowed = [
                    methods::TOOL_INPUT,
                    methods::TOOL_INPUT_PARTIAL,
                    methods::TOOL_RESULT,
                    methods::TOOL_CANCELLED,
                    methods::HOST_CONTEXT_CHANGED,
                ];
                match self.views.open.get(&view) {
                    Some(v) if allowed.contains(&method.as_str()) => v.handle.notify(&method, params),
                    _ => tracing::warn!(view = %view, "developer panel: cannot send {method}"),
                }
            }
            ShellMessage::DevViewTools { view } => self.dev_view_tools(&view, None),
            ShellMessage::DevCallViewTool { view, name, arguments } => {
                self.dev_view_tools(&view, Some((name, arguments)))
            }
            ShellMessage::DevContext { view, context } => {
                match (self.views.open.get(&view), serde_json::from_value::<HostContext>(context)) {
                    (Some(v), Ok(ctx)) => v.handle.update_host_context(ctx),
                    (_, Err(e)) => tracing::warn!(view = %view, "developer panel: bad host context: {e}"),
                    _ => {}
                }
            }
            ShellMessage::Reload => self.reload_all(),
            // DevTools are for App authors: `preview` only (its webview alone has developer extras).
            ShellMessage::Inspector if self.options.preview => {
                let _ = self.ui.send_event(UserEvent::OpenInspector);
            }
            ShellMessage::Inspector => tracing::warn!("web inspector refused: it opens only in preview"),
            ShellMessage::CallTool { server, tool, arguments } => {
                if let Err(e) = self.open(server.as_deref(), &tool, arguments, Opening::Person) {
                    self.shell(ShellCommand::Text {
                        view: None,
                        title: tool_label(&tool),
                        text: consent::block(&e.to_string()),
                        error: true,
                    });
                }
            }
            ShellMessage::ElicitAnswer { dialog, action, content } => {
                if self.install_answered(dialog, &action, &content) {
                    return;
                }
                self.questions.elicit_cmds.remove(&dialog);
                let Some((server, reply)) = self.questions.elicits.remove(&dialog) else { return };
                let answer = match action.as_str() {
                    "accept" => ElicitAnswer::Accept(content),
                    "decline" => ElicitAnswer::Decline,
                    _ => ElicitAnswer::Cancel,
                };
                tracing::info!(server = %server, dialog, action = answer.action(), "elicitation answered in the app");
                let _ = reply.send(answer);
            }
            ShellMessage::SignIn { server } => {
                let servers = self.servers.clone();
                tokio::spawn(async move {
                    if let Err(e) = servers.sign_in(&server).await {
                        tracing::warn!(server = %server, "sign-in failed: {e}");
                    }
                });
            }
            ShellMessage::CancelSignIn { server } => self.servers.cancel_sign_in(&server),
            ShellMessage::Approval { server, mode } => match crate::conversation::Approval::parse(&mode) {
                Some(mode) => {
                    self.set_approval(&server, mode);
                    self.show_servers();
                }
                None => tracing::warn!("the shell sent an unknown approval mode {mode:?}"),
            },
            ShellMessage::AddDemo => self.add_demo(),
            ShellMessage::AddServer { name, line } => self.add_server(&name, &line),
            ShellMessage::RemoveServer { server } => self.remove_server(&server),
            ShellMessage::EnableServer { server, enabled } => self.enable_server(&server, enabled),
            ShellMessage::ServerLog { server } => self.server_log(&server),
            ShellMessage::ChoosePath { field, directory } => self.choose_path(field, directory),
            ShellMessage::PathChosen { field, path } => self.path_chosen(field, path),
            ShellMessage::ModelSettings => self.open_model_settings(),
            ShellMessage::SaveModel { provider, name, url, key } => self.save_model(&provider, &name, &url, &key.0),
            ShellMessage::ForgetModelKey { provider } => self.forget_model_key(&provider),
            ShellMessage::EditServer { server, name, line } => self.edit_server(&server, &name, &line),
            ShellMessage::ImportConfig { path } => self.import_config(&path),
            ShellMessage::ChooseImport => {
                let _ = self.ui.send_event(UserEvent::ChooseFile(window::Choice::ConfigFile));
            }
            ShellMessage::ReloadConfig => self.reload_config(),
            ShellMessage::Restart { server } => {
                let servers = self.servers.clone();
                tokio::spawn(async move {
                    if let Err(e) = servers.restart(&server).await {
                        tracing::warn!(server = %server, "restart failed: {e}");
                    }
                });
            }
            ShellMessage::Inline { view } => {
                // The person's own action: never rate-limited, always possible.
                if self.views.open.get(&view).is_some_and(|v| v.phase.is_open() && v.mode != DisplayMode::Inline) {
                    self.apply_mode(&view, DisplayMode::Inline, true);
                }
                // The person's choice sticks: the View cannot take the screen again by itself.
                if let Some(v) = self.views.open.get_mut(&view) {
                    v.person_chose_inline = true;
                }
            }
            ShellMessage::Sight { near } => self.on_sight(near),
            ShellMessage::Close { view } => {
                self.model_view_closed(&view);
                if self.close_sleeper(&view) {
                    // Its card was all that was left.
                } else if let Some(v) = self
                    .views
                    .open
                    .get(&view)
                    .filter(|v| v.phase.is_open() && self.recovery.processes.is_hung(&v.label))
                {
                    // Its process does not answer: no teardown to wait for (closing ends it).
                    tracing::warn!(view = %view, "closing a View that does not respond");
                    v.handle.frame_gone();
                    self.close_view(&view);
                } else if let Some(v) = self.views.open.get(&view).filter(|v| v.phase.is_open()) {
                    self.spawn_teardown(v.handle.clone());
                } else if let Some(pending) = self.views.pending.remove(&view) {
                    // Still reading its UI: the person gave up waiting.
                    if let Some(task) = pending.task {
                        task.abort();
                    }
                    self.registry.remove(&view);
                    tracing::info!(view = %view, "cancelled before its View was mounted");
                    self.unmount(&view);
                    if self.views.startup_ids.contains(&view) && self.options.exit_after.is_some() {
                        self.fail(&format!("View {view} was cancelled before it was mounted"));
                    }
                    self.schedule_recycle();
                }
            }
        }
    }

    pub(super) fn set_theme(&mut self, theme: Theme) {
        if theme == self.theme {
            return;
        }
        self.theme = theme;
        self.shell(ShellCommand::Theme { theme });
        let _ = self.ui.send_event(UserEvent::Frame(FrameOp::Theme(theme)));
        for v in self.views.open.values().filter(|v| v.phase.is_open()) {
            v.handle.update_host_context(HostContext {
                theme: Some(theme),
                styles: Some(host_styles(theme)),
                ..Default::default()
            });
        }
    }

    pub(super) fn on_resized(&mut self, width: f64, height: f64) {
        // In pip the window is the View; its size is fixed by the host.
        if self.views.open.values().any(|v| v.mode == DisplayMode::Pip && v.phase.is_open()) {
            return;
        }
        self.window = (width, height);
        for v in self.views.open.values().filter(|v| v.phase.is_open()) {
            v.handle.update_host_context(HostContext {
                container_dimensions: Some(self.container(v.mode)),
                ..Default::default()
            });
        }
    }

    pub(super) fn on_ask(&mut self, ask: Ask) {
        match ask {
            Ask::Confirm { view, prompt, reply } => {
                // A View gets one question at a time, and none once it is gone: a flood of
                // prompts (or prompts answered after the View closed) must not act for it.
                let open = self.views.open.get(&view).is_some_and(|v| v.phase.is_open());
                if !open || self.questions.dialogs.values().any(|(v, _)| *v == view) {
                    let why =
                        if open { "another question of this App waits for the person" } else { "the App is closed" };
                    tracing::warn!(view = %view, "consent request not shown: {why}");
                    let _ = reply.send(Answer::NotAsked(why.into()));
                    return;
                }
                let dialog = self.questions.next_dialog;
                self.questions.next_dialog += 1;
                let asker = self.views.open.get(&view).map(|v| v.server.clone());
                // The dialog answers yes or no; a dialog that goes unanswered (its View closed,
                // the person stopped it) was not the person's no.
                let (answered, rx) = oneshot::channel::<bool>();
                tokio::spawn(async move {
                    let answer = match rx.await {
                        Ok(true) => Answer::Yes,
                        Ok(false) => Answer::No,
                        Err(_) => Answer::NotAsked("the question went away before the person answered".into()),
                    };
                    let _ = reply.send(answer);
                });
                self.questions.dialogs.insert(dialog, (view, answered));
                self.shell(ShellCommand::Confirm {
                    dialog,
                    title: prompt.title.to_owned(),
                    subject: prompt.subject,
                    source: prompt.source,
                    detail: prompt.detail,
                    accept: prompt.accept.to_owned(),
                    remember: None,
                    asker,
                });
            }
            Ask::Turn(input) => self.chat_input(input),
            Ask::ModelSettings(settings) => self.show_model_settings(settings),
            Ask::ModelSaved(outcome) => self.model_saved(outcome),
            Ask::Sample { server, text, reply } => {
                let dialog = self.questions.next_dialog;
                self.questions.next_dialog += 1;
                self.questions.dialogs.insert(dialog, (format!("server:{server}"), reply));
                let label = self.label(&server);
                self.shell(ShellCommand::Confirm {
                    dialog,
                    title: "Let this server ask the model?".into(),
                    subject: vec![consent::one_line_max(&label, 80)],
                    source: "The server wants the model to answer these messages (it gets the answer):".into(),
                    detail: consent::block(&text),
                    accept: "Ask the model".into(),
                    remember: None,
                    asker: Some(server.clone()),
                });
            }
            Ask::DisplayMode { view, mode, reply } => {
                let mode = self.set_display_mode(&view, mode);
                let _ = reply.send(mode);
            }
            Ask::Message { view, content, taken } => {
                tracing::info!(view = %view.view, "message from the View: {:?}", content_text(&content));
                let cmd = ShellCommand::Message {
                    view: view.view.clone(),
                    from: consent::app_label(&view.tool, &view.server),
                    role: "user".into(),
                    text: consent::block(&content_text(&content)),
                };
                self.remember(cmd.clone());
                self.shell(cmd);
                let app = consent::app_label(&view.tool, &view.server);
                let _ = taken.send(self.chat_app_message(&view.view, app, content_text(&content)));
            }
            Ask::ModelContext { view, context } => {
                let text = context.as_ref().map(|c| {
                    let blocks =
                        c.get("content").and_then(Value::as_array).map(|b| content_text(b)).unwrap_or_default();
                    match c.get("structuredContent") {
                        Some(s) => format!("{blocks}\n{s}").trim().to_owned(),
                        None => blocks,
                    }
                });
                let told =
                    self.chat_model_context(&view.view, consent::app_label(&view.tool, &view.server), text.clone());
                // The person sees what the model is told: the context as cut, and how much was.
                let text = match told {
                    Some(told) if told.cut > 0 => Some(format!(
                        "{}\n[The model gets only this much: {} more bytes were cut.]",
                        consent::block(&told.text),
                        told.cut
                    )),
                    Some(told) => Some(consent::block(&told.text)),
                    None => text.map(|t| consent::block(&conversation_bound(&t))),
                };
                // Only a View's latest model context matters.
                self.shell_page
                    .history
                    .retain(|c| !matches!(c, ShellCommand::Context { view: v, .. } if *v == view.view));
                let cmd = ShellCommand::Context {
                    view: view.view.clone(),
                    from: consent::app_label(&view.tool, &view.server),
                    text,
                };
                self.remember(cmd.clone());
                self.shell(cmd);
            }
            Ask::Elicit { request, reply, gone } => {
                let dialog = self.questions.next_dialog;
                self.questions.next_dialog += 1;
                // What is decided on comes first: the server asking, or the website to open.
                let server = consent::one_line_max(&request.server, 80);
                let message = consent::block(&request.message);
                let (cmd, url) = match &request.kind {
                    ElicitationKind::Form { schema } => (
                        ShellCommand::Elicit {
                            dialog,
                            server: server.clone(),
                            message,
                            title: "A server asks you a question".into(),
                            subject: vec![server],
                            source: None,
                            url: None,
                            schema: Some(schema.clone()),
                            host: false,
                        },
                        None,
                    ),
                    ElicitationKind::Url { url, .. } => match LinkSubject::parse(url) {
                        Ok((parsed, subject)) => (
                            ShellCommand::Elicit {
                                dialog,
                                server: server.clone(),
                                message,
                                title: "A server asks you to open this website".into(),
                                subject: vec![subject.host],
                                source: Some(format!("Asked by the server {server}")),
                                url: Some(subject.address),
                                schema: None,
                                host: false,
                            },
                            Some(parsed.to_string()),
                        ),
                        Err(reason) => {
                            tracing::warn!(server = %request.server, "URL elicitation declined: {reason}");
                            let _ = reply.send(ElicitAnswer::Decline);
                            return;
                        }
                    },
                };
                // URL elicitation: the URL opens only once the person accepts; then the server hears.
                let reply = match url {
                    Some(url) => {
                        let (tx, rx) = oneshot::channel::<ElicitAnswer>();
                        let opener = self.options.opener.clone();
                        tokio::spawn(async move {
                            let answer = rx.await.unwrap_or(ElicitAnswer::Cancel);
                            if matches!(answer, ElicitAnswer::Accept(_)) {
                                if let Err(e) = open_url(opener.as_deref(), &url) {
                                    tracing::warn!("could not open {url}: {e}");
                                }
                            }
                            let _ = reply.send(answer);
                        });
                        tx
                    }
                    None => reply,
                };
                self.questions.elicits.insert(dialog, (request.server.clone(), reply));
                self.questions.elicit_cmds.insert(dialog, cmd.clone());
                let asks = self.questions.asks.clone();
                tokio::spawn(async move {
                    let _ = gone.await;
                    let _ = asks.send(Ask::DismissElicit { dialog });
                });
                self.shell(cmd);
            }
            Ask::DismissElicit { dialog } => {
                self.questions.elicit_cmds.remove(&dialog);
                if self.questions.elicits.remove(&dialog).is_some() {
                    tracing::info!(dialog, "elicitation withdrawn before it was answered");
                }
                self.shell(ShellCommand::Dismiss { dialog });
            }
        }
    }
}

/// An App's context as the model would get it (the conversation's bound), for the panel when
/// no conversation runs.
fn conversation_bound(text: &str) -> String {
    let (text, cut) = crate::conversation::bound_context(text);
    if cut == 0 {
        return text;
    }
    format!("{text}\n[cut: {cut} more bytes]")
}
