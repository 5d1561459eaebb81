//! Views far out of sight go to sleep, and wake when the person scrolls back to them.
//!
//! A live View costs its web process about 17 MB (measured: the App SDK's JavaScript in
//! JavaScriptCore), and a long conversation holds many. Past a budget of live Views
//! ([`DEFAULT_LIVE_VIEWS`], `--live-views`), the Views the person saw least recently, out of
//! sight for [`SLEEP_AFTER`] at least, give their webview back; their card stays where it was,
//! as tall as it was, and says the App sleeps. Scrolled back near sight, the View wakes.
//!
//! What the App sees, all of it the spec's own sequence:
//! - Going to sleep: `ui/resource-teardown` (the spec lets a host tear a View down "for any
//!   reason, including ... resource re-allocation"), answered or timed out as on a close; then
//!   its document is gone.
//! - Waking: a new View of the same resource, as when it first opened: `ui/initialize` answered
//!   with the host context of now, then `ui/notifications/tool-input` with the same arguments
//!   and `ui/notifications/tool-result` with the same result. The tool is not called again: a
//!   View that slept before its result came wakes without a call, and the result of the first
//!   call reaches whatever stands for it when it comes (the sleeper keeps it for its wake, a View
//!   waking gets it at its mount, a woken View at once; see [`Controller::late_outcome`]). A call
//!   that failed is told to the woken View again.
//! - What it kept in its origin's storage it finds again; what it held only in memory (what the
//!   person typed into it, a timer) is gone, as after a reload.
//!
//! Never asleep: a View in sight or near it (one viewport above or below), in fullscreen or
//! picture-in-picture, still loading, with a consent question open, on probation, while its web
//! process does not respond, while the model is still writing the call it was opened for, or in
//! preview and `--exit-after` runs. Going to sleep never ends a web process.
//!
//! No exemption is the App's to hold: each is the person's doing (where they look, what they
//! answer), the host's (probation, a hung process) or the model's (how long it writes its call;
//! the App's server is asked nothing before the call is made). What an App does control, when
//! its tool's result comes and whether its View ever finishes its handshake, only delays its
//! sleep by a bound: a View without its result may sleep like any other [`NO_RESULT_AFTER`]
//! after its mount, as long as a call with no progress runs before it is cancelled. A View of
//! the model's call, once the call is made, is a View like any other: with its result it sleeps
//! and wakes as the others do (before, it never slept, so a conversation's Views were all
//! live whatever the budget).
//!
//! Sleeping is fair: a View that never finished its handshake (with its result or without, 10 s
//! after its mount) counts against the budget first and is put away before any live View, its
//! card saying why it is not live; and a View changing its height never makes another sleep or
//! wake (the shell re-reads what is near sight only when the person scrolls, see
//! `assets/shell/layout.js`).

use super::*;

/// Views that stay live when more are open (the ones the person saw last).
pub(super) const DEFAULT_LIVE_VIEWS: usize = 10;
/// A View out of sight this long may go to sleep: scrolling past it does not end it.
const SLEEP_AFTER: Duration = Duration::from_secs(2);
/// A View that did not finish its handshake this long after it was mounted counts against the
/// budget first: it goes before any live View, and its card says it did not start.
const NOT_STARTED_AFTER: Duration = Duration::from_secs(10);
/// A View still without its tool's result this long after it was mounted may sleep like any
/// other: the server decides when the result comes, so waiting for it is no exemption from the
/// budget. As long as a call with no progress runs before it is cancelled (the connection's
/// `IDLE_TIMEOUT`).
const NO_RESULT_AFTER: Duration = Duration::from_secs(60);
/// Test-only: milliseconds that stand for [`NO_RESULT_AFTER`] (the hostile suite's late tool
/// would otherwise keep a test waiting a minute).
pub(super) const NO_RESULT_AFTER_ENV: &str = "MCP_APPS_HOST_TEST_NO_RESULT_AFTER_MS";
/// The most Views whose teardown for sleep runs at once: tearing a View down is work for its
/// web process, and a host that opens a long conversation's worth of Views at once would
/// otherwise send the first ones out of sight their teardowns together, into a process busy
/// loading the rest.
const MAX_FALLING_ASLEEP: usize = 4;

/// What a sleeping View needs to wake where it was.
#[derive(Debug, Clone)]
pub(super) struct Sleeper {
    pub restore: Restore,
    /// Its card's title, and its frame's height when it went to sleep.
    pub title: String,
    pub height: f64,
    /// Its teardown is done (the card says it sleeps); until then it cannot wake.
    pub asleep: bool,
    /// A View is being opened in its place.
    pub waking: bool,
    /// It never finished its handshake: it was put away before live Views (its card says so).
    pub not_started: bool,
    /// Its tool call failed (why): it wakes told so, without a call.
    pub failed: Option<String>,
}

/// Whether a live View may go to sleep now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sleepable {
    /// Not now (in sight of a dialog, loading its result, in fullscreen, ...).
    No,
    /// An initialized View with its result.
    Yes,
    /// An initialized View still without its result (or whose call failed): once
    /// [`NO_RESULT_AFTER`] passed since its mount, it may sleep like one with its result.
    NoResult,
    /// It never finished its handshake (with its result or without): once
    /// [`NOT_STARTED_AFTER`] passed since its mount, it goes first.
    NotStarted,
}

/// Which Views are near sight, and which sleep.
#[derive(Debug, Default)]
pub(super) struct Hibernation {
    /// How many Views may stay live (0: none ever sleeps).
    budget: usize,
    /// The Views near sight in the shell's last report.
    near: HashSet<ViewId>,
    /// When each View was last near sight (or mounted).
    last_near: HashMap<ViewId, Instant>,
    /// Sleeping Views (going to sleep, asleep or waking), by their id before sleep.
    sleepers: HashMap<ViewId, Sleeper>,
    /// Views opened to wake a sleeper: new id -> the sleeper's id.
    waking: HashMap<ViewId, ViewId>,
    /// When each live View was mounted.
    mounted_at: HashMap<ViewId, Instant>,
    /// [`NO_RESULT_AFTER`], or what a test set.
    no_result_after: Duration,
    /// Views opened to wake a sleeper whose tool call was out (or failed, with why): their
    /// tool is not called again.
    no_call: HashMap<ViewId, Option<String>>,
    /// Tool calls whose View slept before their outcome came: the call's View id -> the id of
    /// what stands for it now (a sleeper, or the View that woke in its place).
    stands_for: HashMap<ViewId, ViewId>,
}

impl Hibernation {
    pub(super) fn new(budget: usize) -> Self {
        Self { budget, no_result_after: NO_RESULT_AFTER, ..Default::default() }
    }

    /// The bound on a View without its result, shortened by a test ([`NO_RESULT_AFTER_ENV`]).
    pub(super) fn with_no_result_after(mut self, bound: Duration) -> Self {
        self.no_result_after = bound;
        self
    }

    /// `view` was mounted at `now`: it counts as just seen.
    pub(super) fn mounted(&mut self, view: &str, now: Instant) {
        self.last_near.insert(view.to_owned(), now);
        self.mounted_at.insert(view.to_owned(), now);
    }

    /// The shell's report of the Views near sight; returns the sleepers to wake.
    pub(super) fn sight(&mut self, near: Vec<ViewId>, now: Instant) -> Vec<ViewId> {
        let near: HashSet<ViewId> = near.into_iter().collect();
        // Near now, or near until now.
        for view in near.iter().chain(self.near.difference(&near)) {
            if let Some(t) = self.last_near.get_mut(view) {
                *t = now;
            }
        }
        self.near = near;
        let mut wake: Vec<ViewId> = self
            .sleepers
            .iter()
            .filter(|(id, s)| s.asleep && !s.waking && self.near.contains(*id))
            .map(|(id, _)| id.clone())
            .collect();
        wake.sort();
        wake
    }

    /// Whether `live` Views are more than the budget allows.
    pub(super) fn over_budget(&self, live: usize) -> bool {
        self.budget > 0 && live > self.budget
    }

    /// Which of the `live` Views go to sleep now: the ones that never started (see
    /// [`Sleepable::NotStarted`]) first, then the ones seen least recently, out of sight long
    /// enough, until no more than the budget are live, and no more than [`MAX_FALLING_ASLEEP`]
    /// at a time.
    pub(super) fn choose(&self, live: &[(ViewId, Sleepable)], now: Instant) -> Vec<ViewId> {
        let falling = self.sleepers.values().filter(|s| !s.asleep).count();
        if !self.over_budget(live.len()) || falling >= MAX_FALLING_ASLEEP {
            return Vec::new();
        }
        let since = |t: Option<&Instant>| t.is_some_and(|t| now.saturating_duration_since(*t) >= SLEEP_AFTER);
        let mounted_for = |id: &ViewId, bound: Duration| {
            self.mounted_at.get(id).is_some_and(|t| now.saturating_duration_since(*t) >= bound)
        };
        let mut candidates: Vec<(bool, Instant, &ViewId)> = live
            .iter()
            .filter(|(id, _)| !self.near.contains(id))
            .filter_map(|(id, may)| {
                let seen = *self.last_near.get(id)?;
                let first = *may == Sleepable::NotStarted && mounted_for(id, NOT_STARTED_AFTER);
                let ready = match may {
                    Sleepable::Yes => true,
                    Sleepable::NoResult => mounted_for(id, self.no_result_after),
                    Sleepable::NotStarted | Sleepable::No => first,
                };
                (since(Some(&seen)) && ready).then_some((!first, seen, id))
            })
            .collect();
        candidates.sort();
        let n = (live.len() - self.budget).min(MAX_FALLING_ASLEEP - falling);
        candidates.into_iter().take(n).map(|(_, _, id)| id.clone()).collect()
    }

    /// `view` closed for good.
    pub(super) fn closed(&mut self, view: &str) {
        self.last_near.remove(view);
        self.mounted_at.remove(view);
    }

    pub(super) fn going_to_sleep(&mut self, view: &str, sleeper: Sleeper) {
        self.last_near.remove(view);
        self.mounted_at.remove(view);
        self.sleepers.insert(view.to_owned(), sleeper);
    }

    pub(super) fn sleeper(&self, view: &str) -> Option<&Sleeper> {
        self.sleepers.get(view)
    }

    pub(super) fn sleeper_mut(&mut self, view: &str) -> Option<&mut Sleeper> {
        self.sleepers.get_mut(view)
    }

    /// The person closed a sleeping View's card: it is forgotten.
    pub(super) fn forget(&mut self, view: &str) -> Option<Sleeper> {
        self.waking.retain(|_, old| old != view);
        self.sleepers.remove(view)
    }

    /// `new` is opened in the place of the sleeper `old`.
    pub(super) fn waking(&mut self, new: &str, old: &str) {
        if let Some(s) = self.sleepers.get_mut(old) {
            s.waking = true;
        }
        self.waking.insert(new.to_owned(), old.to_owned());
    }

    /// `new` is mounted: the sleeper it replaces, which is no more (a call out for it goes to
    /// `new` now).
    pub(super) fn woken(&mut self, new: &str) -> Option<(ViewId, Sleeper)> {
        let old = self.waking.remove(new)?;
        for now in self.stands_for.values_mut().filter(|now| **now == old) {
            new.clone_into(now);
        }
        self.sleepers.remove(&old).map(|s| (old, s))
    }

    /// The View being opened in the place of the sleeper `old`, if one is.
    pub(super) fn waking_for(&self, old: &str) -> Option<ViewId> {
        self.waking.iter().find(|(_, o)| *o == old).map(|(new, _)| new.clone())
    }

    /// `new` could not open: its sleeper stays asleep (it may try again when seen again).
    pub(super) fn wake_failed(&mut self, new: &str) -> Option<ViewId> {
        self.no_call.remove(new);
        let old = self.waking.remove(new)?;
        if let Some(s) = self.sleepers.get_mut(&old) {
            s.waking = false;
        }
        Some(old)
    }

    /// `view` goes to sleep with its call still out: that call's outcome comes to it (and to
    /// what wakes it), whichever View the call was first made for.
    pub(super) fn call_out(&mut self, view: &str) {
        let call = self.stands_for.iter().find(|(_, now)| *now == view).map_or(view, |(call, _)| call.as_str());
        self.stands_for.insert(call.to_owned(), view.to_owned());
    }

    /// The outcome of the call made for `call` has come: what stands for it now, if its View
    /// slept on the way.
    pub(super) fn call_answered(&mut self, call: &str) -> Option<ViewId> {
        self.stands_for.remove(call)
    }

    /// `view` is closed, or its sleeper forgotten: a call out for it has nobody to go to.
    pub(super) fn calls_forgotten(&mut self, view: &str) {
        self.stands_for.retain(|_, now| now != view);
    }

    /// `new` is about to open in a sleeper's place without a call (`failed`: why the first
    /// call failed, if it did).
    pub(super) fn open_without_call(&mut self, new: ViewId, failed: Option<String>) {
        self.no_call.insert(new, failed);
    }

    /// Whether `view` opens without calling its tool (it stands for a sleeper whose call is out).
    pub(super) fn opens_without_call(&self, view: &str) -> bool {
        self.no_call.contains_key(view)
    }

    /// `view` is mounted (or could not open): why the call it stands for failed, if it did.
    pub(super) fn take_call_failed(&mut self, view: &str) -> Option<String> {
        self.no_call.remove(view).flatten()
    }

    /// The sleepers, in the order they were opened (for a restarted shell).
    pub(super) fn sleepers(&self) -> Vec<(ViewId, Sleeper)> {
        let mut all: Vec<(ViewId, Sleeper)> = self.sleepers.iter().map(|(id, s)| (id.clone(), s.clone())).collect();
        all.sort_by_key(|(id, _)| view_number(id));
        all
    }

    /// The shell restarted: it reports what is near sight again.
    pub(super) fn restarted(&mut self) {
        self.near.clear();
    }

    pub(super) fn is_near(&self, view: &str) -> bool {
        self.near.contains(view)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.sleepers.is_empty()
    }
}

/// `v12` -> 12 (ids are `v` and a counter).
fn view_number(id: &str) -> u64 {
    id.trim_start_matches('v').parse().unwrap_or(u64::MAX)
}

/// What a sleeping View's card says.
fn asleep_text(title: &str, not_started: bool) -> String {
    if not_started {
        return format!(
            "{title} is not live: it never finished starting (its App did not complete the handshake with \
             the host), so it was put away first to save memory. It tries again when you scroll to it."
        );
    }
    format!("{title} is asleep to save memory. It wakes, with its input and result, when you scroll to it.")
}

impl Controller {
    /// Whether Views may sleep in this run.
    fn may_hibernate(&self) -> bool {
        !self.options.developer.panel
            && self.options.automation.exit_after.is_none()
            && !self.ending.is_exiting()
            && !self.recovery.is_recycling()
    }

    /// The shell says which Views are near sight: sleepers there wake, then the budget is kept.
    pub(super) fn on_sight(&mut self, near: Vec<ViewId>) {
        let wake = self.hibernation.sight(near, Instant::now());
        for old in wake {
            self.wake(&old);
        }
        self.keep_budget();
    }

    /// Puts Views to sleep while more than the budget are live (the supervisor's tick and each
    /// sight report).
    pub(super) fn keep_budget(&mut self) {
        // Every tick: nothing is gathered unless more Views are live than the budget.
        let count = self.views.values().filter(|v| v.phase.is_live()).count();
        if !self.may_hibernate() || !self.hibernation.over_budget(count) {
            return;
        }
        let live: Vec<(ViewId, Sleepable)> = self
            .views
            .iter()
            .filter(|(_, v)| v.phase.is_live())
            .map(|(id, v)| (id.clone(), self.may_sleep(id, v)))
            .collect();
        for view in self.hibernation.choose(&live, Instant::now()) {
            self.sleep(&view);
        }
    }

    /// Whether `v` may sleep; never while its web process does not respond (its teardown
    /// could not be answered, and the process is busy enough). A View that never finished its
    /// handshake may be put away first ([`Sleepable::NotStarted`]); one still without its
    /// result may sleep once it waited long enough ([`Sleepable::NoResult`]).
    fn may_sleep(&self, id: &str, v: &ViewState) -> Sleepable {
        let may = !self.recovery.is_hung(&v.label)
            && v.mode == DisplayMode::Inline
            && !self.questions.consent_open_for(id)
            && !self.recovery.is_on_probation(id)
            && !self.conversation.model_writing_call(id);
        match v.phase {
            Phase::Initialized if may && v.result.is_none() => Sleepable::NoResult,
            Phase::Initialized if may && v.reached.result_delivered => Sleepable::Yes,
            Phase::Mounted if may && !v.reached.initialized => Sleepable::NotStarted,
            _ => Sleepable::No,
        }
    }

    /// Tears `view` down for sleep; its card stays (see [`Self::fell_asleep`]).
    fn sleep(&mut self, view: &str) {
        let Some(v) = self.views.get(view) else { return };
        let sleeper = Sleeper {
            restore: Restore::of(view, v),
            title: tool_label(&v.tool),
            height: v.frame.height(),
            asleep: false,
            waking: false,
            not_started: v.phase == Phase::Mounted,
            failed: v.call_failed.clone(),
        };
        if v.result.is_none() && v.call_failed.is_none() {
            // Its call is still out: its outcome comes to this sleeper, then to what wakes it.
            self.hibernation.call_out(view);
        }
        tracing::info!(view, "the View goes to sleep (out of sight, over the budget of live Views)");
        self.trace.record(Some(view), Direction::Diagnostic, &json!({"kind": "sleep"}));
        self.hibernation.going_to_sleep(view, sleeper);
        let handle = v.handle.clone();
        self.spawn_teardown(handle);
    }

    /// A sleeping View's teardown ended: its webview goes, its card stays and says it sleeps.
    /// Returns false for a View that is not going to sleep.
    pub(super) fn fell_asleep(&mut self, view: &str) -> bool {
        let Some(s) = self.hibernation.sleeper_mut(view) else { return false };
        if s.asleep {
            return true;
        }
        s.asleep = true;
        let text = asleep_text(&s.title, s.not_started);
        if let Some(v) = self.views.remove(view) {
            v.handle.frame_gone();
        }
        self.proxies.remove(view);
        // Its process stays even if it does not respond now: sleep is the host's own choice
        // and must not stop the server's other Views.
        let _ = self.ui.send_event(UserEvent::Frame(FrameOp::Unmount { view: view.to_owned(), keep_process: true }));
        self.shell(ShellCommand::Asleep { view: view.to_owned(), title: None, height: None, text });
        // Seen again while its teardown ran: it wakes at once.
        if self.hibernation.is_near(view) {
            self.wake(view);
        } else {
            // Its place among those falling asleep is free: the next one goes now, not at the
            // next tick, so a crowd's sleepers (and the collection after them, webext/collect.c)
            // are done sooner.
            self.keep_budget();
        }
        true
    }

    /// Opens a View in the place of the sleeper `old`, with its input and result.
    fn wake(&mut self, old: &str) {
        let Some(s) = self.hibernation.sleeper(old).filter(|s| s.asleep && !s.waking).cloned() else { return };
        if s.restore.result.is_none() {
            // Its tool is not called again: the View waits for the first call's result (see
            // `late_outcome`), or hears at its mount that the call failed.
            self.hibernation.open_without_call(self.views.next_id(), s.failed.clone());
        }
        // Its setup reports to the loop later: marked waking before that.
        let (id, failed) = match self.open_again(s.restore, Opening::Wake) {
            Ok(id) => (id, None),
            Err((id, e)) => (id, Some(e)),
        };
        self.hibernation.waking(&id, old);
        tracing::info!(view = old, new = %id, "the View wakes");
        if let Some(e) = failed {
            self.wake_failed(&id, &e.to_string());
        }
    }

    /// A View opened to wake a sleeper could not start: the card says why, and it may try again
    /// when seen again. Returns false for a View that was not waking one.
    pub(super) fn wake_failed(&mut self, new: &str, error: &str) -> bool {
        let Some(old) = self.hibernation.wake_failed(new) else { return false };
        tracing::warn!(view = %old, "the View could not wake: {error}");
        let title = self.hibernation.sleeper(&old).map(|s| s.title.clone()).unwrap_or_default();
        let text = format!("{title} could not wake: {error}. Scroll away and back to try again.");
        self.shell(ShellCommand::Asleep { view: old, title: None, height: None, text });
        true
    }

    /// `new`, mounted, replaces a sleeper: its card, its height and its place.
    pub(super) fn woken(&mut self, new: &str) -> Option<(ViewId, f64)> {
        let (old, s) = self.hibernation.woken(new)?;
        self.forget_context(&old);
        self.trace.record(Some(new), Direction::Diagnostic, &json!({"kind": "woken", "from": old}));
        Some((old, s.height))
    }

    /// The person closed the card of a sleeping View.
    pub(super) fn close_sleeper(&mut self, view: &str) -> bool {
        let Some(s) = self.hibernation.forget(view) else { return false };
        self.hibernation.calls_forgotten(view);
        self.forget_context(view);
        if !s.asleep {
            // Still being torn down: the teardown's end closes it as any closed View.
            return false;
        }
        self.shell(ShellCommand::Unmount { view: view.to_owned() });
        self.schedule_recycle();
        true
    }

    /// The outcome of the tool call made for `call`, when the View it was made for slept on
    /// the way: it goes to what stands for that call now (the sleeper, kept for its wake; the
    /// View opened to wake it, at its mount; the woken View, at once). Returns false for a call
    /// whose View never slept (its own task told it).
    pub(super) fn late_outcome(&mut self, call: &str, outcome: &std::result::Result<Value, String>) -> bool {
        let Some(now) = self.hibernation.call_answered(call) else { return false };
        if let Some(s) = self.hibernation.sleeper_mut(&now) {
            match outcome {
                Ok(result) => s.restore.result = Some(result.clone()),
                Err(e) => s.failed = Some(e.clone()),
            }
            if let Some(new) = self.hibernation.waking_for(&now) {
                match outcome {
                    // Its mount hands the result over, as a woken View's cached one.
                    Ok(result) => self.views.result_for_mount(&new, result),
                    Err(e) => self.hibernation.open_without_call(new, Some(e.clone())),
                }
            }
        } else {
            self.views.late_outcome(&now, outcome);
        }
        tracing::info!(view = %now, call, "the result of a call made before the View slept");
        true
    }

    /// A restarted shell: the sleepers' cards again, in their order.
    pub(super) fn show_sleepers(&mut self) {
        self.hibernation.restarted();
        for (view, s) in self.hibernation.sleepers() {
            if !s.asleep {
                continue;
            }
            let text = asleep_text(&s.title, s.not_started);
            self.shell(ShellCommand::Asleep { view, title: Some(s.title), height: Some(s.height), text });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sleeper going to sleep (its teardown runs).
    fn falling(height: f64) -> Sleeper {
        let restore =
            Restore { old: "v1".into(), server: "s".into(), tool: "t".into(), arguments: Map::new(), result: None };
        Sleeper { restore, title: "T".into(), height, asleep: false, waking: false, not_started: false, failed: None }
    }

    fn live(ids: &[&str]) -> Vec<(ViewId, Sleepable)> {
        ids.iter().map(|id| ((*id).to_owned(), Sleepable::Yes)).collect()
    }

    #[test]
    fn a_view_that_never_started_goes_first_and_a_live_one_stays() {
        let t0 = Instant::now();
        let mut h = Hibernation::new(2);
        // v1 was seen least recently; v3 never finished its handshake.
        for (i, id) in ["v1", "v2", "v3"].iter().enumerate() {
            h.mounted(id, t0 + Duration::from_secs(i as u64));
        }
        h.sight(vec![], t0 + Duration::from_secs(3));
        let all = vec![
            ("v1".to_owned(), Sleepable::Yes),
            ("v2".to_owned(), Sleepable::Yes),
            ("v3".to_owned(), Sleepable::NotStarted),
        ];
        // Before its start had time, it waits like any loading View: the least seen goes.
        assert_eq!(h.choose(&all, t0 + Duration::from_secs(6)), vec!["v1".to_owned()]);
        // Once it had time to start and did not, it goes first.
        assert_eq!(h.choose(&all, t0 + NOT_STARTED_AFTER + Duration::from_secs(3)), vec!["v3".to_owned()]);
        assert!(asleep_text("T", true).contains("never finished starting"));
    }

    #[test]
    fn a_view_without_its_result_sleeps_once_it_waited_long_enough() {
        let t0 = Instant::now();
        let mut h = Hibernation::new(2);
        // v1 never gets its result; v2 and v3 have theirs and were seen after it.
        for (i, id) in ["v1", "v2", "v3"].iter().enumerate() {
            h.mounted(id, t0 + Duration::from_secs(i as u64));
        }
        h.sight(vec![], t0 + Duration::from_secs(3));
        let all = vec![
            ("v1".to_owned(), Sleepable::NoResult),
            ("v2".to_owned(), Sleepable::Yes),
            ("v3".to_owned(), Sleepable::Yes),
        ];
        // While its result may still come, the Views with theirs sleep in its stead, as before.
        assert_eq!(h.choose(&all, t0 + Duration::from_secs(10)), vec!["v2".to_owned()]);
        // Past the bound it is one View among others: seen least recently, it goes.
        assert_eq!(h.choose(&all, t0 + NO_RESULT_AFTER), vec!["v1".to_owned()]);
        // A test's shorter bound.
        let h = h.with_no_result_after(Duration::from_secs(5));
        assert_eq!(h.choose(&all, t0 + Duration::from_secs(6)), vec!["v1".to_owned()]);
        assert!(NO_RESULT_AFTER >= NOT_STARTED_AFTER);
    }

    #[test]
    fn the_views_seen_least_recently_sleep_down_to_the_budget() {
        let t0 = Instant::now();
        let mut h = Hibernation::new(2);
        for (i, id) in ["v1", "v2", "v3", "v4"].iter().enumerate() {
            h.mounted(id, t0 + Duration::from_secs(i as u64));
        }
        h.sight(vec!["v4".into()], t0 + Duration::from_secs(4));
        let later = t0 + Duration::from_secs(10);
        assert_eq!(h.choose(&live(&["v1", "v2", "v3", "v4"]), later), vec!["v1".to_owned(), "v2".to_owned()]);
        // Within the budget, nothing sleeps; with no budget, nothing ever does.
        assert!(h.choose(&live(&["v3", "v4"]), later).is_empty());
        assert!(Hibernation::new(0).choose(&live(&["v1", "v2", "v3"]), later).is_empty());
    }

    #[test]
    fn a_view_near_sight_or_just_out_of_it_or_not_allowed_stays_live() {
        let t0 = Instant::now();
        let mut h = Hibernation::new(1);
        for id in ["v1", "v2", "v3"] {
            h.mounted(id, t0);
        }
        // v1 is near; v2 left sight a moment ago; v3 may not sleep (say, a dialog is open).
        h.sight(vec!["v1".into(), "v2".into()], t0 + Duration::from_secs(5));
        h.sight(vec!["v1".into()], t0 + Duration::from_secs(9));
        let all = vec![
            ("v1".to_owned(), Sleepable::Yes),
            ("v2".to_owned(), Sleepable::Yes),
            ("v3".to_owned(), Sleepable::No),
        ];
        assert!(h.choose(&all, t0 + Duration::from_secs(10)).is_empty());
        assert_eq!(h.choose(&all, t0 + Duration::from_secs(12)), vec!["v2".to_owned()]);
    }

    #[test]
    fn a_sleeper_wakes_once_when_seen_and_its_waking_view_replaces_it() {
        let t0 = Instant::now();
        let mut h = Hibernation::new(1);
        h.going_to_sleep("v1", falling(300.0));
        // Not asleep yet (its teardown runs): seen, it does not wake.
        assert!(h.sight(vec!["v1".into()], t0).is_empty());
        h.sleeper_mut("v1").unwrap().asleep = true;
        assert_eq!(h.sight(vec!["v1".into()], t0), vec!["v1".to_owned()]);
        h.waking("v9", "v1");
        assert!(h.sight(vec!["v1".into()], t0).is_empty(), "a sleeper being woken is not woken twice");
        // A failed start lets it try again; a mounted one takes its place for good.
        assert_eq!(h.wake_failed("v9"), Some("v1".to_owned()));
        assert_eq!(h.sight(vec!["v1".into()], t0), vec!["v1".to_owned()]);
        h.waking("v10", "v1");
        let (old, s) = h.woken("v10").unwrap();
        assert_eq!((old.as_str(), s.height), ("v1", 300.0));
        assert!(h.is_empty());
    }

    #[test]
    fn only_a_few_views_fall_asleep_at_a_time() {
        let t0 = Instant::now();
        let mut h = Hibernation::new(1);
        let ids: Vec<String> = (1..=20).map(|i| format!("v{i}")).collect();
        for id in &ids {
            h.mounted(id, t0);
        }
        let later = t0 + Duration::from_secs(10);
        let all: Vec<(ViewId, Sleepable)> = ids.iter().map(|id| (id.clone(), Sleepable::Yes)).collect();
        let first = h.choose(&all, later);
        assert_eq!(first.len(), MAX_FALLING_ASLEEP);
        for id in &first {
            h.going_to_sleep(id, falling(1.0));
        }
        let rest: Vec<(ViewId, Sleepable)> = all.iter().filter(|(id, _)| !first.contains(id)).cloned().collect();
        assert!(h.choose(&rest, later).is_empty(), "more fell asleep while the first teardowns ran");
        // One teardown done: one more may start.
        h.sleeper_mut(&first[0]).unwrap().asleep = true;
        assert_eq!(h.choose(&rest, later).len(), 1);
    }
}
