//! What a View's session reports (its messages, its events), and its teardown and close.

use super::*;

impl Controller {
    pub(in crate::app) fn spawn_teardown(&mut self, handle: ViewHandle) {
        if let Some(v) = self.views.get_mut(handle.id()) {
            v.phase = v.phase.advanced(Phase::Closing);
        }
        let done = self.views.teardowns.clone();
        // Runs beside the loop, which keeps relaying the View's answer.
        tokio::spawn(async move {
            let outcome = handle.teardown().await;
            tracing::info!(view = %handle.id(), "teardown: {outcome:?}");
            let _ = done.send(handle.id().to_owned());
        });
    }

    /// Handles a session's output; returns an exit code when the run is complete.
    pub(in crate::app) fn on_view_output(&mut self, view: &str, output: ViewOutput) -> Option<i32> {
        match output {
            ViewOutput::Post(text) => {
                // `text` is the message as the bridge serialized it: it goes to the View's own
                // webview unparsed (the hot path).
                self.ui.post(view.to_owned(), text);
                None
            }
            ViewOutput::Event(event) => {
                if let Some(events) = &self.options.events {
                    let _ = events.send((view.to_owned(), event.clone()));
                }
                self.on_view_event(view, event)
            }
        }
    }

    pub(in crate::app) fn on_view_event(&mut self, view: &str, event: ViewEvent) -> Option<i32> {
        let exit_after = self.options.automation.exit_after;
        match event {
            ViewEvent::Initialized { protocol_version, app_info, app_capabilities } => {
                tracing::info!(view, app = %app_info.name, version = %app_info.version, %protocol_version, "View initialized");
                if app_capabilities.get("tools").is_some_and(Value::is_object) {
                    self.list_app_tools(view);
                }
                let _ = self.ui.send_event(UserEvent::Frame(FrameOp::Initialized { view: view.to_owned() }));
                if let Some(v) = self.views.get_mut(view) {
                    v.phase = v.phase.advanced(Phase::Initialized);
                    v.reached.initialized = true;
                }
                self.probation_initialized(view);
                self.test_view_initialized(view);
                // An interaction session runs in the first View once it has its result, and the
                // run ends with it.
                if let Some(script) = &self.options.automation.interaction {
                    if self.views.get(view).is_some_and(|v| v.reached.result_delivered) {
                        self.interaction.start(script, view, &self.ui, &self.trace);
                    }
                    return None;
                }
                if exit_after == Some(ExitAfter::Initialized) && self.views.values().all(|v| v.reached.initialized) {
                    return Some(0);
                }
                if exit_after.is_none() {
                    if let Some(path) = self.options.automation.screenshot.clone() {
                        let (ui, settle) = (self.ui.clone(), self.options.automation.settle);
                        tokio::spawn(async move {
                            tokio::time::sleep(settle).await;
                            take_screenshot(&ui, path).await;
                        });
                    }
                }
            }
            ViewEvent::ToolResultDelivered => {
                if let Some(v) = self.views.get_mut(view) {
                    v.reached.result_delivered = true;
                }
                if let Some(script) = &self.options.automation.interaction {
                    if self.views.get(view).is_some_and(|v| v.reached.initialized) {
                        self.interaction.start(script, view, &self.ui, &self.trace);
                    }
                    return None;
                }
                if exit_after == Some(ExitAfter::Result) && self.views.values().all(|v| v.reached.result_delivered) {
                    return Some(0);
                }
            }
            ViewEvent::ToolCancelledDelivered { reason } => {
                tracing::info!(view, "tool-cancelled delivered: {}", reason.unwrap_or_default());
                if exit_after.is_some() {
                    return Some(1);
                }
            }
            ViewEvent::SizeChanged { height: Some(h), .. } => {
                let v = self.views.get_mut(view)?;
                // Only inline Views size themselves; fullscreen and pip fill what the host gives.
                if v.mode != DisplayMode::Inline {
                    return None;
                }
                let height = h.clamp(MIN_FRAME_HEIGHT, INLINE_MAX_HEIGHT).ceil();
                let height = match v.frame.report(height, Instant::now()) {
                    Sizing::Keep => return None,
                    Sizing::Resize(height) => height,
                    Sizing::Hold(height) => {
                        tracing::info!(view, "the View sizes itself from its frame (it grew after every resize): its frame stays at {height} px");
                        return None;
                    }
                };
                tracing::debug!(view, height, "resizing the View's frame");
                self.shell(ShellCommand::Resize { view: view.to_owned(), height });
            }
            ViewEvent::DisplayModeChanged { mode } => tracing::info!(view, "display mode is now {mode:?}"),
            ViewEvent::TeardownRequested => {
                let handle = self.views.get(view)?.handle.clone();
                self.spawn_teardown(handle);
            }
            ViewEvent::Closed => self.close_view(view),
            ViewEvent::ViewToolsChanged => self.list_app_tools(view),
            ViewEvent::NotStarted { message } => {
                let title = self.views.get(view).map(|v| tool_label(&v.tool)).unwrap_or_default();
                self.status(&format!("The App {title} does not start. {message}"), true);
            }
            _ => {}
        }
        None
    }

    pub(in crate::app) fn close_view(&mut self, view: &str) {
        self.test_view_gone(view, "it was closed");
        self.probation_ended(view);
        self.refuse_dialogs_of(view);
        self.forget_app_tools(view);
        if self.fell_asleep(view) {
            return;
        }
        self.hibernation.closed(view);
        // A call out for a woken View that closed has nobody to go to.
        self.hibernation.calls_forgotten(view);
        self.forget_context(view);
        let pip = self.views.get(view).is_some_and(|v| v.mode == DisplayMode::Pip && v.phase.is_open());
        if pip {
            let _ = self.ui.send_event(UserEvent::Window(WindowOp::Restore));
        }
        if let Some(v) = self.views.get_mut(view) {
            if v.phase.is_open() {
                v.phase = Phase::Gone;
                self.proxies.remove(view);
                self.unmount(view);
            }
        }
        self.schedule_recycle();
    }

    /// The consent questions `view` has open are answered no and taken off the screen.
    pub(in crate::app) fn refuse_dialogs_of(&mut self, view: &str) {
        for dialog in self.questions.refuse_consents_of(view) {
            self.shell(ShellCommand::Dismiss { dialog });
        }
    }

    /// Removes a View's card and its webview.
    pub(in crate::app) fn unmount(&mut self, view: &str) {
        self.shell(ShellCommand::Unmount { view: view.to_owned() });
        let _ = self.ui.send_event(UserEvent::Frame(FrameOp::Unmount { view: view.to_owned(), keep_process: false }));
    }
}
