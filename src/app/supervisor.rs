//! Supervision of the web content: the host notices a web process that stops responding or
//! dies, tells the person, and brings everything else back.
//!
//! - **Hang**: the shell page sends a heartbeat every [`HEARTBEAT`]; when none arrives for
//!   [`HANG_AFTER`], the web content is unresponsive (a View's busy loop stops the shell too, so
//!   the person is told in a native dialog). The person may wait or stop it; nobody answering,
//!   the host stops it after [`AUTO_STOP_AFTER`].
//! - **Memory**: a web process above the limit (`--web-memory-limit`) is stopped by the host
//!   ([`over_limit`] reads `/proc`): it cannot take the machine's memory.
//! - **Death**: WebKit's `web-process-terminated` (a crash, a memory kill, or the host's stop):
//!   the shell reloads in a fresh process and every open View comes back with its last input and
//!   result (the tool is not called again), the conversation panel and open server questions too.
//! - **Crash loops**: one web process serves every View, so a stop does not say which View did
//!   it. After the first stop every View comes back at once. After another within
//!   [`SUSPECT_WINDOW`], they come back one at a time ("probation"): each must initialize and
//!   stay quiet for [`PROBATION_QUIET`] (the shell's heartbeat keeps coming and the web content
//!   grows by less than [`PROBATION_GROWTH_MB`]; up to [`PROBATION_MAX`]) before the next opens,
//!   and the View on probation when the web content stops again is the culprit: it is not
//!   reopened, and the person is told.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How often the shell says it is alive.
pub(crate) const HEARTBEAT: Duration = Duration::from_millis(250);
/// No heartbeat for this long: the web content is unresponsive (the bound is 2 s).
pub(crate) const HANG_AFTER: Duration = Duration::from_millis(1500);
/// Unanswered, the host stops unresponsive web content after this long.
pub(crate) const AUTO_STOP_AFTER: Duration = Duration::from_secs(15);
/// Stops within this long of each other put the restored Views on probation.
pub(crate) const SUSPECT_WINDOW: Duration = Duration::from_secs(120);
/// How long a View on probation must stay quiet after it initialized.
pub(crate) const PROBATION_QUIET: Duration = Duration::from_millis(2000);
/// Growing by more than this in a quiet period is not quiet.
pub(crate) const PROBATION_GROWTH_MB: u64 = 64;
/// A View that is never quite quiet passes after this long on probation.
pub(crate) const PROBATION_MAX: Duration = Duration::from_secs(12);
/// The default web content memory limit: a quarter of the machine's memory, at most 4 GiB.
pub(crate) const DEFAULT_LIMIT_CAP_MB: u64 = 4096;

/// What the supervisor decided on a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tick {
    /// All is well, or already reported.
    Quiet,
    /// The web content just became unresponsive: tell the person.
    HangStarted,
    /// Unresponsive and unanswered for too long: stop it.
    StopNow,
}

/// The supervisor's state (held by the controller; time is passed in, so it is testable).
#[derive(Debug)]
pub(crate) struct Supervisor {
    last_alive: Option<Instant>,
    /// Since when the web content is unresponsive, and when the host stops it.
    hang: Option<(Instant, Instant)>,
    /// Why the host is stopping the web content (set before it asks WebKit to end it).
    stopping: Option<String>,
    /// When the web content stopped, recent first.
    stops: VecDeque<Instant>,
    /// How long a hang may go unanswered.
    auto_stop: Duration,
}

impl Supervisor {
    pub(crate) fn new(auto_stop: Duration) -> Self {
        Self { last_alive: None, hang: None, stopping: None, stops: VecDeque::new(), auto_stop }
    }

    /// How long a hang may go unanswered before the host stops it.
    pub(crate) fn auto_stop(&self) -> Duration {
        self.auto_stop
    }

    /// A heartbeat; returns how long the web content was unresponsive, if it was.
    pub(crate) fn alive(&mut self, now: Instant) -> Option<Duration> {
        self.last_alive = Some(now);
        self.hang.take().map(|(since, _)| now.saturating_duration_since(since))
    }

    /// The shell is not there (loading, recycled): no heartbeat is expected until it says ready.
    pub(crate) fn pause(&mut self) {
        self.last_alive = None;
        self.hang = None;
    }

    pub(crate) fn tick(&mut self, now: Instant) -> Tick {
        let Some(last) = self.last_alive else { return Tick::Quiet };
        if self.stopping.is_some() {
            return Tick::Quiet;
        }
        match self.hang {
            None if now.saturating_duration_since(last) >= HANG_AFTER => {
                self.hang = Some((last, now + self.auto_stop));
                Tick::HangStarted
            }
            Some((_, stop_at)) if now >= stop_at => Tick::StopNow,
            _ => Tick::Quiet,
        }
    }

    /// The person chose to wait: the host stops it by itself only after another period.
    pub(crate) fn wait_more(&mut self, now: Instant) {
        if let Some((since, _)) = self.hang {
            self.hang = Some((since, now + self.auto_stop));
        }
    }

    /// The host is about to end the web content, for `reason`.
    pub(crate) fn stopping(&mut self, reason: impl Into<String>) {
        self.stopping.get_or_insert_with(|| reason.into());
    }

    /// The web process ended; returns why, in words for a person (the host's own reason when
    /// it stopped it, otherwise WebKit's), and starts over waiting for a ready shell.
    pub(crate) fn terminated(&mut self, now: Instant, webkit_reason: &str) -> String {
        self.pause();
        self.stops.push_front(now);
        while self.stops.back().is_some_and(|t| now.saturating_duration_since(*t) > SUSPECT_WINDOW) {
            self.stops.pop_back();
        }
        self.stopping.take().unwrap_or_else(|| webkit_reason.to_owned())
    }

    /// Whether the shell's heartbeat came within the last `within`.
    pub(crate) fn alive_within(&self, now: Instant, within: Duration) -> bool {
        self.hang.is_none() && self.last_alive.is_some_and(|t| now.saturating_duration_since(t) <= within)
    }

    /// How many stops happened within [`SUSPECT_WINDOW`] (counting the last).
    pub(crate) fn recent_stops(&self) -> usize {
        self.stops.len()
    }
}

/// The web processes of Views, one per server (by sandbox label; see `desktop/frames/`): which do not
/// respond and since when, when each stopped, and why the host ended one.
#[derive(Debug, Default)]
pub(crate) struct ViewProcesses {
    /// Label -> when it stopped answering and when the host stops it.
    hung: std::collections::HashMap<String, (Instant, Instant)>,
    /// Label -> its recent stops, recent first.
    stops: std::collections::HashMap<String, VecDeque<Instant>>,
    /// Why the host just ended a process, for the termination report that follows.
    ending: Option<(Instant, String)>,
}

/// How long the host's reason for ending a process waits for WebKit's report of it.
const ENDING_MATCHES_FOR: Duration = Duration::from_secs(3);

impl ViewProcesses {
    /// The process of `label` stopped answering at `since`; the host stops it after `auto_stop`.
    pub(crate) fn hung(&mut self, label: &str, since: Instant, auto_stop: Duration) {
        self.hung.entry(label.to_owned()).or_insert((since, since + HANG_AFTER + auto_stop));
    }

    /// It answers again: whether it was hung.
    pub(crate) fn responsive(&mut self, label: &str) -> bool {
        self.hung.remove(label).is_some()
    }

    pub(crate) fn is_hung(&self, label: &str) -> bool {
        self.hung.contains_key(label)
    }

    /// The person chose to wait for `label`: stopped by the host only after another period.
    pub(crate) fn wait_more(&mut self, label: &str, now: Instant, auto_stop: Duration) {
        if let Some((_, stop_at)) = self.hung.get_mut(label) {
            *stop_at = now + auto_stop;
        }
    }

    /// The labels whose unanswered hang is over its time now (each reported once).
    pub(crate) fn overdue(&mut self, now: Instant) -> Vec<String> {
        let due: Vec<String> = self.hung.iter().filter(|(_, (_, at))| now >= *at).map(|(l, _)| l.clone()).collect();
        for label in &due {
            // Not again until it answers, or dies.
            if let Some(h) = self.hung.get_mut(label) {
                h.1 = now + Duration::from_secs(86_400);
            }
        }
        due
    }

    /// The host is about to end a process, for `reason`.
    pub(crate) fn ending(&mut self, now: Instant, reason: impl Into<String>) {
        self.ending = Some((now, reason.into()));
    }

    /// The host's reason if it ended a process just now (taken), else `webkit_reason`.
    pub(crate) fn reason(&mut self, now: Instant, webkit_reason: &str) -> String {
        match self.ending.take() {
            Some((at, reason)) if now.saturating_duration_since(at) <= ENDING_MATCHES_FOR => reason,
            _ => webkit_reason.to_owned(),
        }
    }

    /// Every View comes back in new processes (the shell restarted): their earlier stops and
    /// hangs are of processes that are gone.
    pub(crate) fn forget(&mut self) {
        self.hung.clear();
        self.stops.clear();
    }

    /// The process of `label` ended at `now`; returns how many times it did within
    /// [`SUSPECT_WINDOW`] (counting this one).
    pub(crate) fn terminated(&mut self, label: &str, now: Instant) -> usize {
        self.hung.remove(label);
        let stops = self.stops.entry(label.to_owned()).or_default();
        stops.push_front(now);
        while stops.back().is_some_and(|t| now.saturating_duration_since(*t) > SUSPECT_WINDOW) {
            stops.pop_back();
        }
        stops.len()
    }
}

/// The web content memory limit in MB: `configured`, or a quarter of the machine's memory (at
/// most [`DEFAULT_LIMIT_CAP_MB`]).
pub(crate) fn memory_limit_mb(configured: Option<u64>) -> u64 {
    configured.unwrap_or_else(|| {
        let total_kb = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| m.lines().find_map(|l| l.strip_prefix("MemTotal:")).map(str::to_owned))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(8 * 1024 * 1024);
        (total_kb / 1024 / 4).min(DEFAULT_LIMIT_CAP_MB)
    })
}

/// WebKit web processes under this process, with their resident memory in kB (Linux `/proc`).
pub(crate) fn web_processes() -> Vec<(u32, u64)> {
    let me = std::process::id();
    let mut parents: Vec<(u32, u32, String)> = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let name = stat[open + 1..close].to_owned();
        if let Some(ppid) = stat[close + 1..].split_whitespace().nth(1).and_then(|s| s.parse().ok()) {
            parents.push((pid, ppid, name));
        }
    }
    let mut ours = vec![me];
    let mut found = Vec::new();
    while let Some(parent) = ours.pop() {
        for (pid, _, name) in parents.iter().filter(|(_, pp, _)| *pp == parent) {
            ours.push(*pid);
            if name.starts_with("WebKitWebProces") {
                found.push(*pid);
            }
        }
    }
    found.into_iter().filter_map(|pid| rss_kb(pid).map(|kb| (pid, kb))).collect()
}

/// The resident memory of the web content, for a run's figures: every web process, and those
/// of the Views, which are all but the first one started (the shell's, which starts before any
/// View). `{"kind": "memory", "detail": {"webContentKb", "viewsKb", "processes"}}`.
pub(crate) fn memory_record() -> Option<serde_json::Value> {
    let started = |pid: u32| -> Option<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Field 22 (start time), the 20th after the command's closing parenthesis.
        stat[stat.rfind(')')? + 1..].split_whitespace().nth(19)?.parse().ok()
    };
    let mut found: Vec<(u64, u32, u64)> =
        web_processes().into_iter().map(|(pid, kb)| (started(pid).unwrap_or(u64::MAX), pid, kb)).collect();
    if found.is_empty() {
        return None;
    }
    found.sort();
    let total: u64 = found.iter().map(|(_, _, kb)| kb).sum();
    let views: u64 = found.iter().skip(1).map(|(_, _, kb)| kb).sum();
    Some(
        serde_json::json!({"kind": "memory", "detail": {"webContentKb": total, "viewsKb": views, "processes": found.len()}}),
    )
}

fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().trim_end_matches("kB").trim().parse().ok()
}

/// The resident memory of all web processes, in MB.
pub(crate) fn web_content_mb() -> u64 {
    web_processes().into_iter().map(|(_, kb)| kb).sum::<u64>() / 1024
}

/// Checks the web processes against `limit_mb` every 500 ms on a blocking thread and sends
/// `(pid, MB)` of one above it; ends when the receiver is dropped.
pub(crate) fn watch_memory(limit_mb: u64) -> tokio::sync::mpsc::Receiver<(u32, u64)> {
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let Ok(found) = tokio::task::spawn_blocking(move || over_limit(limit_mb)).await else { return };
            if let Some(over) = found {
                if tx.send(over).await.is_err() {
                    return;
                }
            } else if tx.is_closed() {
                return;
            }
        }
    });
    rx
}

/// Ends web process `pid` (over its memory limit) at once. WebKit's own stop needs the webview,
/// and WebKit does not say which process serves which webview; it reports the process gone to
/// every webview it served (`web-process-terminated`), so the right Views recover.
#[allow(unsafe_code)]
pub(crate) fn kill(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    unsafe { libc::kill(pid, libc::SIGKILL) == 0 }
}

/// The first web process above `limit_mb`, if any: `(pid, its MB)`.
pub(crate) fn over_limit(limit_mb: u64) -> Option<(u32, u64)> {
    web_processes().into_iter().map(|(pid, kb)| (pid, kb / 1024)).find(|(_, mb)| *mb > limit_mb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silent_shell_is_a_hang_then_a_stop_and_a_heartbeat_ends_it() {
        let t0 = Instant::now();
        let mut s = Supervisor::new(AUTO_STOP_AFTER);
        assert_eq!(s.tick(t0 + Duration::from_secs(60)), Tick::Quiet, "no heartbeat expected before the first");
        s.alive(t0);
        assert_eq!(s.tick(t0 + Duration::from_millis(1000)), Tick::Quiet);
        assert_eq!(s.tick(t0 + HANG_AFTER), Tick::HangStarted);
        assert_eq!(s.tick(t0 + HANG_AFTER + Duration::from_millis(250)), Tick::Quiet, "reported once");
        s.wait_more(t0 + Duration::from_secs(10));
        assert_eq!(s.tick(t0 + HANG_AFTER + AUTO_STOP_AFTER), Tick::Quiet, "the person chose to wait");
        assert_eq!(s.tick(t0 + Duration::from_secs(10) + AUTO_STOP_AFTER), Tick::StopNow);
        let hung = s.alive(t0 + Duration::from_secs(12)).unwrap();
        assert_eq!(hung, Duration::from_secs(12), "measured from the last heartbeat");
        assert_eq!(s.alive(t0 + Duration::from_secs(13)), None, "the hang is over");
    }

    #[test]
    fn the_hosts_own_reason_wins_and_repeat_stops_make_suspects() {
        let t0 = Instant::now();
        let mut s = Supervisor::new(AUTO_STOP_AFTER);
        s.stopping("it used 900 MB, over the limit of 600 MB");
        assert_eq!(s.terminated(t0, "crashed"), "it used 900 MB, over the limit of 600 MB");
        assert_eq!(s.recent_stops(), 1);
        assert_eq!(s.terminated(t0 + Duration::from_secs(1), "crashed"), "crashed");
        assert_eq!(s.recent_stops(), 2, "a repeat stop: Views come back on probation");
        s.terminated(t0 + SUSPECT_WINDOW * 3, "crashed");
        assert_eq!(s.recent_stops(), 1, "old stops are forgotten");
    }

    #[test]
    fn a_servers_process_hangs_stops_and_repeats_on_its_own() {
        let t0 = Instant::now();
        let mut p = ViewProcesses::default();
        p.hung("a", t0, AUTO_STOP_AFTER);
        assert!(p.is_hung("a") && !p.is_hung("b"));
        assert!(p.overdue(t0 + AUTO_STOP_AFTER).is_empty(), "counted from when it stopped answering");
        assert_eq!(p.overdue(t0 + HANG_AFTER + AUTO_STOP_AFTER), vec!["a".to_owned()]);
        assert!(p.overdue(t0 + HANG_AFTER + AUTO_STOP_AFTER * 2).is_empty(), "reported once");
        assert!(p.responsive("a") && !p.responsive("a"));
        p.hung("b", t0, AUTO_STOP_AFTER);
        p.wait_more("b", t0 + Duration::from_secs(16), AUTO_STOP_AFTER);
        assert!(p.overdue(t0 + Duration::from_secs(20)).is_empty(), "the person chose to wait");
        assert_eq!(p.overdue(t0 + Duration::from_secs(31)), vec!["b".to_owned()]);
        assert_eq!(p.terminated("b", t0 + Duration::from_secs(31)), 1);
        assert!(!p.is_hung("b"), "a dead process does not hang");
        assert_eq!(p.terminated("b", t0 + Duration::from_secs(40)), 2, "a repeat stop");
        assert_eq!(p.terminated("a", t0 + Duration::from_secs(40)), 1, "another server's count is its own");
        assert_eq!(p.terminated("b", t0 + SUSPECT_WINDOW * 3), 1, "old stops are forgotten");
        p.hung("a", t0, AUTO_STOP_AFTER);
        p.forget();
        assert!(!p.is_hung("a"), "the shell restarted: every process is new");
        assert_eq!(p.terminated("b", t0 + SUSPECT_WINDOW * 3), 1, "a stop before the restart does not count");
    }

    #[test]
    fn the_hosts_reason_for_ending_a_process_is_used_once_and_only_soon_after() {
        let t0 = Instant::now();
        let mut p = ViewProcesses::default();
        p.ending(t0, "it used 900 MB");
        assert_eq!(p.reason(t0 + Duration::from_millis(300), "crashed"), "it used 900 MB");
        assert_eq!(p.reason(t0 + Duration::from_millis(400), "crashed"), "crashed", "taken");
        p.ending(t0, "it used 900 MB");
        assert_eq!(p.reason(t0 + Duration::from_secs(10), "crashed"), "crashed", "too old to be this one");
    }

    #[test]
    fn the_memory_limit_defaults_to_a_quarter_of_the_machine() {
        assert_eq!(memory_limit_mb(Some(600)), 600);
        let default = memory_limit_mb(None);
        assert!(default > 0 && default <= DEFAULT_LIMIT_CAP_MB, "{default}");
    }
}
