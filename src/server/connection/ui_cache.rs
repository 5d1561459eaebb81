//! The UI resources a connection read, kept for the next View of the same resource.
//!
//! The spec lets a host prefetch and cache UI resources. A View opened again starts at once
//! from the copy the last read returned, instead of waiting for the server, while the caller
//! reads the resource again in the background and keeps that copy for the next View: a
//! change the server made without a word shows from the next View on (stale while
//! revalidating, as HTTP caches do). One read again per copy at a time: the Views opened while
//! it runs take the same copy. What the server does say drops copies before they are
//! used again: `resources/updated` drops that resource, `resources/list_changed` all of them,
//! and a new connection (a restart, a reconnect) starts with none.
//!
//! Bounded: a read over [`MAX_ENTRY_BYTES`] is not kept, and the least recently used copies
//! go past [`MAX_BYTES`] in all.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::broadcast::{self, error::TryRecvError};

use super::ServerChange;

/// The most text one connection keeps.
pub const MAX_BYTES: usize = 32 * 1024 * 1024;
/// The largest read kept.
pub const MAX_ENTRY_BYTES: usize = 8 * 1024 * 1024;

/// A connection's kept UI resources (see the module docs).
pub(crate) struct UiCache {
    state: Mutex<State>,
}

struct State {
    /// Least recently used first.
    entries: VecDeque<Entry>,
    bytes: usize,
    /// What the server announced, applied before every use.
    changes: broadcast::Receiver<ServerChange>,
    /// Counts the changes applied: a read that started before one is not kept.
    generation: u64,
}

struct Entry {
    uri: String,
    read: Arc<Value>,
    bytes: usize,
    /// Someone reads it again (see [`UiCache::get`]).
    refreshing: bool,
}

/// Where a read started, for [`UiCache::keep`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Since(u64);

impl UiCache {
    pub(crate) fn new(changes: broadcast::Receiver<ServerChange>) -> Self {
        Self { state: Mutex::new(State { entries: VecDeque::new(), bytes: 0, changes, generation: 0 }) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.settle();
        state
    }

    /// The copy of `uri` from an earlier read, if one is kept, and whether the caller is to read
    /// it again (`true` for the first caller since the copy was kept or [`UiCache::release`]d).
    pub(crate) fn get(&self, uri: &str) -> Option<(Arc<Value>, bool)> {
        let mut state = self.state();
        let at = state.entries.iter().position(|e| e.uri == uri)?;
        let mut entry = state.entries.remove(at)?;
        let read = entry.read.clone();
        let refresh = !std::mem::replace(&mut entry.refreshing, true);
        state.entries.push_back(entry);
        Some((read, refresh))
    }

    /// The read again that [`UiCache::get`] asked for failed: the next caller tries.
    pub(crate) fn release(&self, uri: &str) {
        self.state().release(uri);
    }

    /// Call before a read whose result goes to [`UiCache::keep`].
    pub(crate) fn since(&self) -> Since {
        Since(self.state().generation)
    }

    /// Keeps the result of a read of `uri` that started at `since`, unless the server announced a
    /// change meanwhile (the read may predate it: the copy, if one is left, is read again by the
    /// next caller) or it is too large.
    pub(crate) fn keep(&self, uri: &str, read: &Value, since: Since) {
        let bytes = text_bytes(read);
        let mut state = self.state();
        if state.generation != since.0 {
            state.release(uri);
            return;
        }
        state.forget(Some(uri));
        if bytes > MAX_ENTRY_BYTES {
            return;
        }
        while state.bytes + bytes > MAX_BYTES {
            let Some(old) = state.entries.pop_front() else { break };
            state.bytes -= old.bytes;
        }
        state.bytes += bytes;
        state.entries.push_back(Entry { uri: uri.to_owned(), read: Arc::new(read.clone()), bytes, refreshing: false });
    }
}

impl State {
    fn release(&mut self, uri: &str) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.uri == uri) {
            e.refreshing = false;
        }
    }

    fn settle(&mut self) {
        loop {
            match self.changes.try_recv() {
                Ok(ServerChange::ResourceUpdated(uri)) => self.forget(Some(&uri)),
                Ok(ServerChange::Resources) | Err(TryRecvError::Lagged(_)) => self.forget(None),
                Ok(ServerChange::Tools) => continue,
                Err(TryRecvError::Empty | TryRecvError::Closed) => return,
            }
            self.generation += 1;
        }
    }

    fn forget(&mut self, uri: Option<&str>) {
        let bytes = &mut self.bytes;
        self.entries.retain(|e| {
            let drop = uri.is_none_or(|u| u == e.uri);
            if drop {
                *bytes -= e.bytes;
            }
            !drop
        });
    }
}

/// The text a read holds (its contents' `text` and `blob`), plus a little for the rest.
fn text_bytes(read: &Value) -> usize {
    let contents = read.get("contents").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    contents
        .iter()
        .map(|c| {
            let len = |k: &str| c.get(k).and_then(Value::as_str).map_or(0, str::len);
            len("text") + len("blob") + 256
        })
        .sum::<usize>()
        + 256
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(text: &str) -> Value {
        json!({"contents": [{"uri": "ui://a", "mimeType": "text/html;profile=mcp-app", "text": text}]})
    }

    fn cache() -> (UiCache, broadcast::Sender<ServerChange>) {
        let (tx, rx) = broadcast::channel(4);
        (UiCache::new(rx), tx)
    }

    #[test]
    fn a_read_is_kept_until_the_server_says_it_changed() {
        let (c, tx) = cache();
        assert!(c.get("ui://a").is_none());
        c.keep("ui://a", &read("one"), c.since());
        c.keep("ui://b", &read("two"), c.since());
        let text =
            |got: Option<(Arc<Value>, bool)>| got.map(|(r, refresh)| (r["contents"][0]["text"].clone(), refresh));
        // The first to use a copy reads it again; the others meanwhile take the copy as it is.
        assert_eq!(text(c.get("ui://a")), Some((json!("one"), true)));
        assert_eq!(text(c.get("ui://a")), Some((json!("one"), false)));
        // A failed read again lets the next one try; a newer read replaces the copy.
        c.release("ui://a");
        assert_eq!(text(c.get("ui://a")), Some((json!("one"), true)));
        c.keep("ui://a", &read("one, again"), c.since());
        assert_eq!(text(c.get("ui://a")), Some((json!("one, again"), true)));
        // Tool changes leave resources alone; resources/updated drops that one resource.
        tx.send(ServerChange::Tools).unwrap();
        tx.send(ServerChange::ResourceUpdated("ui://a".into())).unwrap();
        assert!(c.get("ui://a").is_none());
        assert!(c.get("ui://b").is_some());
        // resources/list_changed drops them all.
        tx.send(ServerChange::Resources).unwrap();
        assert!(c.get("ui://b").is_none());
    }

    #[test]
    fn a_read_that_started_before_a_change_is_not_kept() {
        let (c, tx) = cache();
        let since = c.since();
        tx.send(ServerChange::ResourceUpdated("ui://other".into())).unwrap();
        c.keep("ui://a", &read("maybe stale"), since);
        assert!(c.get("ui://a").is_none());
        c.keep("ui://a", &read("fresh"), c.since());
        assert!(c.get("ui://a").is_some());
        // A read again that is not kept leaves the copy to be read again by the next caller, so
        // one change elsewhere never leaves a copy unread for good.
        assert_eq!(c.get("ui://a").map(|(_, refresh)| refresh), Some(false));
        let since = c.since();
        tx.send(ServerChange::ResourceUpdated("ui://other".into())).unwrap();
        c.keep("ui://a", &read("fresh, again"), since);
        assert_eq!(
            c.get("ui://a").map(|(r, refresh)| (r["contents"][0]["text"].clone(), refresh)),
            Some((json!("fresh"), true))
        );
    }

    #[test]
    fn missed_changes_drop_everything() {
        let (c, tx) = cache();
        c.keep("ui://a", &read("one"), c.since());
        for _ in 0..10 {
            tx.send(ServerChange::ResourceUpdated("ui://other".into())).unwrap();
        }
        assert!(c.get("ui://a").is_none(), "the channel lagged: any of the missed changes may have been ui://a");
    }

    #[test]
    fn the_cache_is_bounded() {
        let (c, _tx) = cache();
        c.keep("ui://huge", &read(&"x".repeat(MAX_ENTRY_BYTES + 1)), c.since());
        assert!(c.get("ui://huge").is_none());
        let big = "x".repeat(MAX_ENTRY_BYTES - 1024);
        for i in 0..5 {
            c.keep(&format!("ui://{i}"), &read(&big), c.since());
        }
        // Four fit in MAX_BYTES; the least recently used went.
        assert!(c.get("ui://0").is_none());
        assert!((1..5).all(|i| c.get(&format!("ui://{i}")).is_some()));
        assert!(c.state().bytes <= MAX_BYTES);
        // Using a copy makes it the most recent: the next one pushes out ui://2, not ui://1.
        c.get("ui://1");
        c.keep("ui://5", &read(&big), c.since());
        assert!(c.get("ui://1").is_some() && c.get("ui://2").is_none());
    }
}
