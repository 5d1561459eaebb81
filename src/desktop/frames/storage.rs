//! The Views' `localStorage` kept across runs (`crate::sandbox::storage`), on the UI thread:
//! each server's items in memory, what its proxies report changed written to its file (at most
//! every [`WRITE_EVERY`]), and the items handed to each View's proxy with its first message.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use crate::sandbox::storage::{self, Items, KeptStorage};

/// A server's file is written at most this often (an App that writes in a loop costs one write
/// per interval); the first change after a quiet spell is written at once, so a host that is
/// stopped right after an App saved has it on disk.
const WRITE_EVERY: Duration = Duration::from_millis(250);

/// The message the proxy takes as the host's items for its origin (`sandbox-proxy/proxy.js`).
const SEED_METHOD: &str = "mcp-apps-host/storage";

#[derive(Default)]
struct Area {
    items: Items,
    /// The size of `items` ([`storage::units`]).
    size: usize,
    written: Option<Instant>,
    /// A write is scheduled (the last was too recent).
    scheduled: bool,
    /// Said once: changes over the bound are not kept.
    refused: bool,
}

/// Every server's kept storage (one per host).
pub(super) struct ViewStorage {
    kept: Option<KeptStorage>,
    areas: RefCell<HashMap<String, Area>>,
    me: Weak<ViewStorage>,
}

impl ViewStorage {
    /// The user's kept storage (none when the host has no data directory: Views then keep their
    /// storage for the run only).
    pub(super) fn user() -> Rc<Self> {
        Rc::new_cyclic(|me| Self { kept: KeptStorage::user(), areas: RefCell::default(), me: me.clone() })
    }

    fn with_area<T>(&self, label: &str, f: impl FnOnce(&mut Area) -> T) -> T {
        let mut areas = self.areas.borrow_mut();
        let area = areas.entry(label.to_owned()).or_insert_with(|| {
            let items = self.kept.as_ref().map(|k| k.load(label)).unwrap_or_default();
            Area { size: storage::units(&items), items, ..Area::default() }
        });
        f(area)
    }

    /// The message that gives a View's proxy its server's items (JSON text), or none when there
    /// are none.
    pub(super) fn seed(&self, label: &str) -> Option<String> {
        self.kept.as_ref()?;
        self.with_area(label, |area| {
            (!area.items.is_empty()).then(|| {
                serde_json::json!({ "jsonrpc": "2.0", "method": SEED_METHOD, "params": { "items": area.items } })
                    .to_string()
            })
        })
    }

    /// A line of changes from a proxy of `label`'s origin (`view`'s, for the log).
    pub(super) fn changed(&self, label: &str, view: &str, line: &str) {
        if self.kept.is_none() {
            return;
        }
        // None: nothing to write now (refused, or a write is already scheduled); else how long
        // until the next write may be.
        let wait = self.with_area(label, |area| match storage::apply(&mut area.items, &mut area.size, line) {
            Ok(()) if area.scheduled => None,
            Ok(()) => {
                let wait = area.written.map_or(Duration::ZERO, |t| WRITE_EVERY.saturating_sub(t.elapsed()));
                area.scheduled = !wait.is_zero();
                Some(wait)
            }
            Err(e) => {
                if !std::mem::replace(&mut area.refused, true) {
                    tracing::warn!(view, "a View's storage change is not kept: {e}");
                }
                None
            }
        });
        match wait {
            Some(wait) if wait.is_zero() => self.write(label),
            Some(wait) => {
                let (me, label) = (self.me.clone(), label.to_owned());
                gtk::glib::timeout_add_local_once(wait, move || {
                    if let Some(me) = me.upgrade() {
                        me.write(&label);
                    }
                });
            }
            None => {}
        }
    }

    fn write(&self, label: &str) {
        let Some(kept) = &self.kept else { return };
        let items = self.with_area(label, |area| {
            area.scheduled = false;
            area.written = Some(Instant::now());
            area.items.clone()
        });
        if let Err(e) = kept.save(label, &items) {
            tracing::warn!("cannot keep the Views' storage of {label}: {e}");
        }
    }
}
