//! Adds an installed server to the person's config file.
//!
//! The file stays theirs: its other keys and their order are kept (see [`super::doc`]); it is
//! rewritten as plain JSON, so a file the loader cannot read (comments, another shape) is refused
//! rather than rewritten. The new file is written beside the old one, loaded with the host's own
//! loader, and only renamed over the old one when the new server loads from it.

use std::path::{Path, PathBuf};

use super::doc::Doc;
use super::Resolved;
use crate::server::config::{load_config, ConfigFormat, LoadOptions};

/// What [`add_server`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    /// The config file.
    pub path: PathBuf,
    /// An entry of that name was replaced (with `--replace`).
    pub replaced: bool,
    /// The file was created.
    pub created: bool,
    /// Users other than its owner may read the file.
    pub readable_by_others: bool,
}

/// Writes `entry` under `name` into `path` (created as a desktop-format `{"mcpServers": ...}`
/// file when missing). Refuses a name that is there already unless `replace`.
pub(crate) fn add_server(path: &Path, name: &str, entry: &Resolved, replace: bool) -> Result<Written, String> {
    let created = !path.exists();
    let (mut doc, format) = if created {
        (Doc::Object(vec![("mcpServers".to_owned(), Doc::Object(Vec::new()))]), ConfigFormat::DesktopClient)
    } else {
        let load = load_config(path, &LoadOptions::new())
            .map_err(|e| format!("cannot add a server to it: {e}; fix the file first, or use another with --config"))?;
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let doc: Doc = serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(&text))
            .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        (doc, load.format)
    };
    let key = match format {
        ConfigFormat::DesktopClient => "mcpServers",
        ConfigFormat::VsCode => "servers",
        _ => {
            return Err(format!(
                "{} is an Agent Plugin's mcp.json, which belongs to its plugin; install into your own config \
                 file (the default, or --config FILE)",
                path.display()
            ))
        }
    };
    let servers = doc.get_mut(key).ok_or_else(|| format!("{} has no \"{key}\" object", path.display()))?;
    if !matches!(servers, Doc::Object(_)) {
        return Err(format!("\"{key}\" in {} is not an object", path.display()));
    }
    let replaced = servers.has(name);
    if replaced && !replace {
        return Err(format!(
            "{} already has a server named {name:?}; nothing was changed. Pass --replace to overwrite it, or \
             --name NAME to install this one under another name",
            path.display()
        ));
    }
    servers.set(name, entry_doc(entry, format));

    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    create_private_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.install-{}",
        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        std::process::id()
    ));
    let mode = existing_mode(path);
    let outcome = write_new(&tmp, &doc.to_pretty(), mode)
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))
        .and_then(|()| check_loads(&tmp, name))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| format!("cannot replace {}: {e}", path.display())));
    if outcome.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    outcome?;
    Ok(Written { path: path.to_owned(), replaced, created, readable_by_others: mode.unwrap_or(0o600) & 0o077 != 0 })
}

/// The entry as the file's format writes it; the transport always named, so a URL ending in
/// `/sse` is never taken for the other one.
fn entry_doc(entry: &Resolved, format: ConfigFormat) -> Doc {
    let strings =
        |items: &[(String, String)]| Doc::Object(items.iter().map(|(k, v)| (k.clone(), Doc::string(v))).collect());
    let mut fields = Vec::new();
    match entry {
        Resolved::Stdio { command, args, env } => {
            if format == ConfigFormat::VsCode {
                fields.push(("type".to_owned(), Doc::string("stdio")));
            }
            fields.push(("command".to_owned(), Doc::string(command)));
            fields.push(("args".to_owned(), Doc::Array(args.iter().map(Doc::string).collect())));
            if !env.is_empty() {
                fields.push(("env".to_owned(), strings(env)));
            }
        }
        Resolved::Remote { url, sse, headers } => {
            fields.push(("type".to_owned(), Doc::string(if *sse { "sse" } else { "http" })));
            fields.push(("url".to_owned(), Doc::string(url)));
            if !headers.is_empty() {
                fields.push(("headers".to_owned(), strings(headers)));
            }
        }
    }
    Doc::Object(fields)
}

/// The loader must read the new file and the new server from it.
fn check_loads(path: &Path, name: &str) -> Result<(), String> {
    let load = load_config(path, &LoadOptions::new()).map_err(|e| format!("the new config would not load: {e}"))?;
    if let Some(e) = load.errors.iter().find(|e| e.entry == name) {
        return Err(format!("the new entry would not load, nothing was changed: {}", e.rule));
    }
    if !load.servers.iter().any(|s| s.name() == name) {
        return Err(format!("the new entry {name:?} would not load, nothing was changed"));
    }
    Ok(())
}

#[cfg(unix)]
fn existing_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).ok().map(|m| m.permissions().mode() & 0o777)
}

#[cfg(not(unix))]
fn existing_mode(_: &Path) -> Option<u32> {
    None
}

/// A new file is its owner's only (it may hold keys); an existing one keeps its mode.
fn write_new(path: &Path, text: &str, mode: Option<u32>) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode.unwrap_or(0o600));
    let mut file = options.open(path)?;
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        // The umask may have taken bits off at creation.
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    std::io::Write::write_all(&mut file, text.as_bytes())?;
    file.sync_all()
}

/// Missing directories are made for their owner only; existing ones are left as they are.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio() -> Resolved {
        Resolved::Stdio { command: "node".into(), args: vec!["s.mjs".into()], env: vec![("K".into(), "v".into())] }
    }

    #[test]
    fn other_keys_stay_in_order_and_a_clash_needs_replace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(
            &path,
            r#"{"zTheme": "dark", "mcpServers": {"b": {"command": "x", "autoApprove": ["t"]}}, "aOther": [1, 2.5]}"#,
        )
        .unwrap();
        let w = add_server(&path, "new", &stdio(), false).unwrap();
        assert!(!w.created && !w.replaced);
        let text = std::fs::read_to_string(&path).unwrap();
        let order: Vec<usize> = ["zTheme", "mcpServers", "\"b\"", "autoApprove", "\"new\"", "aOther", "2.5"]
            .iter()
            .map(|k| text.find(k).unwrap_or_else(|| panic!("{k} missing:\n{text}")))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
        let err = add_server(&path, "b", &stdio(), false).unwrap_err();
        assert!(err.contains("already has a server named \"b\"") && err.contains("--replace"), "{err}");
        assert!(add_server(&path, "b", &stdio(), true).unwrap().replaced);
        let load = load_config(&path, &LoadOptions::new()).unwrap();
        assert_eq!(load.servers.iter().map(|s| s.name()).collect::<Vec<_>>(), ["b", "new"]);
    }

    #[test]
    fn a_new_file_is_private_and_a_bad_one_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/mcp.json");
        let remote = Resolved::Remote { url: "https://example.com/sse".into(), sse: false, headers: Vec::new() };
        let w = add_server(&path, "r", &remote, false).unwrap();
        assert!(w.created && !w.readable_by_others);
        let load = load_config(&path, &LoadOptions::new()).unwrap();
        assert!(matches!(load.servers[0], crate::server::ServerSpec::StreamableHttp { .. }), "{:?}", load.servers);

        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{\"mcpServers\": {}, // mine\n}").unwrap();
        let err = add_server(&bad, "r", &remote, false).unwrap_err();
        assert!(err.contains("not valid JSON") && err.contains("fix the file first"), "{err}");
        assert!(std::fs::read_to_string(&bad).unwrap().contains("// mine"));

        // The loader's own rules decide: an http URL that is not local is refused, nothing written.
        let insecure = Resolved::Remote { url: "http://example.com/mcp".into(), sse: false, headers: Vec::new() };
        let err = add_server(&path, "insecure", &insecure, false).unwrap_err();
        assert!(err.contains("would not load") && err.contains("https"), "{err}");
        assert!(!std::fs::read_to_string(&path).unwrap().contains("insecure"));
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "no temporary file left");
    }

    #[test]
    fn vs_code_files_get_typed_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(&path, r#"{"servers": {}, "inputs": []}"#).unwrap();
        add_server(&path, "s", &stdio(), false).unwrap();
        let load = load_config(&path, &LoadOptions::new()).unwrap();
        assert_eq!(load.format, ConfigFormat::VsCode);
        assert_eq!(load.servers.len(), 1);
        assert!(std::fs::read_to_string(&path).unwrap().contains("\"type\": \"stdio\""));
    }
}
