//! The Views' `localStorage` and IndexedDB kept across runs (`crate::sandbox::storage`), on the
//! UI thread: each server's items and databases in memory, what its proxies report written to
//! its files (each at most every [`WRITE_EVERY`]), and both handed to each View's proxy with its
//! first message.
//!
//! A removed server's storage is forgotten ([`ViewStorage::forget`]): its files go, and so does
//! what this run holds of it, here and in WebKit. WebKit keeps a View's third-party storage in
//! memory for the whole run (its network process outlives the web processes), so the next View
//! of that origin is told to empty it before its document loads, and lines from the Views that
//! were bound before are not kept.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap};
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use crate::sandbox::storage::{self, Databases, Items, KeptStorage};

/// A server's file is written at most this often (an App that writes in a loop costs one write
/// per interval); the first change after a quiet spell is written at once, so a host that is
/// stopped right after an App saved has it on disk.
const WRITE_EVERY: Duration = Duration::from_millis(250);

/// The message the proxy takes as the host's items and databases for its origin
/// (`sandbox-proxy/proxy.js`).
const SEED_METHOD: &str = "mcp-apps-host/storage";

/// One of a server's two files.
#[derive(Clone, Copy)]
enum File {
    Items,
    Databases,
}

/// When a file was last written, and whether a write waits.
#[derive(Default)]
struct Writes {
    written: Option<Instant>,
    /// A write is scheduled (the last was too recent).
    scheduled: bool,
}

impl Writes {
    /// None: a write is already scheduled; else how long until the next write may be.
    fn next(&mut self) -> Option<Duration> {
        if self.scheduled {
            return None;
        }
        let wait = self.written.map_or(Duration::ZERO, |t| WRITE_EVERY.saturating_sub(t.elapsed()));
        self.scheduled = !wait.is_zero();
        Some(wait)
    }
}

#[derive(Default)]
struct Area {
    items: Items,
    /// The size of `items` ([`storage::units`]).
    size: usize,
    databases: Databases,
    writes: [Writes; 2],
    /// Said once: changes over the bound are not kept.
    refused: bool,
}

/// Every server's kept storage (one per host).
pub(super) struct ViewStorage {
    kept: Option<KeptStorage>,
    areas: RefCell<HashMap<String, Area>>,
    /// How often each label was forgotten: a binding made before carries an older count.
    generations: RefCell<HashMap<String, u64>>,
    /// The names of every database a label's proxies dumped or said gone in this run: what a
    /// View of the origin may have left in WebKit's memory.
    seen: RefCell<HashMap<String, BTreeSet<String>>>,
    /// Labels forgotten whose next View has not been seeded yet, with the databases to delete.
    fresh: RefCell<HashMap<String, BTreeSet<String>>>,
    /// Said once per run: a forgotten server's old Views still write.
    stale_said: Cell<bool>,
    me: Weak<ViewStorage>,
}

impl ViewStorage {
    /// The user's kept storage (none when the host has no data directory: Views then keep their
    /// storage for the run only).
    pub(super) fn user() -> Rc<Self> {
        Rc::new_cyclic(|me| Self {
            kept: KeptStorage::user(),
            areas: RefCell::default(),
            generations: RefCell::default(),
            seen: RefCell::default(),
            fresh: RefCell::default(),
            stale_said: Cell::new(false),
            me: me.clone(),
        })
    }

    fn with_area<T>(&self, label: &str, f: impl FnOnce(&mut Area) -> T) -> T {
        let mut areas = self.areas.borrow_mut();
        let area = areas.entry(label.to_owned()).or_insert_with(|| {
            let items = self.kept.as_ref().map(|k| k.load(label)).unwrap_or_default();
            let databases = self.kept.as_ref().map(|k| k.load_databases(label)).unwrap_or_default();
            Area { size: storage::units(&items), items, databases, ..Area::default() }
        });
        f(area)
    }

    /// The count a binding for `label` made now carries (see [`Self::changed`]).
    pub(super) fn generation(&self, label: &str) -> u64 {
        self.generations.borrow().get(label).copied().unwrap_or(0)
    }

    /// The message that gives a View's proxy its server's items and databases (JSON text), or
    /// none when there are none. The first after [`Self::forget`] tells the proxy to empty its
    /// origin's storage first (`forget`: its localStorage, and these databases).
    pub(super) fn seed(&self, label: &str) -> Option<String> {
        let forget = self.fresh.borrow_mut().remove(label);
        if self.kept.is_none() && forget.is_none() {
            return None;
        }
        self.with_area(label, |area| {
            (forget.is_some() || !area.items.is_empty() || !area.databases.is_empty()).then(|| {
                let databases: Vec<&serde_json::Value> = area.databases.values().collect();
                let params = serde_json::json!({ "items": area.items, "databases": databases, "forget": forget });
                serde_json::json!({ "jsonrpc": "2.0", "method": SEED_METHOD, "params": params }).to_string()
            })
        })
    }

    /// Whether a line from a binding of `label` made at `generation` is still its server's.
    fn current(&self, label: &str, generation: u64, view: &str) -> bool {
        let current = self.generation(label) == generation;
        if !current && !self.stale_said.replace(true) {
            tracing::info!(view, "a removed server's View wrote its storage: not kept");
        }
        self.kept.is_some() && current
    }

    /// A line of `localStorage` changes from a proxy of `label`'s origin (`view`'s, for the
    /// log), bound at `generation`.
    pub(super) fn changed(&self, label: &str, generation: u64, view: &str, line: &str) {
        if !self.current(label, generation, view) {
            return;
        }
        let wait = self.with_area(label, |area| match storage::apply(&mut area.items, &mut area.size, line) {
            Ok(()) => area.writes[File::Items as usize].next(),
            Err(e) => {
                if !std::mem::replace(&mut area.refused, true) {
                    tracing::warn!(view, "a View's storage change is not kept: {e}");
                }
                None
            }
        });
        self.write_after(label, File::Items, wait);
    }

    /// A dump of the IndexedDB databases of `label`'s origin from a proxy (`view`'s, for the
    /// log), bound at `generation`. A dump that is refused leaves the last one kept.
    pub(super) fn dumped(&self, label: &str, generation: u64, view: &str, line: &str) {
        if !self.current(label, generation, view) {
            return;
        }
        let wait = self.with_area(label, |area| match storage::merge_databases(&mut area.databases, line) {
            Ok(()) => {
                let mut seen = self.seen.borrow_mut();
                seen.entry(label.to_owned()).or_default().extend(area.databases.keys().cloned());
                area.writes[File::Databases as usize].next()
            }
            Err(e) => {
                tracing::warn!(view, "a View's databases are not kept (the last copy stays): {e}");
                None
            }
        });
        self.write_after(label, File::Databases, wait);
    }

    /// The server of `label` was removed (its files are gone): nothing of this run's goes back
    /// in them, and its next View starts empty.
    pub(super) fn forget(&self, label: &str) {
        let mut names = self.seen.borrow_mut().remove(label).unwrap_or_default();
        names.extend(self.with_area(label, |area| area.databases.keys().cloned().collect::<Vec<_>>()));
        self.areas.borrow_mut().remove(label);
        *self.generations.borrow_mut().entry(label.to_owned()).or_default() += 1;
        self.fresh.borrow_mut().entry(label.to_owned()).or_default().extend(names);
        // Whatever was written before the controller removed the files: gone too.
        if let Some(kept) = &self.kept {
            if let Err(e) = kept.remove(label) {
                tracing::warn!("cannot remove the storage kept for {label}: {e}");
            }
        }
    }

    fn write_after(&self, label: &str, file: File, wait: Option<Duration>) {
        match wait {
            Some(wait) if wait.is_zero() => self.write(label, file),
            Some(wait) => {
                let (me, label) = (self.me.clone(), label.to_owned());
                gtk::glib::timeout_add_local_once(wait, move || {
                    if let Some(me) = me.upgrade() {
                        me.write(&label, file);
                    }
                });
            }
            None => {}
        }
    }

    fn write(&self, label: &str, file: File) {
        let Some(kept) = &self.kept else { return };
        // Forgotten meanwhile: nothing to write.
        if !self.areas.borrow().contains_key(label) {
            return;
        }
        let written = self.with_area(label, |area| {
            let writes = &mut area.writes[file as usize];
            writes.scheduled = false;
            writes.written = Some(Instant::now());
            match file {
                File::Items => kept.save(label, &area.items),
                File::Databases => kept.save_databases(label, &area.databases),
            }
        });
        if let Err(e) = written {
            tracing::warn!("cannot keep the Views' storage of {label}: {e}");
        }
    }
}
