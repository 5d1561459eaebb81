//! What preview adds: the live log (rate-limited, cut) and hot reload (a changed file, a
//! resource the server updated, the Reload button).

use super::*;

/// What preview keeps: recent live reloads and the live log's rate limit.
pub(super) struct Preview {
    /// Recent live reloads per `(server, resource)`, for the storm guard.
    live_reloads: HashMap<(String, String), VecDeque<Instant>>,
    /// The live log's rate limit: the current second, records sent in it, records left out.
    log_window: (Instant, usize, usize),
}

impl Preview {
    pub(super) fn new(now: Instant) -> Self {
        Self { live_reloads: HashMap::new(), log_window: (now, 0, 0) }
    }
}

impl Controller {
    /// A record for the developer panel's live log, rate-limited: a View flooding the host must
    /// not flood the page that shows its log too.
    pub(super) fn log_record(&mut self, record: Value) {
        let (since, sent, dropped) = self.preview.log_window;
        if since.elapsed() >= Duration::from_secs(1) {
            if dropped > 0 {
                let note = json!({"t_ms": self.started.elapsed().as_secs_f64() * 1000.0, "view": null, "dir": "diagnostic",
                    "msg": {"kind": "log", "reason": format!("{dropped} records not shown (over {LOG_RECORDS_PER_SECOND} a second; the trace file has them)")}});
                self.shell(ShellCommand::Log { record: note });
            }
            self.preview.log_window = (Instant::now(), 0, 0);
        } else if sent >= LOG_RECORDS_PER_SECOND {
            self.preview.log_window.2 += 1;
            return;
        }
        self.preview.log_window.1 += 1;
        self.shell(ShellCommand::Log { record: shorten(record) });
    }

    /// Whether preview may reload the Views of `uri` on `server` once more (the storm guard).
    pub(super) fn live_reload_allowed(&mut self, server: &str, uri: &str) -> bool {
        let recent = self.preview.live_reloads.entry((server.to_owned(), uri.to_owned())).or_default();
        while recent.front().is_some_and(|t| t.elapsed() > LIVE_RELOAD_WINDOW) {
            recent.pop_front();
        }
        if recent.len() >= LIVE_RELOADS {
            return false;
        }
        recent.push_back(Instant::now());
        true
    }

    /// Hot reload of every open View (`--html` changed, the Reload button).
    pub(super) fn reload_all(&mut self) {
        let open: Vec<ViewId> =
            self.views.iter().filter(|(_, v)| v.phase.is_open()).map(|(id, _)| id.clone()).collect();
        self.reload(open);
    }

    /// Hot reload: each of `views` is replaced by a fresh one of the same tool that gets its last
    /// input and result again (the tool is not called again).
    pub(super) fn reload(&mut self, views: Vec<ViewId>) {
        for old in views {
            // A reloaded View would call the tool itself, before the model's call is made.
            if self.views.get(&old).is_some_and(|v| self.awaits_model_call(&old, v)) {
                continue;
            }
            // Live only: a View already on its way out is not reloaded again (two reloads before
            // its teardown ends would make one View two).
            let Some(v) = self.views.get_mut(&old).filter(|v| v.phase.is_live()) else { continue };
            v.phase = Phase::Closing;
            let (server, tool, arguments, result) =
                (v.server.clone(), v.tool.clone(), v.arguments.clone(), v.result.clone());
            tracing::info!(view = %old, "reloading {tool}");
            if let Some(v) = self.views.get(&old) {
                self.spawn_teardown(v.handle.clone());
            }
            let id: ViewId = self.views.next_id();
            if let Some(result) = result {
                self.views.cache_result(&id, result);
            }
            if let Err(e) = self.open(Some(&server), &tool, arguments, Opening::Reload) {
                self.shell(ShellCommand::Text {
                    view: None,
                    title: tool_label(&tool),
                    text: consent::block(&format!("reload failed: {e}")),
                    error: true,
                });
            }
        }
    }
}

/// A record for the live log, cut to what a person can read: long strings (a View's HTML),
/// long arrays and objects, and deep nesting are shortened; the trace file keeps everything.
pub(super) fn shorten(value: Value) -> Value {
    shorten_at(value, 0)
}

const LOG_STRING_BYTES: usize = 2000;
const LOG_ITEMS: usize = 100;
const LOG_DEPTH: usize = 16;

fn shorten_at(value: Value, depth: usize) -> Value {
    match value {
        Value::String(s) if s.len() > LOG_STRING_BYTES => {
            let cut = s.floor_char_boundary(LOG_STRING_BYTES);
            Value::String(format!("{}… ({} bytes)", &s[..cut], s.len()))
        }
        Value::Array(_) | Value::Object(_) if depth >= LOG_DEPTH => Value::String("… (nested deeper)".into()),
        Value::Array(items) => {
            let n = items.len();
            let mut out: Vec<Value> = items.into_iter().take(LOG_ITEMS).map(|v| shorten_at(v, depth + 1)).collect();
            if n > LOG_ITEMS {
                out.push(Value::String(format!("… ({} more items)", n - LOG_ITEMS)));
            }
            Value::Array(out)
        }
        Value::Object(map) => {
            let n = map.len();
            let mut out: Map<String, Value> =
                map.into_iter().take(LOG_ITEMS).map(|(k, v)| (k, shorten_at(v, depth + 1))).collect();
            if n > LOG_ITEMS {
                out.insert("…".into(), Value::String(format!("{} more keys", n - LOG_ITEMS)));
            }
            Value::Object(out)
        }
        other => other,
    }
}

/// Polls `path` and signals when it changes (a modification time or size change).
pub(super) async fn watch_file(path: PathBuf, changed: mpsc::UnboundedSender<()>) {
    let stamp = |p: &PathBuf| std::fs::metadata(p).ok().map(|m| (m.modified().ok(), m.len()));
    let mut last = stamp(&path);
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = stamp(&path);
        if now != last && now.is_some() {
            last = now;
            tracing::info!("{} changed; reloading", path.display());
            if changed.send(()).is_err() {
                return;
            }
        }
    }
}
