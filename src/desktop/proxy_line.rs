//! A View's line to Rust: what its proxy page sends on its webview's IPC handler, read on the UI
//! thread. The View's JSON-RPC messages go to its session unparsed (the hot path); the rest
//! (diagnostics, drop reasons) is bounded and parsed here.
//!
//! The View shares its proxy's origin, so it can script the proxy page and call the line itself
//! with anything, as fast as it likes. Every diagnostic becomes a line of the host's log, a
//! trace record and a row of preview's panel: a [`DiagnosticBudget`] per View keeps a View that
//! sends them in a loop from writing the host's log without end.

use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::ipc::IpcSecret;
use crate::app::shell::ShellMessage;
use crate::app::window::HostInput;

/// The largest diagnostic (or drop reason) a View's proxy line carries.
pub(super) const MAX_DIAGNOSTIC_BYTES: usize = 64 * 1024;

/// The most diagnostics one crossing carries (the proxy sends at most 200 together): a View
/// that calls the line itself gets no more log lines out of one crossing than this.
const MAX_DIAGNOSTICS_PER_LINE: usize = 256;

/// Diagnostics a View may send at once before the steady rate applies: an App's start (the App
/// SDK logs two lines per message, and the proxy forwards its first 500) stays well inside.
const BURST_ENTRIES: f64 = 1000.0;
/// Diagnostics a View may send per second, in the long run.
const ENTRIES_PER_SECOND: f64 = 100.0;
/// Bytes of diagnostic lines a View may send at once (the proxy cuts a console line at 2,000
/// characters: 500 of them fit twice over).
const BURST_BYTES: f64 = 2.0 * 1024.0 * 1024.0;
/// Bytes of diagnostic lines per second, in the long run.
const BYTES_PER_SECOND: f64 = 256.0 * 1024.0;
/// How often, at most, the host says how many of a View's diagnostics it dropped.
const TELL_EVERY: Duration = Duration::from_secs(10);

/// What a View may send on its line besides its messages: a token bucket of entries and one of
/// bytes. A line over it is dropped unparsed and counted; the count is said at most once every
/// [`TELL_EVERY`] (the first drop at once).
#[derive(Debug)]
pub(super) struct DiagnosticBudget {
    entries: f64,
    bytes: f64,
    at: Instant,
    dropped: u64,
    told: Option<Instant>,
}

impl DiagnosticBudget {
    pub(super) fn new(now: Instant) -> Self {
        Self { entries: BURST_ENTRIES, bytes: BURST_BYTES, at: now, dropped: 0, told: None }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = now;
        self.entries = (self.entries + elapsed * ENTRIES_PER_SECOND).min(BURST_ENTRIES);
        self.bytes = (self.bytes + elapsed * BYTES_PER_SECOND).min(BURST_BYTES);
    }

    /// Whether a line of `len` bytes may be read; if so its bytes and one entry are spent.
    fn admit_line(&mut self, len: usize, now: Instant) -> bool {
        self.refill(now);
        if self.entries < 1.0 || self.bytes < len as f64 {
            self.dropped += 1;
            return false;
        }
        self.entries -= 1.0;
        self.bytes -= len as f64;
        true
    }

    /// How many of the `n` entries of an admitted line go on (its first was paid with the line).
    fn admit_entries(&mut self, n: usize) -> usize {
        let extra = n.saturating_sub(1).min(self.entries.max(0.0) as usize);
        self.entries -= extra as f64;
        let admitted = if n == 0 { 0 } else { 1 + extra };
        self.dropped += (n - admitted) as u64;
        admitted
    }

    /// The count of dropped entries to say now, if any is waiting and the last word is old.
    fn count_to_say(&mut self, now: Instant) -> Option<u64> {
        if self.dropped == 0 || self.told.is_some_and(|t| now.saturating_duration_since(t) < TELL_EVERY) {
            return None;
        }
        self.told = Some(now);
        Some(std::mem::take(&mut self.dropped))
    }
}

/// A View's JSON-RPC text from its proxy, for its session.
#[derive(Debug, PartialEq)]
pub(super) enum ViewText {
    /// One message.
    One(String),
    /// What the View posted in one burst, as a JSON array of messages.
    Batch(String),
}

/// Hands `text` to `session`.
pub(super) fn to_session(session: &crate::bridge::ViewHandle, text: ViewText) {
    match text {
        ViewText::One(msg) => session.from_view(msg),
        ViewText::Batch(msgs) => session.from_view_batch(msgs),
    }
}

/// One message from a View's proxy page: the secret, then `v` and the View's JSON-RPC message,
/// `b` and several of them (a JSON array), `d` and a diagnostic of the proxy (JSON), `D` and
/// several diagnostics (a JSON array), or `x` and why the proxy dropped a message. Everything
/// but `v` and `b` is paid for from `budget` (a line without the secret too: it is logged).
/// (`s`, the View's storage changes, is taken before this: `frames/storage.rs`.)
pub(super) fn proxy_message(
    view: &str,
    secret: &IpcSecret,
    body: &str,
    budget: &mut DiagnosticBudget,
    now: Instant,
    to_session: &dyn Fn(ViewText),
    tx: &mpsc::UnboundedSender<HostInput>,
) {
    let opened = secret.open(body);
    // The hot path: the View's message goes to its session as it came.
    match opened.and_then(|rest| rest.split_at_checked(1)) {
        Some(("v", msg)) => return to_session(ViewText::One(msg.to_owned())),
        Some(("b", msgs)) => return to_session(ViewText::Batch(msgs.to_owned())),
        _ => {}
    }
    if !budget.admit_line(body.len(), now) {
        return tell_dropped(view, budget, now, tx);
    }
    let Some(rest) = opened else {
        // A frame inside the View (not its proxy) tried to reach Rust directly.
        tracing::warn!(view, "dropped IPC message without the host secret ({} bytes)", body.len());
        return;
    };
    // A diagnostic or a drop reason is a few hundred bytes from the proxy; a View can call the
    // line itself with anything, and these are parsed here, on the UI thread: bounded first.
    // (A View's JSON-RPC message is bounded by its session, unparsed until then.)
    if rest.len() > MAX_DIAGNOSTIC_BYTES {
        tracing::warn!(view, "dropped a {} byte diagnostic from a View's proxy line", rest.len());
        return;
    }
    let diagnostic = |data| ShellMessage::Diagnostic { view: view.to_owned(), data };
    let msg = match rest.split_at_checked(1) {
        Some(("x", reason)) => ShellMessage::Dropped { view: view.to_owned(), reason: reason.to_owned() },
        Some(("d", data)) => match serde_json::from_str(data) {
            Ok(data) => diagnostic(data),
            Err(e) => {
                tracing::warn!(view, "malformed diagnostic from a View's proxy: {e}");
                return;
            }
        },
        // Console chatter the proxy held back and sent together (bounded above like one).
        Some(("D", data)) => {
            match serde_json::from_str::<Vec<serde_json::Value>>(data) {
                Ok(list) => {
                    if list.len() > MAX_DIAGNOSTICS_PER_LINE {
                        tracing::warn!(
                            view,
                            "dropped {} diagnostics over the bound of one line",
                            list.len() - MAX_DIAGNOSTICS_PER_LINE
                        );
                    }
                    let list = &list[..list.len().min(MAX_DIAGNOSTICS_PER_LINE)];
                    let admitted = budget.admit_entries(list.len());
                    for data in &list[..admitted] {
                        let _ = tx.send(HostInput::Shell(diagnostic(data.clone())));
                    }
                    tell_dropped(view, budget, now, tx);
                }
                Err(e) => tracing::warn!(view, "malformed diagnostics from a View's proxy: {e}"),
            }
            return;
        }
        _ => {
            tracing::warn!(view, "malformed message from a View's proxy");
            return;
        }
    };
    let _ = tx.send(HostInput::Shell(msg));
}

/// Says how many of the View's diagnostics were dropped over its budget, when it is time to.
fn tell_dropped(view: &str, budget: &mut DiagnosticBudget, now: Instant, tx: &mpsc::UnboundedSender<HostInput>) {
    if let Some(n) = budget.count_to_say(now) {
        let reason = format!(
            "{n} of the View's diagnostics (a line dropped unread counts as one) were over its budget \
             ({ENTRIES_PER_SECOND} a second after the first {BURST_ENTRIES}) and were dropped; the \
             next count comes {} s later at the earliest",
            TELL_EVERY.as_secs()
        );
        let _ = tx.send(HostInput::Shell(ShellMessage::Dropped { view: view.to_owned(), reason }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What reached the session (View messages) and the controller (the rest), with `budget`.
    fn received_with(
        body: &str,
        secret: &IpcSecret,
        budget: &mut DiagnosticBudget,
        now: Instant,
    ) -> (Vec<String>, Vec<ShellMessage>) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let to_session = std::cell::RefCell::new(Vec::new());
        let text = |t| match t {
            ViewText::One(m) => m,
            ViewText::Batch(m) => format!("batch {m}"),
        };
        proxy_message("v7", secret, body, budget, now, &|t| to_session.borrow_mut().push(text(t)), &tx);
        let mut got = Vec::new();
        while let Ok(HostInput::Shell(msg)) = rx.try_recv() {
            got.push(msg);
        }
        (to_session.into_inner(), got)
    }

    fn received(body: &str, secret: &IpcSecret) -> (Vec<String>, Vec<ShellMessage>) {
        let now = Instant::now();
        received_with(body, secret, &mut DiagnosticBudget::new(now), now)
    }

    #[test]
    fn a_proxy_line_speaks_for_its_own_view_only_and_only_with_its_secret() {
        let secret = IpcSecret::generate();
        let with = |rest: &str| format!("{}{rest}", secret.expose_for_tests());
        // A View's message goes to this line's session only, whatever it says about itself.
        let msg = r#"{"jsonrpc":"2.0","method":"x","view":"v1"}"#;
        assert_eq!(received(&with(&format!("v{msg}")), &secret), (vec![msg.to_owned()], vec![]));
        // A burst goes to the session as one batch, unparsed (the session bounds and parses it).
        assert_eq!(
            received(&with(&format!("b[{msg},{msg}]")), &secret),
            (vec![format!("batch [{msg},{msg}]")], vec![])
        );
        assert_eq!(
            received(&with(r#"d{"kind":"csp","detail":{}}"#), &secret).1,
            [ShellMessage::Diagnostic { view: "v7".into(), data: serde_json::json!({"kind": "csp", "detail": {}}) }]
        );
        // Diagnostics sent together arrive one by one, in order; a malformed list brings none.
        assert_eq!(
            received(
                &with(r#"D[{"kind":"console","detail":{"level":"debug"}},{"kind":"error","detail":{}}]"#),
                &secret
            )
            .1,
            [
                ShellMessage::Diagnostic {
                    view: "v7".into(),
                    data: serde_json::json!({"kind": "console", "detail": {"level": "debug"}})
                },
                ShellMessage::Diagnostic {
                    view: "v7".into(),
                    data: serde_json::json!({"kind": "error", "detail": {}})
                },
            ]
        );
        assert_eq!(received(&with(r#"D[{"kind":"csp"},"#), &secret), (vec![], vec![]));
        let many = format!("D[{}{{}}]", "{},".repeat(MAX_DIAGNOSTICS_PER_LINE + 9));
        assert_eq!(received(&with(&many), &secret).1.len(), MAX_DIAGNOSTICS_PER_LINE);
        assert_eq!(received(&with(r#"D{"kind":"csp"}"#), &secret), (vec![], vec![]));
        assert_eq!(
            received(&with("xnot serialisable"), &secret).1,
            [ShellMessage::Dropped { view: "v7".into(), reason: "not serialisable".into() }]
        );
        // Without the secret (a frame inside the View), with another line's secret, malformed.
        let nothing = (vec![], vec![]);
        assert_eq!(received(r#"v{"jsonrpc":"2.0"}"#, &secret), nothing);
        assert_eq!(received(&format!("{}v{{}}", IpcSecret::generate().expose_for_tests()), &secret), nothing);
        assert_eq!(received(&with("d{not json"), &secret), nothing);
        assert_eq!(received(&with("q{}"), &secret), nothing);
        assert_eq!(received(&with(""), &secret), nothing);
        assert_eq!(received(&with("é"), &secret), nothing, "a multibyte kind never panics");
        // A diagnostic over the bound is dropped unparsed; a View's own message is its session's.
        let huge = format!(r#"d{{"kind":"console","detail":"{}"}}"#, "x".repeat(MAX_DIAGNOSTIC_BYTES));
        assert_eq!(received(&with(&huge), &secret), nothing);
        assert_eq!(received(&with(&format!("D[{}]", &huge[1..])), &secret), nothing);
        assert_eq!(received(&with(&format!("v{}", "x".repeat(MAX_DIAGNOSTIC_BYTES))), &secret).0.len(), 1);
    }

    #[test]
    fn a_view_that_floods_its_line_with_diagnostics_gets_a_bounded_number_through() {
        let secret = IpcSecret::generate();
        let with = |rest: &str| format!("{}{rest}", secret.expose_for_tests());
        let t0 = Instant::now();
        let mut budget = DiagnosticBudget::new(t0);
        let line = with(&format!("D[{}]", vec![r#"{"kind":"error","detail":{"message":"boom"}}"#; 200].join(",")));
        let flood = |budget: &mut DiagnosticBudget, lines: usize, now: Instant| {
            let (mut through, mut notes) = (0, Vec::new());
            for _ in 0..lines {
                for m in received_with(&line, &secret, budget, now).1 {
                    match m {
                        ShellMessage::Diagnostic { .. } => through += 1,
                        ShellMessage::Dropped { reason, .. } => notes.push(reason),
                        other => panic!("{other:?}"),
                    }
                }
            }
            (through, notes)
        };
        // 100 lines of 200 (20,000 diagnostics) at once: the burst goes through, then one word.
        let (through, notes) = flood(&mut budget, 100, t0);
        assert_eq!(through, BURST_ENTRIES as usize);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("1 of the View's diagnostics"), "{notes:?}");
        // Lines without the secret, single ones and drop reasons are paid for alike; its
        // messages are not (the session bounds those).
        let nothing = (vec![], vec![]);
        assert_eq!(received_with(&with(r#"d{"kind":"csp"}"#), &secret, &mut budget, t0), nothing);
        assert_eq!(received_with("no secret", &secret, &mut budget, t0), nothing);
        assert_eq!(received_with(&with("xwhy"), &secret, &mut budget, t0), nothing);
        assert_eq!(received_with(&with("v{}"), &secret, &mut budget, t0).0, ["{}"]);
        // A second later, a second's worth goes through, and no word yet.
        let (through, notes) = flood(&mut budget, 3, t0 + Duration::from_secs(1));
        assert_eq!((through, notes.len()), (ENTRIES_PER_SECOND as usize, 0));
        // Ten seconds after the first word, the next count: 94 + 2 lines of 200 unread, the 3
        // single lines, and the 100 entries of a line over a second's worth.
        let (_, notes) = flood(&mut budget, 1, t0 + TELL_EVERY);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("199 of the View's diagnostics"), "{notes:?}");
        assert_eq!(budget.count_to_say(t0 + TELL_EVERY * 3), None, "nothing dropped since");
    }

    #[test]
    fn an_honest_views_start_fits_its_budget() {
        // The proxy's most: 500 console lines of 2,000 characters, batched as the proxy does
        // (at most 200 entries and 48 KiB a line), and a few errors.
        let secret = IpcSecret::generate();
        let t0 = Instant::now();
        let mut budget = DiagnosticBudget::new(t0);
        let entry = format!(r#"{{"kind":"console","detail":{{"level":"log","message":"{}"}}}}"#, "x".repeat(2000));
        let per_line = (48 * 1024) / (entry.len() + 1);
        let mut left = 500;
        let mut through = 0;
        while left > 0 {
            let n = left.min(per_line);
            left -= n;
            let line = format!("{}D[{}]", secret.expose_for_tests(), vec![entry.as_str(); n].join(","));
            through += received_with(&line, &secret, &mut budget, t0).1.len();
        }
        for _ in 0..20 {
            let line = format!(
                r#"{}d{{"kind":"error","detail":{{"message":"{}"}}}}"#,
                secret.expose_for_tests(),
                "y".repeat(2000)
            );
            through += received_with(&line, &secret, &mut budget, t0).1.len();
        }
        assert_eq!(through, 520, "every line went through, and nothing was said of drops");
    }
}
