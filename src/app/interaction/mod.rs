//! Interaction sessions (`run --session`, `check --session`): a short script of what a person
//! does in a View (click or type by CSS selector or shown text, press a key) and what the View
//! must then do (send a message, call a tool with given arguments, show a text), run in the
//! View once it initialized and has its tool result.
//!
//! The input is real: the window sends input events to the View's webview where the person's
//! would arrive (so a click is the person's gesture, and the keyboard rules of a person's click
//! hold), after asking the web process where the element is (`webext/session.c`). Each step is
//! written to the trace (`"dir": "session"`) with its outcome and time, and `check` reports it as
//! a JUnit test case.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::window::{InputOp, Ui, UserEvent};
use crate::bridge::{Direction, Trace};

/// How long a step waits for what it expects, unless the script says otherwise.
const STEP_TIMEOUT: Duration = Duration::from_secs(5);
/// The most steps a script may hold.
const MAX_STEPS: usize = 200;
/// How the window says a View is not in sight yet (`crate::desktop`'s frames).
const NOT_IN_SIGHT: &str = "the View is not in sight";
/// How long a `type` step waits after its click before the first key.
const KEY_AFTER_CLICK: Duration = Duration::from_millis(150);
/// The time between two keys of a `type` step.
const BETWEEN_KEYS: Duration = Duration::from_millis(15);
/// How often a step that waits for text, or for an element to click, asks the View again.
const TEXT_POLL: Duration = Duration::from_millis(100);

/// An interaction script, ready to run in a View.
#[derive(Debug, Clone)]
pub struct Interaction {
    /// The script's name (its file's stem), for reports.
    pub name: String,
    /// The tool it is written for, when the script names one.
    pub tool: Option<String>,
    /// The arguments of that tool call, when the script gives them.
    pub arguments: Option<serde_json::Map<String, Value>>,
    steps: Vec<Step>,
    timeout: Duration,
    /// Where the screenshot steps write their pictures.
    pictures: PathBuf,
}

/// What the script file holds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ScriptFile {
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    arguments: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    steps: Vec<RawStep>,
}

/// One step as written: exactly one action key, with `into` beside `type` and `timeoutMs` beside
/// any step that waits.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawStep {
    click: Option<Target>,
    #[serde(rename = "type")]
    type_text: Option<String>,
    into: Option<Target>,
    press: Option<String>,
    wait_for: Option<Expected>,
    expect_call: Option<ExpectedCall>,
    expect_text: Option<String>,
    screenshot: Option<String>,
    wait: Option<u64>,
    timeout_ms: Option<u64>,
}

/// An element of the View: a CSS selector, or the text it shows.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub(crate) enum Target {
    Selector(String),
    #[serde(rename_all = "camelCase")]
    Named {
        #[serde(default)]
        selector: Option<String>,
        #[serde(default)]
        text: Option<String>,
        #[serde(default)]
        nth: Option<u32>,
    },
}

/// A message the View must send: its method, and params that hold at least these.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
enum Expected {
    Method(String),
    Message {
        method: String,
        #[serde(default)]
        params: Option<Value>,
    },
}

/// A tool call the View must make: the tool, and arguments that hold at least these.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct ExpectedCall {
    tool: String,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Click(Target),
    Type { text: String, into: Option<Target> },
    Press(String),
    WaitFor { method: String, params: Option<Value>, timeout: Option<Duration> },
    ExpectText { text: String, timeout: Option<Duration> },
    Screenshot(String),
    Wait(Duration),
}

impl Target {
    /// The target as the web process reads it (`webext/session.c`).
    fn to_json(&self) -> String {
        match self {
            Self::Selector(s) => json!({ "selector": s }).to_string(),
            Self::Named { selector, text, nth } => {
                json!({ "selector": selector, "text": text, "nth": nth }).to_string()
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Selector(s) | Self::Named { selector: Some(s), .. } => s.clone(),
            Self::Named { text: Some(t), .. } => format!("{t:?}"),
            Self::Named { .. } => "(nothing)".into(),
        }
    }

    fn check(&self) -> Result<(), String> {
        match self {
            Self::Selector(s) if s.trim().is_empty() => Err("an empty selector".into()),
            Self::Named { selector: Some(_), text: Some(_), .. } => {
                Err("a target has a selector or a text, not both".into())
            }
            Self::Named { selector: None, text: None, .. } => Err("a target needs a selector or a text".into()),
            _ => Ok(()),
        }
    }
}

impl Step {
    fn describe(&self) -> String {
        match self {
            Self::Click(t) => format!("click {}", t.describe()),
            Self::Type { text, into: Some(t) } => format!("type {text:?} into {}", t.describe()),
            Self::Type { text, into: None } => format!("type {text:?}"),
            Self::Press(key) => format!("press {key}"),
            Self::WaitFor { method, params: None, .. } => format!("wait for {method}"),
            Self::WaitFor { method, params: Some(p), .. } => format!("wait for {method} with {p}"),
            Self::ExpectText { text, .. } => format!("expect text {text:?}"),
            Self::Screenshot(name) => format!("screenshot {name}"),
            Self::Wait(d) => format!("wait {} ms", d.as_millis()),
        }
    }

    /// A step that does something to the View (what expectations after it are looked for from).
    fn acts(&self) -> bool {
        matches!(self, Self::Click(_) | Self::Type { .. } | Self::Press(_))
    }
}

impl RawStep {
    fn into_step(self, n: usize) -> Result<Step, String> {
        let timeout = self.timeout_ms.map(Duration::from_millis);
        let mut steps = Vec::new();
        if let Some(t) = self.click {
            steps.push(Step::Click(t));
        }
        if let Some(text) = self.type_text {
            steps.push(Step::Type { text, into: self.into.clone() });
        } else if self.into.is_some() {
            return Err(format!("step {n}: `into` goes with `type`"));
        }
        if let Some(key) = self.press {
            if !known_key(&key) {
                return Err(format!(
                    "step {n}: unknown key {key:?} (a single character, or one of {})",
                    KEYS.join(", ")
                ));
            }
            steps.push(Step::Press(key));
        }
        if let Some(e) = self.wait_for {
            let (method, params) = match e {
                Expected::Method(m) => (m, None),
                Expected::Message { method, params } => (method, params),
            };
            steps.push(Step::WaitFor { method, params, timeout });
        }
        if let Some(c) = self.expect_call {
            let mut params = json!({ "name": c.tool });
            if let Some(a) = c.arguments {
                params["arguments"] = a;
            }
            steps.push(Step::WaitFor { method: "tools/call".into(), params: Some(params), timeout });
        }
        if let Some(text) = self.expect_text {
            steps.push(Step::ExpectText { text, timeout });
        }
        if let Some(name) = self.screenshot {
            let plain = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                && !name.starts_with('.');
            if !plain {
                return Err(format!("step {n}: a screenshot's name is letters, digits, `-`, `_` and `.`: {name:?}"));
            }
            steps.push(Step::Screenshot(name));
        }
        if let Some(ms) = self.wait {
            steps.push(Step::Wait(Duration::from_millis(ms.min(60_000))));
        }
        let step = match (steps.pop(), steps.is_empty()) {
            (Some(step), true) => step,
            (None, _) => {
                return Err(format!(
                    "step {n} does nothing (click, type, press, waitFor, expectCall, expectText, screenshot or wait)"
                ))
            }
            (Some(_), false) => return Err(format!("step {n} does more than one thing: write one step each")),
        };
        match &step {
            Step::Click(t) | Step::Type { into: Some(t), .. } => t.check().map_err(|e| format!("step {n}: {e}"))?,
            _ => {}
        }
        Ok(step)
    }
}

/// Keys a `press` step may name besides a single character.
const KEYS: &[&str] = &[
    "Enter",
    "Tab",
    "Escape",
    "Backspace",
    "Delete",
    "Space",
    "ArrowUp",
    "ArrowDown",
    "ArrowLeft",
    "ArrowRight",
    "Home",
    "End",
];

fn known_key(key: &str) -> bool {
    KEYS.contains(&key) || key.chars().count() == 1
}

impl Interaction {
    /// Reads a script (JSON); its screenshots go to `pictures`.
    pub fn parse(name: &str, text: &str, pictures: &Path) -> Result<Self, String> {
        let file: ScriptFile = serde_json::from_str(text).map_err(|e| format!("not an interaction script: {e}"))?;
        if file.steps.is_empty() {
            return Err("the script has no steps".into());
        }
        if file.steps.len() > MAX_STEPS {
            return Err(format!("the script has {} steps; at most {MAX_STEPS}", file.steps.len()));
        }
        let steps =
            file.steps.into_iter().enumerate().map(|(i, s)| s.into_step(i + 1)).collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            name: name.to_owned(),
            tool: file.tool,
            arguments: file.arguments,
            steps,
            timeout: file.timeout_ms.map_or(STEP_TIMEOUT, Duration::from_millis),
            pictures: pictures.to_owned(),
        })
    }

    /// Reads a script file; its name is the file's stem (`get-time.session.json`: `get-time`).
    pub fn read(path: &Path, pictures: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let file = path.file_name().and_then(|n| n.to_str()).unwrap_or("session");
        let name = file.split('.').next().filter(|s| !s.is_empty()).unwrap_or("session");
        Self::parse(name, &text, pictures).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The number of steps.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether it has no steps (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

/// A run's interaction session, from the start of the run (when the trace's records start to
/// collect for it) to its end.
#[derive(Default)]
pub(super) struct Slot {
    /// Where the trace's records go for it.
    pub feed: Option<mpsc::UnboundedSender<Value>>,
    /// Those records, until the session starts.
    records: Option<mpsc::UnboundedReceiver<Value>>,
    /// Where its exit code goes.
    ended: Option<mpsc::UnboundedSender<i32>>,
}

impl Slot {
    /// A slot for `script` (none without one); its exit code comes on the returned channel.
    pub(super) fn new(script: Option<&Interaction>) -> (Self, mpsc::UnboundedReceiver<i32>) {
        let (ended, ended_rx) = mpsc::unbounded_channel();
        if script.is_none() {
            return (Self::default(), ended_rx);
        }
        let (feed, records) = mpsc::unbounded_channel();
        (Self { feed: Some(feed), records: Some(records), ended: Some(ended) }, ended_rx)
    }

    /// Starts `script` in `view` (once: a later View does not start it again).
    pub(super) fn start(&mut self, script: &Interaction, view: &str, ui: &Ui, trace: &Trace) {
        let (Some(records), Some(ended)) = (self.records.take(), self.ended.clone()) else { return };
        let (script, view, ui, trace) = (script.clone(), view.to_owned(), ui.clone(), trace.clone());
        tokio::spawn(async move {
            let code = run(script, view, ui, records, trace).await;
            let _ = ended.send(code);
        });
    }
}

/// What the View sent, as the session saw it in the trace, and whether a step matched it.
struct Seen {
    method: String,
    params: Value,
    matched: bool,
}

/// Runs `script` in `view`; returns the run's exit code (0 when every step passed). Messages
/// of the View come from `records` (the trace's tap), from the start of the run.
pub(super) async fn run(
    script: Interaction,
    view: String,
    ui: Ui,
    mut records: mpsc::UnboundedReceiver<Value>,
    trace: Trace,
) -> i32 {
    let mut seen: Vec<Seen> = Vec::new();
    // Expectations look at what the View sent since the last step that acted on it.
    let mut since = 0;
    let total = script.steps.len();
    for (i, step) in script.steps.iter().enumerate() {
        let started = Instant::now();
        drain(&mut records, &view, &mut seen);
        if step.acts() {
            since = seen.len();
        }
        let outcome = match step {
            Step::Click(target) => click(&ui, &view, target, script.timeout).await,
            Step::Type { text, into } => {
                let clicked = match into {
                    Some(target) => click(&ui, &view, target, script.timeout).await.map(|_| ()),
                    None => Ok(()),
                };
                match clicked {
                    Ok(()) => type_text(&ui, &view, text, into.is_some(), script.timeout).await,
                    Err(e) => Err(e),
                }
            }
            Step::Press(key) => {
                let press = |done| InputOp::Key { view: view.clone(), key: key.clone(), done };
                ask_in_sight(&ui, script.timeout, press).await.map(|()| None)
            }
            Step::WaitFor { method, params, timeout } => {
                let limit = timeout.unwrap_or(script.timeout);
                wait_for(&mut records, &view, &mut seen, since, method, params.as_ref(), limit).await
            }
            Step::ExpectText { text, timeout } => {
                expect_text(&ui, &view, text, timeout.unwrap_or(script.timeout)).await
            }
            Step::Screenshot(name) => {
                let path = script.pictures.join(format!("{}.{name}.png", script.name));
                let (tx, rx) = oneshot::channel();
                match ui.send_event(UserEvent::Screenshot(path, tx)) {
                    Err(_) => Err("the window is gone".into()),
                    Ok(()) => match tokio::time::timeout(Duration::from_secs(10), rx).await {
                        Ok(Ok(Ok(path))) => Ok(Some(path.display().to_string())),
                        Ok(Ok(Err(e))) => Err(format!("the screenshot failed: {e}")),
                        _ => Err("the screenshot failed: no answer from the webview".into()),
                    },
                }
            }
            Step::Wait(d) => {
                tokio::time::sleep(*d).await;
                Ok(None)
            }
        };
        let ms = started.elapsed().as_millis() as u64;
        let (ok, detail) = match outcome {
            Ok(detail) => (true, detail),
            Err(e) => (false, Some(e)),
        };
        let record = json!({
            "step": i + 1, "of": total, "session": script.name, "action": step.describe(),
            "ok": ok, "ms": ms, "detail": detail,
        });
        trace.record(Some(&view), Direction::Session, &record);
        let line = format!("session {}: step {}/{total} {}", script.name, i + 1, step.describe());
        match (&record["detail"], ok) {
            (Value::String(d), true) => eprintln!("{line}: ok ({ms} ms): {d}"),
            (_, true) => eprintln!("{line}: ok ({ms} ms)"),
            (d, false) => {
                eprintln!("error: {line} failed: {}", d.as_str().unwrap_or("?"));
                // The steps after a failed one are reported as not run.
                for (j, rest) in script.steps.iter().enumerate().skip(i + 1) {
                    let skipped = json!({
                        "step": j + 1, "of": total, "session": script.name, "action": rest.describe(),
                        "ok": Value::Null, "detail": "not run: an earlier step failed",
                    });
                    trace.record(Some(&view), Direction::Session, &skipped);
                }
                return 1;
            }
        }
    }
    0
}

/// Carries out the one step of `script` if it acts on the View or checks what it shows (the
/// test interface's `interact`); says what it did. Steps that wait for the View's messages need
/// a session's view of the trace: they are refused here.
pub(super) async fn act(script: &Interaction, view: &str, ui: &Ui) -> Result<Option<String>, String> {
    let limit = script.timeout;
    match script.steps.first() {
        Some(Step::Click(target)) => click(ui, view, target, limit).await,
        Some(Step::Type { text, into }) => {
            if let Some(target) = into {
                click(ui, view, target, limit).await?;
            }
            type_text(ui, view, text, into.is_some(), limit).await
        }
        Some(Step::Press(key)) => {
            let press = |done| InputOp::Key { view: view.to_owned(), key: key.clone(), done };
            ask_in_sight(ui, limit, press).await.map(|()| None)
        }
        Some(Step::ExpectText { text, timeout }) => expect_text(ui, view, text, timeout.unwrap_or(limit)).await,
        Some(Step::Wait(d)) => {
            tokio::time::sleep(*d).await;
            Ok(None)
        }
        Some(step) => {
            Err(format!("{} is a session's step (read the conversation or the trace instead)", step.describe()))
        }
        None => Err("no step".into()),
    }
}

/// Asks the window for one input operation and waits (bounded) for its answer.
async fn ask<T>(ui: &Ui, op: impl FnOnce(oneshot::Sender<Result<T, String>>) -> InputOp) -> Result<T, String> {
    let (tx, rx) = oneshot::channel();
    ui.send_event(UserEvent::Input(op(tx))).map_err(|_| "the window is gone".to_owned())?;
    match tokio::time::timeout(Duration::from_secs(10), rx).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(_)) => Err("the window dropped the step".into()),
        Err(_) => Err("the window did not answer in 10 s".into()),
    }
}

/// Types `text` a key at a time, as a person does: the engine tells the page that it has the
/// keyboard a moment after the click that gave it (measured: a key sent at once after the click
/// was lost), and each key is its own event.
async fn type_text(
    ui: &Ui,
    view: &str,
    text: &str,
    after_click: bool,
    limit: Duration,
) -> Result<Option<String>, String> {
    if after_click {
        tokio::time::sleep(KEY_AFTER_CLICK).await;
    }
    for c in text.chars() {
        let key = |done| InputOp::Keys { view: view.to_owned(), text: c.to_string(), done };
        ask_in_sight(ui, limit, key).await?;
        tokio::time::sleep(BETWEEN_KEYS).await;
    }
    Ok(None)
}

/// [`ask`], again until `limit` while the View is not in sight yet (it is shown once its
/// page loaded and the shell placed it).
async fn ask_in_sight<T>(
    ui: &Ui,
    limit: Duration,
    op: impl Fn(oneshot::Sender<Result<T, String>>) -> InputOp,
) -> Result<T, String> {
    let deadline = Instant::now() + limit;
    loop {
        match ask(ui, &op).await {
            Err(e) if e.starts_with(NOT_IN_SIGHT) && Instant::now() < deadline => tokio::time::sleep(TEXT_POLL).await,
            other => return other,
        }
    }
}

/// Finds the target and clicks its centre; says what was clicked. Until `limit`, a View not in
/// sight yet, or without the element yet, is asked again (a View renders after its result).
async fn click(ui: &Ui, view: &str, target: &Target, limit: Duration) -> Result<Option<String>, String> {
    let deadline = Instant::now() + limit;
    let found = loop {
        match ask(ui, |done| InputOp::Find { view: view.to_owned(), target: target.to_json(), done }).await {
            Ok(found) => break found,
            Err(e) if Instant::now() < deadline && (e.starts_with("no element") || e.starts_with(NOT_IN_SIGHT)) => {
                tokio::time::sleep(TEXT_POLL).await;
            }
            Err(e) => return Err(e),
        }
    };
    ask(ui, |done| InputOp::Click { view: view.to_owned(), x: found.x, y: found.y, done }).await?;
    Ok(Some(format!("clicked <{}> {:?} at ({:.0}, {:.0})", found.tag, found.says, found.x, found.y)))
}

/// Polls the View's text until it holds `text`, up to `limit`.
async fn expect_text(ui: &Ui, view: &str, text: &str, limit: Duration) -> Result<Option<String>, String> {
    let deadline = Instant::now() + limit;
    loop {
        let shown = match ask(ui, |done| InputOp::Text { view: view.to_owned(), done }).await {
            Err(e) if e.starts_with(NOT_IN_SIGHT) => String::new(),
            other => other?,
        };
        if shown.contains(text) {
            return Ok(None);
        }
        if Instant::now() >= deadline {
            let mut excerpt: String = shown.split_whitespace().collect::<Vec<_>>().join(" ");
            if excerpt.len() > 200 {
                let cut = (0..=200).rev().find(|&i| excerpt.is_char_boundary(i)).unwrap_or(0);
                excerpt.truncate(cut);
                excerpt.push('…');
            }
            return Err(format!(
                "the View does not show {text:?} after {} ms; it shows: {excerpt:?}",
                limit.as_millis()
            ));
        }
        tokio::time::sleep(TEXT_POLL).await;
    }
}

/// Moves the View's messages that reached the trace into `seen`.
fn drain(records: &mut mpsc::UnboundedReceiver<Value>, view: &str, seen: &mut Vec<Seen>) {
    while let Ok(record) = records.try_recv() {
        note(&record, view, seen);
    }
}

fn note(record: &Value, view: &str, seen: &mut Vec<Seen>) {
    if record["dir"] != Direction::ViewToHost.as_str() || record["view"] != view {
        return;
    }
    if let Some(method) = record["msg"]["method"].as_str() {
        seen.push(Seen { method: method.to_owned(), params: record["msg"]["params"].clone(), matched: false });
    }
}

/// Waits for a message of the View with `method` (and params holding `params`) that no earlier
/// step matched, sent since `since`.
async fn wait_for(
    records: &mut mpsc::UnboundedReceiver<Value>,
    view: &str,
    seen: &mut Vec<Seen>,
    since: usize,
    method: &str,
    params: Option<&Value>,
    limit: Duration,
) -> Result<Option<String>, String> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let hit = seen
            .iter_mut()
            .skip(since)
            .find(|s| !s.matched && s.method == method && params.is_none_or(|p| holds(&s.params, p)));
        if let Some(s) = hit {
            s.matched = true;
            return Ok(Some(format!("{method} {}", short(&s.params))));
        }
        match tokio::time::timeout_at(deadline, records.recv()).await {
            Ok(Some(record)) => note(&record, view, seen),
            Ok(None) | Err(_) => break,
        }
    }
    let same: Vec<String> = seen.iter().skip(since).filter(|s| s.method == method).map(|s| short(&s.params)).collect();
    Err(if same.is_empty() {
        let sent: Vec<&str> = seen.iter().skip(since).map(|s| s.method.as_str()).collect();
        format!(
            "no {method} from the View in {} ms (it sent: {})",
            limit.as_millis(),
            if sent.is_empty() { "nothing".into() } else { sent.join(", ") }
        )
    } else {
        format!(
            "no {method} with {} from the View in {} ms; it sent {method} with: {}",
            short(params.unwrap_or(&Value::Null)),
            limit.as_millis(),
            same.join("; ")
        )
    })
}

/// Whether `actual` holds everything of `expected`: an object's keys (at any depth), an
/// array's items one for one, a value as it is.
fn holds(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => e.iter().all(|(k, v)| a.get(k).is_some_and(|av| holds(av, v))),
        (Value::Array(a), Value::Array(e)) => a.len() == e.len() && a.iter().zip(e).all(|(x, y)| holds(x, y)),
        _ => actual == expected,
    }
}

fn short(v: &Value) -> String {
    let mut s = v.to_string();
    if s.len() > 160 {
        let cut = (0..=160).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
        s.truncate(cut);
        s.push('…');
    }
    s
}

/// Where the web process found an element (`webext/session.c`), in the View's webview.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Found {
    /// Its centre, in CSS pixels from the webview's corner.
    pub x: f64,
    pub y: f64,
    /// Its tag name.
    pub tag: String,
    /// What it says (its text, value or label, cut).
    pub says: String,
}

impl Found {
    /// Reads the web process's answer: the element in its frame, plus the place of the View's
    /// frame in the proxy and of the proxy's frame in the top page.
    pub(crate) fn from_answer(answer: &str, target: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(answer).map_err(|_| "the web process gave no answer".to_owned())?;
        if let Some(e) = v["error"].as_str() {
            return Err(e.to_owned());
        }
        let found = &v["found"];
        if found.is_null() {
            return Err("the View's frame did not answer".into());
        }
        if let Some(e) = found["error"].as_str() {
            return Err(if e == "not found" {
                format!("no element of the View matches {target}")
            } else {
                e.to_owned()
            });
        }
        let at = |v: &Value| (v["x"].as_f64().unwrap_or(0.0), v["y"].as_f64().unwrap_or(0.0));
        let (x, y) = at(found);
        let (px, py) = at(&v["proxy"]);
        let (vx, vy) = at(&v["view"]);
        Ok(Self {
            x: x + px + vx,
            y: y + py + vy,
            tag: found["tag"].as_str().unwrap_or("?").to_owned(),
            says: found["says"].as_str().unwrap_or_default().to_owned(),
        })
    }
}

#[cfg(test)]
mod tests;
