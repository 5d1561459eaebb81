//! A View origin's `localStorage` and IndexedDB, kept by the host across runs.
//!
//! Under the spec's frame tree a View is a third party of its webview's top document
//! (`mcp-host://frame`), and WebKitGTK 2.50 gives a third party's `localStorage` an area in memory
//! only, with no setting to change it (measured in `docs/notes/third-party-storage.md`). So the
//! host keeps it: the View's proxy page shares the View's origin, hence its storage area; it
//! hears the View's changes (the `storage` event every other document of an area gets) and sends
//! them on its line, and before the first View of a server in a web process loads, it puts back
//! what was kept. IndexedDB has no change events: the proxy dumps the origin's databases
//! it knows of (after the View's transactions complete, and now and then while it is live) and
//! sends the dump ([`merge_databases`]); it restores them, likewise, before the first View loads.
//! Two files per sandbox label (the hash of the server's identity, see [`super::origin`]) under
//! the host's data directory, `<label>.json` for the items and `<label>.idb.json` for the
//! databases: a server's Views never see another server's, as with the origins themselves.
//! Bounded ([`MAX_UNITS`], [`MAX_DATABASE_BYTES`]), written owner-only and whole (a temporary
//! file renamed over the old one, so a crash keeps the old copy), and removed with the server.
//!
//! Everything here is the View's word: a View can write what it likes into its own origin's
//! file, and nothing else.

// Without the desktop runtime only the removal with a server is used.
#![cfg_attr(not(feature = "desktop"), allow(dead_code))]

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

/// The most a server's kept storage holds: keys and values, in UTF-16 code units as a browser
/// counts them (WebKit's own quota per origin is 5 MB).
pub const MAX_UNITS: usize = 5 * 1024 * 1024 / 2;
/// The most bytes one line of changes from a proxy may have (a full area, in JSON, with room for
/// escapes).
pub const MAX_BYTES: usize = 16 * 1024 * 1024;

/// The most bytes a server's kept IndexedDB dump has (its JSON text, as the proxy sends it). A
/// dump past it is refused and the one kept before stays.
pub const MAX_DATABASE_BYTES: usize = 16 * 1024 * 1024;

/// A server's items.
pub type Items = BTreeMap<String, String>;

/// A server's IndexedDB databases, by name: each as its proxy dumped it ([`merge_databases`]).
pub type Databases = BTreeMap<String, Value>;

/// Where the host keeps its servers' Views' storage: a directory of one file per label.
#[derive(Debug, Clone)]
pub struct KeptStorage {
    dir: PathBuf,
}

/// A label is 32 lower-case hex digits ([`super::sandbox_label`]); anything else names no file.
fn is_label(label: &str) -> bool {
    label.len() == 32 && label.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl KeptStorage {
    /// The user's (`$XDG_DATA_HOME/mcp-apps-host/view-storage`).
    pub fn user() -> Option<Self> {
        let dirs = directories::ProjectDirs::from("", "", "mcp-apps-host")?;
        Some(Self::at(dirs.data_dir().join("view-storage")))
    }

    /// The directory `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    fn file(&self, label: &str) -> Option<PathBuf> {
        is_label(label).then(|| self.dir.join(format!("{label}.json")))
    }

    fn databases_file(&self, label: &str) -> Option<PathBuf> {
        is_label(label).then(|| self.dir.join(format!("{label}.idb.json")))
    }

    /// What was kept for `label` (nothing when there is no file, or it is unreadable: said in
    /// the log, and the View starts empty).
    pub fn load(&self, label: &str) -> Items {
        let Some(path) = self.file(label) else { return Items::new() };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Items::new(),
            Err(e) => {
                tracing::warn!("cannot read the Views' storage {}: {e}", path.display());
                return Items::new();
            }
        };
        match serde_json::from_str::<Items>(&text) {
            Ok(items) if units(&items) <= MAX_UNITS => items,
            Ok(_) => {
                tracing::warn!("the Views' storage {} is over its bound: not used", path.display());
                Items::new()
            }
            Err(e) => {
                tracing::warn!("the Views' storage {} is not readable ({e}): not used", path.display());
                Items::new()
            }
        }
    }

    /// Keeps `items` for `label` (an empty area removes its file).
    pub fn save(&self, label: &str, items: &Items) -> std::io::Result<()> {
        let Some(path) = self.file(label) else {
            return Err(std::io::Error::other(format!("{label:?} is not a sandbox label")));
        };
        if items.is_empty() {
            return self.remove(label);
        }
        let text = serde_json::to_vec(items).map_err(std::io::Error::other)?;
        crate::private_file::write(&path, &text)
    }

    /// The IndexedDB databases kept for `label`: none when there is no file, or it is
    /// unreadable or not a dump (said in the log, and the View starts without them).
    pub fn load_databases(&self, label: &str) -> Databases {
        let Some(path) = self.databases_file(label) else { return Databases::new() };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Databases::new(),
            Err(e) => {
                tracing::warn!("cannot read the Views' databases {}: {e}", path.display());
                return Databases::new();
            }
        };
        let mut databases = Databases::new();
        match merge_databases(&mut databases, &text) {
            Ok(()) => databases,
            Err(e) => {
                tracing::warn!("the Views' databases {} are not used: {e}", path.display());
                Databases::new()
            }
        }
    }

    /// Keeps `databases` for `label` (none: the file goes).
    pub fn save_databases(&self, label: &str, databases: &Databases) -> std::io::Result<()> {
        let Some(path) = self.databases_file(label) else {
            return Err(std::io::Error::other(format!("{label:?} is not a sandbox label")));
        };
        match databases.is_empty() {
            true => remove_file(path),
            false => crate::private_file::write(&path, dump_text(databases).as_bytes()),
        }
    }

    /// Forgets what was kept for `label` (its server was removed): its items and databases.
    pub fn remove(&self, label: &str) -> std::io::Result<()> {
        let (Some(items), Some(databases)) = (self.file(label), self.databases_file(label)) else { return Ok(()) };
        remove_file(items)?;
        remove_file(databases)
    }

    /// Where `label`'s file is.
    #[cfg(test)]
    pub fn path(&self, label: &str) -> Option<PathBuf> {
        self.file(label)
    }

    /// Where `label`'s databases' file is.
    #[cfg(test)]
    pub fn databases_path(&self, label: &str) -> Option<PathBuf> {
        self.databases_file(label)
    }
}

fn remove_file(path: PathBuf) -> std::io::Result<()> {
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// A proxy's IndexedDB dump (JSON text: `{"databases": [{"name", "version", "stores": [{"name",
/// "keyPath", "autoIncrement", "indexes", "records"}]}], "gone": [name]}`, records and keys in
/// the proxy's tagged encoding, `sandbox-proxy/proxy.js`) merged into `databases`: each database
/// it has replaces the one of that name, each it says is gone goes, the others stay (a proxy
/// dumps the databases it knows of: another View of the server may have made one it does not).
/// Only the frame is checked here: what is inside the stores is the View's word, which goes
/// back only into the View's own origin. A dump not of that shape, or that would take the
/// databases past [`MAX_DATABASE_BYTES`], changes nothing.
pub fn merge_databases(databases: &mut Databases, dump: &str) -> Result<(), String> {
    if dump.len() > MAX_DATABASE_BYTES {
        return Err(format!(
            "a databases dump of {} bytes is over the bound ({MAX_DATABASE_BYTES} bytes): not kept",
            dump.len()
        ));
    }
    let value: Value = serde_json::from_str(dump).map_err(|e| format!("a databases dump that is not JSON: {e}"))?;
    let Some(dumped) = value.get("databases").and_then(Value::as_array) else {
        return Err("a databases dump without a `databases` list".into());
    };
    let mut next = databases.clone();
    match value.get("gone") {
        None | Some(Value::Null) => {}
        Some(Value::Array(gone)) => {
            for name in gone {
                let name = name.as_str().ok_or("a databases dump whose `gone` is not a list of names")?;
                next.remove(name);
            }
        }
        Some(_) => return Err("a databases dump whose `gone` is not a list of names".into()),
    }
    for db in dumped {
        let name = db.get("name").and_then(Value::as_str);
        let version = db.get("version").and_then(Value::as_u64).filter(|v| *v >= 1);
        let stores = db.get("stores").and_then(Value::as_array);
        let (Some(name), Some(_), Some(stores)) = (name, version, stores) else {
            return Err("a database in a dump without its name, version or stores".into());
        };
        if !stores.iter().all(|s| s.get("name").is_some_and(Value::is_string) && s["records"].is_array()) {
            return Err(format!("a store of the database {name:?} without its name or records"));
        }
        next.insert(name.to_owned(), db.clone());
    }
    let size = dump_text(&next).len();
    if size > MAX_DATABASE_BYTES {
        return Err(format!(
            "the Views' databases would be over their bound ({size} of {MAX_DATABASE_BYTES} bytes): not kept"
        ));
    }
    *databases = next;
    Ok(())
}

/// `databases` as a dump (JSON text), as kept on disk and handed back to a proxy.
pub fn dump_text(databases: &Databases) -> String {
    serde_json::json!({ "databases": databases.values().collect::<Vec<_>>() }).to_string()
}

/// The size of `items` as a browser counts it (UTF-16 code units of keys and values).
pub fn units(items: &Items) -> usize {
    items.iter().map(|(k, v)| k.encode_utf16().count() + v.encode_utf16().count()).sum()
}

/// Applies one line of changes from a View's proxy (`{"clear": bool, "set": {key: value or
/// null}}`: the area cleared first, then each key set, or removed for null) to `items`, whose
/// size is `size` ([`units`], kept by the caller so a change costs its own size, not the
/// area's). A line that is not that shape, or that would take the area past [`MAX_UNITS`],
/// changes nothing.
pub fn apply(items: &mut Items, size: &mut usize, line: &str) -> Result<(), String> {
    if line.len() > MAX_BYTES {
        return Err(format!("a storage change of {} bytes is over the bound", line.len()));
    }
    let change: Value = serde_json::from_str(line).map_err(|e| format!("a storage change that is not JSON: {e}"))?;
    let clear = change["clear"].as_bool().unwrap_or(false);
    let none = serde_json::Map::new();
    let set = match change.get("set") {
        Some(Value::Object(set)) => set,
        None | Some(Value::Null) => &none,
        Some(_) => return Err("a storage change whose `set` is not an object".into()),
    };
    let entry = |k: &str, v: &str| k.encode_utf16().count() + v.encode_utf16().count();
    let mut next = if clear { 0 } else { *size };
    for (key, value) in set {
        if !clear {
            next = next.saturating_sub(items.get(key).map_or(0, |old| entry(key, old)));
        }
        match value {
            Value::String(v) => next += entry(key, v),
            Value::Null => {}
            _ => return Err(format!("a storage change whose value for {key:?} is not a string")),
        }
    }
    if next > MAX_UNITS {
        return Err(format!("the Views' storage would be over its bound ({MAX_UNITS} characters): not kept"));
    }
    if clear {
        items.clear();
    }
    for (key, value) in set {
        match value {
            Value::String(v) => items.insert(key.clone(), v.clone()),
            _ => items.remove(key),
        };
    }
    *size = next;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef";
    const B: &str = "fedcba9876543210fedcba9876543210";

    #[test]
    fn each_label_keeps_its_own_items_across_loads() {
        let dir = tempfile::tempdir().unwrap();
        let kept = KeptStorage::at(dir.path().join("view-storage"));
        let mut items = kept.load(A);
        assert!(items.is_empty());
        apply(&mut items, &mut 0, r#"{"set":{"draft":"hello","n":"1"}}"#).unwrap();
        kept.save(A, &items).unwrap();
        assert_eq!(kept.load(A), items, "the same server reads what it kept");
        assert!(kept.load(B).is_empty(), "another server reads nothing of it");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(kept.path(A).unwrap()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        kept.remove(A).unwrap();
        assert!(kept.load(A).is_empty(), "gone with its server");
        assert!(!kept.path(A).unwrap().exists());
    }

    #[test]
    fn changes_set_remove_and_clear_in_order() {
        let (mut items, mut size) = (Items::new(), 0);
        apply(&mut items, &mut size, r#"{"set":{"a":"1","b":"2"}}"#).unwrap();
        apply(&mut items, &mut size, r#"{"set":{"a":null,"b":"22"}}"#).unwrap();
        assert_eq!(items, Items::from([("b".into(), "22".into())]));
        assert_eq!(size, units(&items), "the size follows the changes");
        apply(&mut items, &mut size, r#"{"clear":true,"set":{"c":"3"}}"#).unwrap();
        assert_eq!(items, Items::from([("c".into(), "3".into())]));
        assert_eq!(size, 2);
    }

    #[test]
    fn a_change_past_the_bound_or_malformed_changes_nothing() {
        let mut items = Items::from([("kept".into(), "yes".into())]);
        let mut size = units(&items);
        let big = "x".repeat(MAX_UNITS);
        let line = serde_json::json!({"set": {"big": big}}).to_string();
        assert!(apply(&mut items, &mut size, &line).is_err());
        // Replacing what is there counts the new value only.
        let fits = serde_json::json!({"set": {"kept": "x".repeat(MAX_UNITS - 4)}}).to_string();
        let mut copy = (items.clone(), size);
        assert!(apply(&mut copy.0, &mut copy.1, &fits).is_ok());
        for bad in ["not json", r#"{"set":[1]}"#, r#"{"set":{"a":"1","b":1}}"#] {
            assert!(apply(&mut items, &mut size, bad).is_err(), "{bad}");
        }
        assert_eq!(items, Items::from([("kept".into(), "yes".into())]));
        assert_eq!(size, 7);
    }

    #[test]
    fn a_name_that_is_not_a_label_names_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let kept = KeptStorage::at(dir.path());
        for bad in ["../../etc/passwd", "", "0123456789ABCDEF0123456789ABCDEF", "x"] {
            assert!(kept.path(bad).is_none(), "{bad}");
            assert!(kept.save(bad, &Items::from([("a".into(), "b".into())])).is_err());
        }
    }

    const DUMP: &str = r#"{"databases":[{"name":"orders","version":2,"stores":[{"name":"o","keyPath":"id",
        "autoIncrement":false,"indexes":[{"name":"by","keyPath":"by","unique":false,"multiEntry":false}],
        "records":[[1,{"o":[["id",1],["at",{"d":0}],["b",{"view":"Uint8Array","b64":"AQI="}]]}]]}]}]}"#;

    fn databases(dump: &str) -> Databases {
        let mut databases = Databases::new();
        merge_databases(&mut databases, dump).unwrap();
        databases
    }

    #[test]
    fn each_label_keeps_its_own_databases_and_removal_takes_both_files() {
        let dir = tempfile::tempdir().unwrap();
        let kept = KeptStorage::at(dir.path().join("view-storage"));
        assert!(kept.load_databases(A).is_empty());
        let orders = databases(DUMP);
        kept.save_databases(A, &orders).unwrap();
        kept.save(A, &Items::from([("a".into(), "1".into())])).unwrap();
        assert_eq!(kept.load_databases(A), orders);
        assert!(kept.load_databases(B).is_empty(), "another server reads nothing of it");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(kept.databases_path(A).unwrap()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // A database said gone goes; with none left, so does the file.
        kept.save_databases(B, &orders).unwrap();
        let mut left = orders.clone();
        merge_databases(&mut left, r#"{"databases":[],"gone":["orders"]}"#).unwrap();
        kept.save_databases(B, &left).unwrap();
        assert!(!kept.databases_path(B).unwrap().exists());
        kept.remove(A).unwrap();
        assert!(!kept.path(A).unwrap().exists() && !kept.databases_path(A).unwrap().exists(), "gone with its server");
    }

    #[test]
    fn a_dump_replaces_the_databases_it_names_and_keeps_the_others() {
        let mut kept = databases(DUMP);
        merge_databases(&mut kept, r#"{"databases":[{"name":"drafts","version":1,"stores":[]}]}"#).unwrap();
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["drafts", "orders"], "a proxy that knows one database only");
        merge_databases(&mut kept, r#"{"databases":[{"name":"orders","version":3,"stores":[]}]}"#).unwrap();
        assert_eq!(kept["orders"]["version"], 3);
        merge_databases(&mut kept, r#"{"databases":[],"gone":["drafts"]}"#).unwrap();
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["orders"]);
    }

    #[test]
    fn a_dump_over_the_bound_or_malformed_keeps_the_last_good_one() {
        let dir = tempfile::tempdir().unwrap();
        let kept = KeptStorage::at(dir.path());
        let mut databases = databases(DUMP);
        kept.save_databases(A, &databases).unwrap();
        let record = |size: usize| {
            format!(
                r#"{{"databases":[{{"name":"x","version":1,"stores":[{{"name":"s","records":[["k","{}"]]}}]}}]}}"#,
                "x".repeat(size)
            )
        };
        let refused = merge_databases(&mut databases, &record(MAX_DATABASE_BYTES)).unwrap_err();
        assert!(refused.contains("over the bound"), "{refused}");
        // Under the bound alone, over it with what is kept beside it.
        let refused = merge_databases(&mut databases, &record(MAX_DATABASE_BYTES - 100)).unwrap_err();
        assert!(refused.contains("over their bound"), "{refused}");
        for bad in [
            "not json",
            "{}",
            r#"{"databases":[{"name":"x","stores":[]}]}"#,
            r#"{"databases":[{"name":"x","version":0,"stores":[]}]}"#,
            r#"{"databases":[{"name":"x","version":1,"stores":[{"name":"s"}]}]}"#,
            r#"{"databases":[],"gone":"orders"}"#,
        ] {
            assert!(merge_databases(&mut databases, bad).is_err(), "{bad}");
        }
        // Nothing refused reached memory, so nothing refused reaches the file.
        assert_eq!(databases, self::databases(DUMP));
        kept.save_databases(A, &databases).unwrap();
        assert_eq!(kept.load_databases(A), self::databases(DUMP));
        // An over-bound file (written by something else) is not used, and not removed.
        std::fs::write(kept.databases_path(B).unwrap(), record(MAX_DATABASE_BYTES)).unwrap();
        assert!(kept.load_databases(B).is_empty());
        assert!(kept.databases_path(B).unwrap().exists());
    }

    #[test]
    fn a_write_cut_short_keeps_the_old_copy() {
        let dir = tempfile::tempdir().unwrap();
        let kept = KeptStorage::at(dir.path());
        kept.save_databases(A, &databases(DUMP)).unwrap();
        kept.save(A, &Items::from([("a".into(), "1".into())])).unwrap();
        // A crash mid-write leaves the temporary file half written; the kept files are whole.
        for path in [kept.databases_path(A).unwrap(), kept.path(A).unwrap()] {
            let mut tmp = path.into_os_string();
            tmp.push(".tmp");
            std::fs::write(&tmp, "{\"databases\":[{\"na").unwrap();
        }
        assert_eq!(kept.load_databases(A), databases(DUMP));
        assert_eq!(kept.load(A), Items::from([("a".into(), "1".into())]));
        // The next write replaces it whole, and takes the temporary file with it.
        let next = databases(&DUMP.replace("\"version\":2", "\"version\":3"));
        kept.save_databases(A, &next).unwrap();
        assert_eq!(kept.load_databases(A), next);
        let names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into()).collect();
        assert_eq!(
            names.iter().filter(|n| n.ends_with(".tmp")).count(),
            1,
            "the other file's leftover only: {names:?}"
        );
    }
}
