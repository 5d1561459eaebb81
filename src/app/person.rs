//! What the person does in the shell (pick a tool, answer a dialog, stop an App, change the
//! theme, resize the window) and the questions put to them (consent, elicitation, sampling).

use super::*;

impl Controller {
    /// A keyboard shortcut of the window (`desktop/shortcuts.rs`).
    pub(super) fn on_shortcut(&mut self, shortcut: window::Shortcut) {
        match shortcut {
            window::Shortcut::Quit => self.begin_exit(0),
            window::Shortcut::NewConversation => self.new_conversation(),
            window::Shortcut::Settings => self.open_model_settings(),
            window::Shortcut::Shortcuts => self.shell(ShellCommand::Shortcuts),
        }
    }

    pub(super) fn on_shell(&mut self, msg: ShellMessage) {
        match msg {
            ShellMessage::Alive => self.shell_alive(),
            ShellMessage::Ready if self.recovery.is_recycling() => self.shell_reloaded(),
            ShellMessage::Ready => {
                self.shell_page.became_ready();
                self.recovery.heard_from_shell();
                self.shell_page.flush(&self.ui);
                if let Some(script) = self.options.automation.script.clone() {
                    let _ = self.ui.send_event(UserEvent::Eval(script));
                }
                if let Some(e) = self.options.launch.startup_error.take() {
                    let text = format!("What you opened could not be installed: {e}");
                    tracing::warn!("{text}");
                    self.status(&text, true);
                }
                self.show_install_request();
            }
            ShellMessage::Diagnostic { view, data } => {
                let kind = data.get("kind").and_then(Value::as_str).unwrap_or("unknown").to_owned();
                let detail = data.get("detail").cloned().unwrap_or(Value::Null);
                // The View's file, not the proxy's URL. Console chatter below a warning is the
                // App's own business: in the host's log at debug (preview's panel and the trace
                // keep every line), so an App that logs each message costs the host no write.
                let detail = match self.views.get(&view) {
                    Some(v) => v.handle.locate_diagnostic(detail),
                    None => detail,
                };
                match detail["level"].as_str() {
                    Some("log" | "info" | "debug") => tracing::debug!(view = %view, "View {kind:?}: {detail}"),
                    _ => tracing::warn!(view = %view, "View {kind:?}: {detail}"),
                }
                self.trace.record(Some(&view), Direction::Diagnostic, &json!({"kind": kind, "detail": detail}));
                if self.options.developer.panel {
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
            ShellMessage::Answer { dialog, accepted, remember } => self.consent_answered(dialog, accepted, remember),
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
                match self.views.get(&view) {
                    Some(v) if allowed.contains(&method.as_str()) => v.handle.notify(&method, params),
                    _ => tracing::warn!(view = %view, "developer panel: cannot send {method}"),
                }
            }
            ShellMessage::DevViewTools { view } => self.dev_view_tools(&view, None),
            ShellMessage::DevCallViewTool { view, name, arguments } => {
                self.dev_view_tools(&view, Some((name, arguments)))
            }
            ShellMessage::DevContext { view, context } => {
                match (self.views.get(&view), serde_json::from_value::<HostContext>(context)) {
                    (Some(v), Ok(ctx)) => v.handle.update_host_context(ctx),
                    (_, Err(e)) => tracing::warn!(view = %view, "developer panel: bad host context: {e}"),
                    _ => {}
                }
            }
            ShellMessage::Reload => self.reload_all(),
            // DevTools are for App authors: `preview` only (its webview alone has developer extras).
            ShellMessage::Inspector if self.options.developer.panel => {
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
            ShellMessage::ElicitAnswer { dialog, action, content } => self.elicit_answered(dialog, action, content),
            ShellMessage::SignIn { server } => {
                let servers = self.servers.clone();
                tokio::spawn(async move {
                    if let Err(e) = servers.sign_in(&server).await {
                        tracing::warn!(server = %server, "sign-in failed: {e}");
                    }
                });
            }
            ShellMessage::CancelSignIn { server } => self.servers.cancel_sign_in(&server),
            ShellMessage::CancelStart { server } => self.servers.cancel_start(&server),
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
            ShellMessage::NewConversation => self.new_conversation(),
            ShellMessage::WindowRead { read, window } => self.window_read(read, window),
            ShellMessage::About => self.shell(about::command()),
            ShellMessage::SaveModel { provider, name, url, key } => self.save_model(&provider, &name, &url, &key.0),
            ShellMessage::ListModels { provider, url, key } => self.list_models(&provider, &url, &key.0),
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
                if self.views.get(&view).is_some_and(|v| v.phase.is_open() && v.mode != DisplayMode::Inline) {
                    self.apply_mode(&view, DisplayMode::Inline, true);
                }
                // The person's choice sticks: the View cannot take the screen again by itself.
                if let Some(v) = self.views.get_mut(&view) {
                    v.person_chose_inline = true;
                }
            }
            ShellMessage::Sight { near } => self.on_sight(near),
            ShellMessage::Close { view } => {
                self.model_view_closed(&view);
                if self.close_sleeper(&view) {
                    // Its card was all that was left.
                } else if let Some(v) =
                    self.views.get(&view).filter(|v| v.phase.is_open() && self.recovery.is_hung(&v.label))
                {
                    // Its process does not answer: no teardown to wait for (closing ends it).
                    tracing::warn!(view = %view, "closing a View that does not respond");
                    v.handle.frame_gone();
                    self.close_view(&view);
                } else if let Some(v) = self.views.get(&view).filter(|v| v.phase.is_open()) {
                    self.spawn_teardown(v.handle.clone());
                } else if let Some(pending) = self.views.remove_pending(&view) {
                    // Still reading its UI: the person gave up waiting.
                    if let Some(task) = pending.task {
                        task.abort();
                    }
                    self.proxies.remove(&view);
                    tracing::info!(view = %view, "cancelled before its View was mounted");
                    self.unmount(&view);
                    if self.views.is_startup(&view) && self.options.automation.exit_after.is_some() {
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
        for v in self.views.values().filter(|v| v.phase.is_open()) {
            v.handle.update_host_context(HostContext {
                theme: Some(theme),
                styles: Some(host_styles(theme)),
                ..Default::default()
            });
        }
    }

    pub(super) fn on_resized(&mut self, width: f64, height: f64) {
        // In pip the window is the View; its size is fixed by the host.
        if self.views.values().any(|v| v.mode == DisplayMode::Pip && v.phase.is_open()) {
            return;
        }
        self.window = (width, height);
        for v in self.views.values().filter(|v| v.phase.is_open()) {
            v.handle.update_host_context(HostContext {
                container_dimensions: Some(self.container(v.mode)),
                ..Default::default()
            });
        }
    }
}
