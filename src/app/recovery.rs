//! Recycling the web process when idle, and bringing the Apps back after the web content
//! stopped (the rules are in `desktop/supervisor.rs`).

use super::*;
use window::FrameSignal;

/// The supervisor's reason for a web process the host ends on purpose (idle recycling).
pub(super) const RECYCLED: &str = "recycled";

/// An open View to bring back after the web content stopped.
#[derive(Debug, Clone)]
pub(super) struct Restore {
    pub old: ViewId,
    pub server: String,
    pub tool: String,
    pub arguments: Map<String, Value>,
    pub result: Option<Value>,
}

/// What brings the web content back: the supervisor's rules, the Views to restore and the one
/// on probation, and the idle recycling of the web process.
pub(super) struct Recovery {
    /// Watches the web content: heartbeats, hangs, stops.
    supervisor: Supervisor,
    /// The web content's memory limit.
    web_memory_limit_mb: u64,
    /// Views to reopen once a restarted shell is ready.
    to_restore: Vec<Restore>,
    /// Views waiting for their turn on probation, and the one on probation now.
    probation: VecDeque<Restore>,
    on_probation: Option<(ViewId, Restore)>,
    /// When the View on probation initialized, and the web content's memory then (MB).
    probation_mark: Option<(Instant, u64)>,
    probation_tx: mpsc::UnboundedSender<ViewId>,
    /// Why the web content stopped, for the status line once the restarted shell is ready.
    status_after_restart: Option<String>,
    /// Views found to stop the web content (on probation at a stop): not reopened.
    held: Vec<Restore>,
    /// The web processes of the Views, one per server: hangs and stops.
    processes: ViewProcesses,
    /// Views mounted since the web process was last recycled.
    opened_since_recycle: usize,
    /// Set while the shell reloads in a fresh web process; its state is sent again on `ready`.
    recycling: bool,
    recycle_tx: mpsc::UnboundedSender<u64>,
}

/// What the check of a View on probation found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ProbationCheck {
    /// It is not (or no longer) the View on probation.
    NotOnProbation,
    /// Not quiet yet: checked again later.
    NotQuietYet,
    /// Quiet, or on probation long enough: the next View's turn.
    Passed,
}

impl Recovery {
    pub(super) fn new(
        stop_after: Duration,
        recycle_tx: mpsc::UnboundedSender<u64>,
        probation_tx: mpsc::UnboundedSender<ViewId>,
    ) -> Self {
        Self {
            supervisor: Supervisor::new(stop_after),
            web_memory_limit_mb: 0,
            to_restore: Vec::new(),
            probation: VecDeque::new(),
            on_probation: None,
            probation_mark: None,
            probation_tx,
            status_after_restart: None,
            held: Vec::new(),
            processes: ViewProcesses::default(),
            opened_since_recycle: 0,
            recycling: false,
            recycle_tx,
        }
    }

    /// Sets the web content's memory limit from the one asked for (or the machine's); returns it.
    pub(super) fn set_memory_limit(&mut self, asked: Option<u64>) -> u64 {
        self.web_memory_limit_mb = supervisor::memory_limit_mb(asked);
        self.web_memory_limit_mb
    }

    /// The shell's heartbeat; returns how long the web content did not respond, if it hung.
    pub(super) fn heard_from_shell(&mut self) -> Option<Duration> {
        self.supervisor.alive(Instant::now())
    }

    /// Whether the shell is reloading in a fresh web process (after a recycle or a stop).
    pub(super) fn is_recycling(&self) -> bool {
        self.recycling
    }

    /// Whether the web process of the Views labelled `label` does not respond.
    pub(super) fn is_hung(&self, label: &str) -> bool {
        self.processes.is_hung(label)
    }

    /// Whether `view` is the View on probation.
    pub(super) fn is_on_probation(&self, view: &str) -> bool {
        self.on_probation.as_ref().is_some_and(|(id, _)| id == view)
    }

    /// `view` initialized: if it is on probation, its quiet time starts at `now`, with the web
    /// content's memory then (`web_mb`, read only then); returns whether it is on probation.
    pub(super) fn probation_started(&mut self, view: &str, now: Instant, web_mb: impl FnOnce() -> u64) -> bool {
        if !self.is_on_probation(view) {
            return false;
        }
        self.probation_mark = Some((now, web_mb()));
        true
    }

    /// The check of `view` on probation at `now`: quiet (responsive, memory grown little) or
    /// on probation long enough, it passes and the next View's turn comes; else it is checked
    /// again later. `web_mb` reads the web content's memory (read only when checked).
    pub(super) fn check_probation(&mut self, view: &str, now: Instant, web_mb: impl FnOnce() -> u64) -> ProbationCheck {
        if !self.is_on_probation(view) {
            return ProbationCheck::NotOnProbation;
        }
        let Some((since, mb)) = self.probation_mark else { return ProbationCheck::NotOnProbation };
        let grown = web_mb().saturating_sub(mb);
        let responsive = self.supervisor.alive_within(now, Duration::from_millis(750));
        let quiet = responsive && grown <= supervisor::PROBATION_GROWTH_MB;
        if !quiet && now.saturating_duration_since(since) < supervisor::PROBATION_MAX {
            tracing::info!(view, responsive, grown_mb = grown, "not quiet yet on probation");
            self.probation_mark = Some((since, mb + grown));
            return ProbationCheck::NotQuietYet;
        }
        tracing::info!(view, "passed probation");
        self.on_probation = None;
        self.probation_mark = None;
        ProbationCheck::Passed
    }

    /// A View was mounted (it counts towards the next recycle).
    pub(super) fn view_mounted(&mut self) {
        self.opened_since_recycle += 1;
    }
}

impl Restore {
    /// What reopens `v` (`id`): its call, with its last input and result.
    pub(super) fn of(id: &str, v: &ViewState) -> Self {
        Self {
            old: id.to_owned(),
            server: v.server.clone(),
            tool: v.tool.clone(),
            arguments: v.arguments.clone(),
            result: v.result.clone(),
        }
    }
}

impl Controller {
    /// The shell's heartbeat: the web content responds (again).
    pub(super) fn shell_alive(&mut self) {
        if let Some(hung) = self.recovery.heard_from_shell() {
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

    /// A fresh shell after a recycle or a stop is ready: it gets the state the old one had.
    pub(super) fn shell_reloaded(&mut self) {
        self.recovery.recycling = false;
        self.shell_page.became_ready();
        self.recovery.supervisor.alive(Instant::now());
        self.trace.record(None, Direction::Diagnostic, &json!({"kind": "recycled"}));
        self.shell(ShellCommand::Theme { theme: self.theme });
        self.show_servers();
        for cmd in self.shell_page.history().to_vec() {
            self.shell(cmd);
        }
        self.shell_page.flush(&self.ui);
        self.restore_views();
    }

    /// `view` is gone or failed: if it was on probation, the next one's turn comes.
    pub(super) fn probation_ended(&mut self, view: &str) {
        if self.recovery.is_on_probation(view) {
            self.recovery.on_probation = None;
            self.advance_probation();
        }
    }

    /// WebKit keeps much of the memory of closed Views in its web process. When many Views
    /// were opened and none is open any more, the process is replaced after a quiet moment (not
    /// in preview, whose log lives in the page).
    pub(super) fn schedule_recycle(&mut self) {
        let idle = self.views.idle();
        // A sleeping View's card is in the page: the page is not idle.
        let idle = idle && self.hibernation.is_empty();
        if !idle
            || self.options.developer.panel
            || self.recovery.opened_since_recycle < RECYCLE_AFTER_VIEWS
            || self.ending.is_exiting()
        {
            return;
        }
        let (tx, generation) = (self.recovery.recycle_tx.clone(), self.views.generation());
        tokio::spawn(async move {
            tokio::time::sleep(RECYCLE_IDLE).await;
            let _ = tx.send(generation);
        });
    }

    pub(super) fn recycle(&mut self, generation: u64) {
        // Anything opened or asked since it was scheduled keeps the page.
        let idle = self.views.idle();
        let idle = idle && self.hibernation.is_empty();
        let quiet = self.questions.none_open() && !self.recovery.recycling;
        if generation != self.views.generation() || !idle || !quiet || self.ending.is_exiting() {
            return;
        }
        self.recovery.opened_since_recycle = 0;
        self.recovery.recycling = true;
        self.shell_page.reloading();
        // The process ends on purpose: its termination is not a failure to recover from.
        self.recovery.supervisor.stopping(RECYCLED);
        // Closed Views' records are not needed by a fresh page.
        self.views.clear();
        self.trace.record(None, Direction::Diagnostic, &json!({"kind": "recycle"}));
        let _ = self.ui.send_event(UserEvent::Recycle);
    }

    /// The supervisor's tick: a hang to report or to end.
    pub(super) fn supervise(&mut self) {
        if self.ending.is_exiting() {
            return;
        }
        for label in self.recovery.processes.overdue(Instant::now()) {
            let apps = self.apps_of(&label);
            let secs = (supervisor::HANG_AFTER + self.recovery.supervisor.auto_stop()).as_secs();
            self.stop_process(&label, format!("{apps} did not respond for {secs} s"));
        }
        match self.recovery.supervisor.tick(Instant::now()) {
            Tick::Quiet => {}
            Tick::HangStarted => {
                let apps = self.open_apps();
                let line = format!(
                    "the Apps are not responding (no sign of the web content for {:.1} s); open: {apps}",
                    supervisor::HANG_AFTER.as_secs_f64()
                );
                tracing::warn!("{}", say(&line));
                self.trace.record(None, Direction::Diagnostic, &json!({"kind": "unresponsive", "apps": apps}));
                let text = format!(
                    "One of these Apps keeps the web content busy: {apps}.\n\nWait for it, or stop the Apps: every other App comes back with its last input and result. Without an answer they are stopped in {} s.",
                    self.recovery.supervisor.auto_stop().as_secs()
                );
                let _ = self.ui.send_event(UserEvent::WebContent(WebContentOp::AskHung { text }));
            }
            Tick::StopNow => self.stop_web_content(format!(
                "the Apps did not respond for {} s",
                (supervisor::HANG_AFTER + self.recovery.supervisor.auto_stop()).as_secs()
            )),
        }
    }

    /// A web process is above the memory limit (see [`supervisor::watch_memory`]): it is
    /// ended at once; WebKit then reports it gone to the webviews it served (the shell, or one
    /// server's Views), and those recover.
    pub(super) fn over_memory_limit(&mut self, pid: u32, mb: u64) {
        if !self.shell_page.is_ready() || self.ending.is_exiting() {
            return;
        }
        let reason =
            format!("it used {mb} MB, over the limit of {} MB (process {pid})", self.recovery.web_memory_limit_mb);
        tracing::warn!("ending a web process: {reason}");
        self.recovery.processes.ending(Instant::now(), reason);
        if !supervisor::kill(pid) {
            tracing::warn!(pid, "the web process over its memory limit could not be ended");
        }
    }

    /// The open Apps of the server with sandbox label `label`, for a person.
    pub(super) fn apps_of(&self, label: &str) -> String {
        let mut apps: Vec<String> = self
            .views
            .values()
            .filter(|v| v.phase.is_open() && v.label == label)
            .map(|v| consent::app_label(&v.tool, &v.server))
            .collect();
        apps.sort();
        apps.dedup();
        if apps.is_empty() {
            "an App".into()
        } else {
            apps.join(", ")
        }
    }

    /// Ends the web process of `label`'s Views for `reason`; they come back (see [`Self::on_frame`]).
    pub(super) fn stop_process(&mut self, label: &str, reason: String) {
        tracing::warn!("stopping a web process of Apps: {}", say(&reason));
        self.recovery.processes.ending(Instant::now(), reason);
        let _ = self.ui.send_event(UserEvent::Frame(FrameOp::Stop { label: label.to_owned() }));
    }

    /// The person waits for a View that does not respond.
    pub(super) fn wait_for(&mut self, view: &str) {
        let Some(label) = self.views.get(view).map(|v| v.label.clone()) else { return };
        tracing::info!(view, "the person chose to wait for the App");
        self.recovery.processes.wait_more(&label, Instant::now(), self.recovery.supervisor.auto_stop());
    }

    /// The person stops a View that does not respond.
    pub(super) fn stop_app(&mut self, view: &str) {
        let Some(label) =
            self.views.get(view).filter(|v| self.recovery.processes.is_hung(&v.label)).map(|v| v.label.clone())
        else {
            return;
        };
        let apps = self.apps_of(&label);
        self.stop_process(&label, format!("you stopped {apps}"));
    }

    /// What a server's web process of Views did: it stopped answering, answers again, or ended.
    /// Nothing else stops: the shell and other servers' Views have processes of their own.
    pub(super) fn on_frame(&mut self, signal: FrameSignal) {
        if self.ending.is_exiting() {
            return;
        }
        match signal {
            FrameSignal::Hung { label } => {
                let since = Instant::now() - supervisor::HANG_AFTER;
                self.recovery.processes.hung(&label, since, self.recovery.supervisor.auto_stop());
                let apps = self.apps_of(&label);
                let secs = self.recovery.supervisor.auto_stop().as_secs();
                let line = format!("{apps} is not responding. Wait, or stop it (stopped in {secs} s without an answer); the other Apps are not affected.");
                tracing::warn!("{}", say(&format!("{apps} is not responding")));
                self.trace.record(
                    None,
                    Direction::Diagnostic,
                    &json!({"kind": "unresponsive", "apps": apps, "process": label}),
                );
                // The status line first: whoever sees the card's bar sees the line already said.
                self.status(&line, true);
                self.mark_hung(&label, true, &line);
            }
            FrameSignal::Responsive { label, after } => {
                if !self.recovery.processes.responsive(&label) {
                    return;
                }
                let apps = self.apps_of(&label);
                let line = format!("{apps} responds again after {:.1} s.", after.as_secs_f64());
                tracing::warn!("{}", say(&line));
                self.trace.record(
                    None,
                    Direction::Diagnostic,
                    &json!({"kind": "responsive", "after_ms": after.as_millis() as u64, "process": label}),
                );
                self.mark_hung(&label, false, "");
                self.status(&line, false);
            }
            FrameSignal::Gone { view, reason } => self.on_process_gone(&view, &reason),
        }
    }

    fn mark_hung(&mut self, label: &str, hung: bool, text: &str) {
        let views: Vec<ViewId> = self
            .views
            .iter()
            .filter(|(_, v)| v.phase.is_open() && v.label == label)
            .map(|(id, _)| id.clone())
            .collect();
        for view in views {
            self.shell(ShellCommand::Hung { view, hung, text: text.to_owned() });
        }
    }

    /// The web process of `view`'s server ended: every open View of that server is gone and
    /// comes back with its last input and result (the tool is not called again), unless that
    /// process ended before within [`supervisor::SUSPECT_WINDOW`]: then the person is told and
    /// reopens them (a View that crashes its process at once cannot loop).
    fn on_process_gone(&mut self, view: &str, webkit_reason: &str) {
        let Some(label) = self.views.get(view).filter(|v| v.phase.is_open()).map(|v| v.label.clone()) else {
            return;
        };
        let now = Instant::now();
        let reason = self.recovery.processes.reason(now, webkit_reason);
        let stops = self.recovery.processes.terminated(&label, now);
        let mut gone: Vec<(ViewId, ViewState)> = Vec::new();
        for id in self
            .views
            .iter()
            .filter(|(_, v)| v.phase.is_open() && v.label == label)
            .map(|(id, _)| id.clone())
            .collect::<Vec<_>>()
        {
            if let Some(v) = self.views.remove(&id) {
                gone.push((id, v));
            }
        }
        gone.sort_by(|a, b| a.0.cmp(&b.0));
        let apps = gone.iter().map(|(_, v)| consent::app_label(&v.tool, &v.server)).collect::<Vec<_>>().join(", ");
        tracing::error!("the web process of {} ended: {}", say(&apps), say(&reason));
        eprintln!("warning: the web process of {} ended: {}", say(&apps), say(&reason));
        self.trace.record(
            None,
            Direction::Diagnostic,
            &json!({"kind": "web-process-terminated", "reason": reason, "process": label, "views": gone.iter().map(|(id, _)| id).collect::<Vec<_>>()}),
        );
        let again = stops >= 2;
        let mut reopened = 0;
        for (id, v) in gone {
            v.handle.frame_gone();
            // A View going to sleep sleeps: its card stays.
            if self.fell_asleep(&id) {
                continue;
            }
            self.proxies.remove(&id);
            self.forget_context(&id);
            self.refuse_dialogs_of(&id);
            self.unmount(&id);
            // A View on its way out (closed by the person, replaced by a reload) stays closed.
            if again || !v.phase.is_live() || self.awaits_model_call(&id, &v) {
                continue;
            }
            let restore = Restore::of(&id, &v);
            reopened += usize::from(self.reopen(restore).is_some());
        }
        let line = if again {
            format!("{apps} stopped again ({reason}), so it was not reopened. Call it again from the list to try once more.")
        } else {
            format!("{apps} stopped ({reason}); {reopened} reopened with their last input and result. The other Apps were not affected.")
        };
        self.shell(ShellCommand::Text { view: None, title: "An App stopped".into(), text: line.clone(), error: true });
        self.status(&line, true);
    }

    /// The open Apps, for a person: `tool · server, ...`.
    pub(super) fn open_apps(&self) -> String {
        let mut apps: Vec<String> =
            self.views.values().filter(|v| v.phase.is_open()).map(|v| consent::app_label(&v.tool, &v.server)).collect();
        apps.sort();
        if apps.is_empty() {
            "no App".into()
        } else {
            apps.join(", ")
        }
    }

    /// Ends the web content for `reason`; WebKit then reports it terminated and it restarts.
    pub(super) fn stop_web_content(&mut self, reason: String) {
        tracing::warn!("stopping the web content: {}", say(&reason));
        self.recovery.supervisor.stopping(reason);
        let _ = self.ui.send_event(UserEvent::WebContent(WebContentOp::Stop));
    }

    pub(super) fn on_web_content(&mut self, signal: WebContentSignal) {
        match signal {
            WebContentSignal::Responsive(responsive) => {
                tracing::info!(
                    responsive,
                    "WebKit: the web process is {}responsive",
                    if responsive { "" } else { "not " }
                );
            }
            WebContentSignal::HangAnswer { stop: true } => self.stop_web_content("you stopped the Apps".into()),
            WebContentSignal::HangAnswer { stop: false } => {
                tracing::info!("the person chose to wait for the Apps");
                self.recovery.supervisor.wait_more(Instant::now());
            }
            WebContentSignal::Terminated(webkit_reason) => self.on_web_content_gone(&webkit_reason),
        }
    }

    /// The web process ended: every View's frame is gone. The shell restarts in a new process,
    /// and once it is ready the open Views come back (see [`Self::restore_views`]).
    pub(super) fn on_web_content_gone(&mut self, webkit_reason: &str) {
        let now = Instant::now();
        let webkit_reason = self.recovery.processes.reason(now, webkit_reason);
        let reason = self.recovery.supervisor.terminated(now, &webkit_reason);
        if reason == RECYCLED || self.ending.is_exiting() {
            return;
        }
        let mut open: Vec<(ViewId, ViewState)> = self.views.drain().filter(|(_, v)| v.phase.is_open()).collect();
        open.sort_by(|a, b| a.0.cmp(&b.0));
        let apps = open.iter().map(|(_, v)| consent::app_label(&v.tool, &v.server)).collect::<Vec<_>>().join(", ");
        tracing::error!("{}; restarting it (open Apps: {})", say(&reason), say(&apps));
        eprintln!("warning: {}; the Apps restart", say(&reason));
        self.trace.record(
            None,
            Direction::Diagnostic,
            &json!({"kind": "web-process-terminated", "reason": reason, "views": open.iter().map(|(id, _)| id).collect::<Vec<_>>()}),
        );
        // Every View comes back in a new process: a server's process that ended in the same
        // moment (everything killed at once) does not count against its Views.
        self.recovery.processes.forget();
        // The View on probation when it stopped again is the culprit.
        let culprit = self.recovery.on_probation.take();
        self.recovery.probation_mark = None;
        // The Views' webviews go too: they come back, remounted, once the new shell is ready.
        let _ = self.ui.send_event(UserEvent::Frame(FrameOp::Clear));
        for (id, v) in open {
            v.handle.frame_gone();
            self.proxies.remove(&id);
            self.forget_context(&id);
            let closing = !v.phase.is_live();
            // A View going to sleep comes back as its sleeper's card.
            if let Some(s) = self.hibernation.sleeper_mut(&id) {
                s.asleep = true;
                continue;
            }
            if closing || culprit.as_ref().is_some_and(|(c, _)| *c == id) || self.awaits_model_call(&id, &v) {
                continue;
            }
            self.recovery.to_restore.push(Restore::of(&id, &v));
        }
        if let Some((_, r)) = culprit {
            self.recovery.held.push(r);
        }
        // Consent questions of the gone Views are answered no; servers' questions and the
        // model's "run this tool?" (nobody answered it) are shown again.
        let asked_for_model = self.model_questions();
        self.questions.refuse_consents_except(&asked_for_model);
        let _ = self.ui.send_event(UserEvent::WebContent(WebContentOp::DismissHung));
        self.recovery.status_after_restart = Some(reason);
        self.recovery.recycling = true;
        self.shell_page.reloading();
        self.recovery.opened_since_recycle = 0;
        let _ = self.ui.send_event(UserEvent::WebContent(WebContentOp::Restart));
    }

    /// A restarted shell is ready: the Views open before the stop come back with their last
    /// input and result: all at once after a first stop, one at a time (probation) after
    /// repeated stops (see `supervisor`).
    pub(super) fn restore_views(&mut self) {
        for cmd in self.questions.elicitation_cmds() {
            self.shell(cmd);
        }
        self.ask_model_questions_again();
        self.show_sleepers();
        let Some(reason) = self.recovery.status_after_restart.take() else { return };
        // A script that drives the shell (tests, demos) drives the new one too.
        if let Some(script) = self.options.automation.script.clone() {
            let _ = self.ui.send_event(UserEvent::Eval(script));
        }
        for r in std::mem::take(&mut self.recovery.held) {
            let app = consent::app_label(&r.tool, &r.server);
            tracing::warn!("{} stopped the web content again; it is not reopened", say(&app));
            self.trace.record(
                Some(&r.old),
                Direction::Diagnostic,
                &json!({"kind": "held", "reason": "the web content stopped again while it was on probation"}),
            );
            self.shell(ShellCommand::Text {
                view: None,
                title: tool_label(&r.tool),
                text: format!("{app} stopped the Apps ({reason}) again right after it was reopened, so it was not reopened. Call it again from the list to try once more."),
                error: true,
            });
        }
        let restoring = std::mem::take(&mut self.recovery.to_restore);
        let count = restoring.len() + self.recovery.probation.len();
        let line = if self.recovery.supervisor.recent_stops() >= 2 {
            self.recovery.probation.extend(restoring);
            if self.recovery.on_probation.is_none() {
                self.advance_probation();
            }
            format!(
                "The Apps stopped again: {reason}. {count} come back one at a time, to find the App that stops them."
            )
        } else {
            let mut n = 0;
            for r in restoring {
                n += usize::from(self.reopen(r).is_some());
            }
            format!("The Apps stopped: {reason}. {n} reopened with their last input and result.")
        };
        // A card stays where the person looks; the status line changes with the next call.
        self.shell(ShellCommand::Text {
            view: None,
            title: "The Apps restarted".into(),
            text: line.clone(),
            error: true,
        });
        self.status(&line, true);
    }

    /// A View of the model's call whose call has not been made yet: it is not reopened, since a
    /// reopened View would call the tool itself, unasked and without the model's arguments. The
    /// call still goes on (asked first if it must be) and its result reaches the model.
    pub(super) fn awaits_model_call(&self, id: &str, v: &ViewState) -> bool {
        let waiting = v.result.is_none() && self.conversation.is_model_view(id);
        if waiting {
            tracing::info!(view = id, "a View of the model's call is not reopened before its call is made");
        }
        waiting
    }

    /// Reopens one View of before the stop; returns its new id.
    pub(super) fn reopen(&mut self, r: Restore) -> Option<ViewId> {
        let old = r.old.clone();
        match self.open_again(r, Opening::Reload) {
            Ok(id) => {
                self.trace.record(Some(&id), Direction::Diagnostic, &json!({"kind": "restored", "from": old}));
                Some(id)
            }
            Err((_, e)) => {
                tracing::warn!("could not reopen {old}: {e}");
                None
            }
        }
    }

    /// Opens `r`'s tool call again with its last input and result (the tool is not called
    /// again); returns the new View's id, or that id and why it could not open.
    pub(super) fn open_again(&mut self, r: Restore, how: Opening) -> std::result::Result<ViewId, (ViewId, Error)> {
        let id: ViewId = self.views.next_id();
        if let Some(result) = r.result {
            self.views.cache_result(&id, result);
        }
        match self.open(Some(&r.server), &r.tool, r.arguments, how) {
            Ok(()) => Ok(id),
            Err(e) => {
                self.views.uncache(&id);
                // It did not open: it stands for no sleeper's call.
                self.hibernation.take_call_failed(&id);
                Err((id, e))
            }
        }
    }

    /// Opens the next View on probation, if any.
    pub(super) fn advance_probation(&mut self) {
        while let Some(r) = self.recovery.probation.pop_front() {
            if let Some(id) = self.reopen(r.clone()) {
                self.recovery.on_probation = Some((id, r));
                return;
            }
        }
    }

    /// The View on probation initialized: once it stayed quiet a moment, the next may open.
    pub(super) fn probation_initialized(&mut self, view: &str) {
        if self.recovery.probation_started(view, Instant::now(), supervisor::web_content_mb) {
            self.probation_check_later(view);
        }
    }

    pub(super) fn probation_check_later(&self, view: &str) {
        let (tx, view) = (self.recovery.probation_tx.clone(), view.to_owned());
        tokio::spawn(async move {
            tokio::time::sleep(supervisor::PROBATION_QUIET).await;
            let _ = tx.send(view);
        });
    }

    /// A quiet period of the View on probation ended: it passes when the web content kept
    /// responding and did not grow much (a busy loop or a memory bomb is not quiet).
    pub(super) fn probation_passed(&mut self, view: &str) {
        match self.recovery.check_probation(view, Instant::now(), supervisor::web_content_mb) {
            ProbationCheck::NotOnProbation => {}
            ProbationCheck::NotQuietYet => self.probation_check_later(view),
            ProbationCheck::Passed => self.advance_probation(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_probation(view: &str) -> Recovery {
        let (recycle_tx, _) = mpsc::unbounded_channel();
        let (probation_tx, _) = mpsc::unbounded_channel();
        let mut recovery = Recovery::new(Duration::from_secs(5), recycle_tx, probation_tx);
        let restore =
            Restore { old: "v0".into(), server: "s".into(), tool: "t".into(), arguments: Map::new(), result: None };
        recovery.on_probation = Some((view.to_owned(), restore));
        recovery
    }

    #[test]
    fn a_view_passes_probation_when_quiet_or_after_the_longest_wait() {
        let start = Instant::now();
        // Quiet: the shell answers and the web content's memory grew little.
        let mut quiet = on_probation("v1");
        assert!(quiet.probation_started("v1", start, || 500));
        quiet.supervisor.alive(start);
        let check = quiet.check_probation("v1", start, || 500 + supervisor::PROBATION_GROWTH_MB);
        assert_eq!(check, ProbationCheck::Passed);
        assert!(!quiet.is_on_probation("v1"), "the next View's turn comes");

        // Its memory grows too much: checked again, until the longest wait is over.
        let mut growing = on_probation("v1");
        assert!(growing.probation_started("v1", start, || 500));
        growing.supervisor.alive(start);
        let check = growing.check_probation("v1", start, || 500 + supervisor::PROBATION_GROWTH_MB + 1);
        assert_eq!(check, ProbationCheck::NotQuietYet);
        assert!(growing.is_on_probation("v1"));
        let late = start + supervisor::PROBATION_MAX;
        assert_eq!(growing.check_probation("v1", late, || 10_000), ProbationCheck::Passed);

        // Another View, or one that never initialized, is not checked.
        let mut other = on_probation("v1");
        assert!(!other.probation_started("v2", start, || 500));
        assert_eq!(other.check_probation("v2", start, || 500), ProbationCheck::NotOnProbation);
        assert_eq!(other.check_probation("v1", start, || 500), ProbationCheck::NotOnProbation);
        assert!(other.is_on_probation("v1"));
    }
}
