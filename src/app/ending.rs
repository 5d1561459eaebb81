//! How the run ends: the graceful exit (every View's teardown, then the servers), the goal
//! reached (settle, screenshot, exit), a failure, and what is missing when the timeout fires.

use super::*;

/// How the run ends: the exit begun (with its code), or the goal reached and settling.
pub(super) struct Ending {
    exiting: Option<i32>,
    /// Set once the run reached its goal: settle, screenshot, then exit with this code.
    finishing: bool,
    finished_tx: mpsc::UnboundedSender<i32>,
}

impl Ending {
    pub(super) fn new(finished_tx: mpsc::UnboundedSender<i32>) -> Self {
        Self { exiting: None, finishing: false, finished_tx }
    }

    /// Whether the exit has begun.
    pub(super) fn is_exiting(&self) -> bool {
        self.exiting.is_some()
    }
}

impl Controller {
    /// Starts closing: every open View gets its graceful teardown (bounded) while the loop keeps
    /// relaying messages, so the Views can answer; then the server stops and the window closes.
    pub(super) fn begin_exit(&mut self, code: i32) {
        if self.ending.exiting.is_some() {
            return;
        }
        self.ending.exiting = Some(code);
        let handles: Vec<ViewHandle> =
            self.views.values().filter(|v| v.phase.is_open()).map(|v| v.handle.clone()).collect();
        let servers = self.servers.clone();
        let ui = self.ui.clone();
        tokio::spawn(async move {
            let mut set = tokio::task::JoinSet::new();
            for h in handles {
                set.spawn(async move { (h.id().to_owned(), h.teardown().await) });
            }
            while let Some(done) = set.join_next().await {
                if let Ok((view, outcome)) = done {
                    tracing::info!(view = %view, "teardown: {outcome:?}");
                }
            }
            servers.shutdown().await;
            let _ = ui.send_event(UserEvent::Exit(code));
        });
    }

    /// The run reached its goal (or failed after the View was told): let the View settle, take the
    /// screenshot if asked, then exit with `code`.
    pub(super) fn finish(&mut self, code: i32) {
        if self.ending.finishing || self.ending.exiting.is_some() {
            return;
        }
        self.ending.finishing = true;
        let settle = self.options.automation.settle;
        let screenshot = self
            .options
            .automation
            .screenshot
            .clone()
            .filter(|_| code == 0 || self.views.values().any(|v| v.reached.initialized));
        let (ui, done, trace) = (self.ui.clone(), self.ending.finished_tx.clone(), self.trace.clone());
        tokio::spawn(async move {
            tokio::time::sleep(settle).await;
            // The web content's memory once settled, for `check`'s figures.
            if trace.is_enabled() {
                if let Ok(Some(record)) = tokio::task::spawn_blocking(supervisor::memory_record).await {
                    trace.record(None, Direction::Figure, &record);
                }
            }
            let mut code = code;
            if let Some(path) = screenshot {
                code = take_screenshot(&ui, path).await.max(code);
            }
            let _ = done.send(code);
        });
    }

    /// Prints one clear line and exits 1 (the window shows it too, for a person watching).
    pub(super) fn fail(&mut self, error: &str) {
        eprintln!("error: {}", say(error));
        self.status(error, true);
        self.begin_exit(1);
    }

    /// What is still missing when the timeout fires, if anything.
    pub(super) fn overdue(&self) -> Option<String> {
        let secs = self.options.timeout.as_secs_f64();
        if self.options.automation.exit_after == Some(ExitAfter::Answer) {
            return self.conversation.awaits_answer().then(|| format!("the model did not answer within {secs} s"));
        }
        if self.options.opens.is_empty() {
            return None;
        }
        if self.views.is_empty() {
            return Some(format!("no View was mounted within {secs} s"));
        }
        if let Some((id, _)) = self.views.iter().find(|(_, v)| !v.reached.initialized && v.phase.is_open()) {
            return Some(format!("View {id} did not send ui/notifications/initialized within {secs} s"));
        }
        match self.options.automation.exit_after {
            Some(ExitAfter::Result) if self.views.values().any(|v| !v.reached.result_delivered) => {
                Some(format!("the tool result did not reach the View within {secs} s"))
            }
            Some(ExitAfter::Teardown) if self.views.values().any(|v| v.phase.is_open()) => {
                Some(format!("the View was not torn down within {secs} s"))
            }
            _ => None,
        }
    }
}

/// Asks the UI thread for a screenshot; returns the exit code it implies (1 when it failed).
pub(super) async fn take_screenshot(ui: &Ui, path: PathBuf) -> i32 {
    let (tx, rx) = oneshot::channel();
    if ui.send_event(UserEvent::Screenshot(path, tx)).is_err() {
        return 1;
    }
    match tokio::time::timeout(Duration::from_secs(10), rx).await {
        Ok(Ok(Ok(path))) => {
            eprintln!("screenshot: {}", path.display());
            0
        }
        Ok(Ok(Err(e))) => {
            eprintln!("error: screenshot failed: {e}");
            1
        }
        _ => {
            eprintln!("error: screenshot failed: no answer from the webview");
            1
        }
    }
}
