//! Adds an installed server to the person's config file, and makes the servers editor's changes
//! to it (an entry changed in place, another file's servers imported).
//!
//! The file stays theirs: its other keys and their order are kept (see [`super::doc`]); it is
//! rewritten as plain JSON, so a file the loader cannot read (comments, another shape) is refused
//! rather than rewritten. The new file is written beside the old one, loaded with the host's own
//! loader, and only renamed over the old one when the new server loads from it.

use std::path::{Path, PathBuf};

use super::doc::Doc;
use super::Resolved;
use crate::server::config::{load_config, ConfigFormat, LoadOptions};
use crate::server::ServerSpec;

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
        open(path, "--config")?
    };
    let servers = servers_of(&mut doc, format, path)?;
    let replaced = servers.has(name);
    if replaced && !replace {
        return Err(format!(
            "{} already has a server named {name:?}; nothing was changed. Pass --replace to overwrite it, or \
             --name NAME to install this one under another name",
            path.display()
        ));
    }
    servers.set(name, entry_doc(entry, format));
    let mode = write_checked(path, &doc, |load| entry_loads(load, "new entry", name, true))?;
    Ok(Written { path: path.to_owned(), replaced, created, readable_by_others: mode.unwrap_or(0o600) & 0o077 != 0 })
}

/// One server entry of a config file as the servers editor lists it: enabled or not, and what
/// it runs or reaches, as the file says (the person's own text, shown as one line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConfigEntry {
    /// Its key.
    pub name: String,
    /// It has `"disabled": true`.
    pub disabled: bool,
    /// Its command line or URL.
    pub what: String,
}

/// The server entries of `path`, in file order; none when the file is missing.
pub(crate) fn entries(path: &Path) -> Result<Vec<ConfigEntry>, String> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let (mut doc, format) = open(path, "the servers editor")?;
    let Doc::Object(servers) = servers_of(&mut doc, format, path)? else { return Ok(Vec::new()) };
    Ok(servers
        .iter()
        .map(|(name, entry)| {
            let text = |key: &str| match entry {
                Doc::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()),
                _ => None,
            };
            let what = match (text("command"), text("url")) {
                (Some(Doc::String(command)), _) => {
                    let args = match text("args") {
                        Some(Doc::Array(args)) => args
                            .into_iter()
                            .filter_map(|a| match a {
                                Doc::String(a) => Some(a),
                                _ => None,
                            })
                            .collect(),
                        _ => Vec::new(),
                    };
                    shell_words::join(std::iter::once(command).chain(args))
                }
                (_, Some(Doc::String(url))) => url,
                _ => String::new(),
            };
            ConfigEntry { name: name.clone(), disabled: text("disabled") == Some(Doc::Bool(true)), what }
        })
        .collect())
}

/// Takes the server `name` out of `path`.
pub(crate) fn remove_server(path: &Path, name: &str) -> Result<(), String> {
    let (mut doc, format) = open(path, "the servers editor")?;
    if !servers_of(&mut doc, format, path)?.remove(name) {
        return Err(format!("{} has no server named {name:?}; nothing was changed", path.display()));
    }
    write_checked(path, &doc, |_| Ok(())).map(|_| ())
}

/// Disables (`"disabled": true`) or enables (the key taken out) the server `name` of `path`;
/// the entry's other keys stay as they are.
pub(crate) fn set_disabled(path: &Path, name: &str, disabled: bool) -> Result<(), String> {
    let (mut doc, format) = open(path, "the servers editor")?;
    let entry = servers_of(&mut doc, format, path)?
        .get_mut(name)
        .filter(|e| matches!(e, Doc::Object(_)))
        .ok_or_else(|| format!("{} has no server named {name:?}; nothing was changed", path.display()))?;
    if disabled {
        entry.set("disabled", Doc::Bool(true));
    } else {
        entry.remove("disabled");
    }
    write_checked(path, &doc, |load| entry_loads(load, "entry", name, !disabled)).map(|_| ())
}

/// Changes the server `name` of `path` in place: it runs or reaches what `entry` says (its
/// command and args, or its URL; `entry`'s env and headers are not used) and, when `new_name`
/// differs, takes that key. The entry's other keys (env, headers, `disabled`, the client's own)
/// and its place in the file stay; a `new_name` another server has is refused.
pub(crate) fn edit_server(path: &Path, name: &str, new_name: &str, entry: &Resolved) -> Result<(), String> {
    if new_name.trim().is_empty() {
        return Err("a server needs a name; nothing was changed".into());
    }
    let (mut doc, format) = open(path, "the servers editor")?;
    let servers = servers_of(&mut doc, format, path)?;
    if new_name != name && servers.has(new_name) {
        return Err(format!(
            "{} already has a server named {new_name:?}; nothing was changed. Choose another name",
            path.display()
        ));
    }
    let fields = servers
        .get_mut(name)
        .filter(|e| matches!(e, Doc::Object(_)))
        .ok_or_else(|| format!("{} has no server named {name:?}; nothing was changed", path.display()))?;
    let typed = format == ConfigFormat::VsCode || fields.has("type");
    match entry {
        Resolved::Stdio { command, args, .. } => {
            for key in ["url", "headers", "oauth"] {
                fields.remove(key);
            }
            if typed {
                fields.set("type", Doc::string("stdio"));
            }
            fields.set("command", Doc::string(command));
            fields.set("args", Doc::Array(args.iter().map(Doc::string).collect()));
        }
        Resolved::Remote { url, sse, .. } => {
            for key in ["command", "args", "env", "cwd"] {
                fields.remove(key);
            }
            // The transport always named, as `add_server` writes it.
            fields.set("type", Doc::string(if *sse { "sse" } else { "http" }));
            fields.set("url", Doc::string(url));
        }
    }
    let disabled = fields.get("disabled") == Some(&Doc::Bool(true));
    servers.rename(name, new_name);
    write_checked(path, &doc, |load| entry_loads(load, "changed entry", new_name, !disabled)).map(|_| ())
}

/// What [`import`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Imported {
    /// Each server written: its name in the imported file, and its name in the person's (another
    /// when that one was taken).
    pub added: Vec<(String, String)>,
    /// Each entry left out, and why.
    pub skipped: Vec<(String, String)>,
}

/// Adds every server `source` (any format the loader reads) holds to `path` (created as a
/// desktop-format file when missing), each under its own name or, when that is taken, `NAME-2`,
/// `NAME-3`... An entry is copied as written (its env, headers, args and the client's own keys),
/// except that an Agent Plugin's, whose placeholders only its plugin resolves, is written as it
/// resolved. Entries the loader refuses, disabled ones, and a server the person has already
/// (the same [`ServerSpec::identity`]: command line, folder, environment and program, or URL) are
/// left out and said in [`Imported::skipped`]. `source` is only read.
pub(crate) fn import(path: &Path, source: &Path) -> Result<Imported, String> {
    let load =
        load_config(source, &LoadOptions::new()).map_err(|e| format!("cannot import it: {e}; nothing was changed"))?;
    if super::other_clients::same_file(path, source) {
        return Err(format!("{} is the config file this app uses already; nothing was changed", source.display()));
    }
    let text = std::fs::read_to_string(source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
    let theirs: Doc = serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(&text))
        .map_err(|e| format!("{} is not JSON: {e}", source.display()))?;
    let their_key = if load.format == ConfigFormat::VsCode { "servers" } else { "mcpServers" };
    let theirs = theirs.get(their_key).cloned().unwrap_or(Doc::Object(Vec::new()));
    let (mut doc, format) = if path.exists() {
        open(path, "the servers editor")?
    } else {
        (Doc::Object(vec![("mcpServers".to_owned(), Doc::Object(Vec::new()))]), ConfigFormat::DesktopClient)
    };
    // The servers the person has already, by identity: one of them is not imported again.
    let mut yours: Vec<(String, String)> = match path.exists() {
        true => load_config(path, &LoadOptions::new())
            .map(|l| l.servers.iter().map(|s| (s.identity(), s.name().to_owned())).collect())
            .unwrap_or_default(),
        false => Vec::new(),
    };
    let servers = servers_of(&mut doc, format, path)?;
    let mut imported = Imported::default();
    for spec in &load.servers {
        let from = spec.name();
        let identity = spec.identity();
        if let Some((_, name)) = yours.iter().find(|(known, _)| *known == identity) {
            imported.skipped.push((from.to_owned(), format!("the same server is in your servers as {name:?}")));
            continue;
        }
        let entry = match (load.format, theirs.get(from)) {
            (ConfigFormat::AgentPlugin, _) | (_, None) => spec_doc(spec, format),
            (_, Some(written)) => Some(retyped(written.clone(), spec, format)),
        };
        let Some(entry) = entry else {
            imported.skipped.push((from.to_owned(), "a server built into its host".into()));
            continue;
        };
        let name = std::iter::once(from.to_owned())
            .chain((2..).map(|n| format!("{from}-{n}")))
            .find(|n| !servers.has(n))
            .unwrap_or_default();
        servers.set(&name, entry);
        yours.push((identity, name.clone()));
        imported.added.push((from.to_owned(), name));
    }
    imported.skipped.extend(load.errors.iter().map(|e| (e.entry.clone(), e.rule.clone())));
    if let Doc::Object(entries) = &theirs {
        for (name, _) in entries {
            if !load.servers.iter().any(|s| s.name() == name) && !load.errors.iter().any(|e| &e.entry == name) {
                imported.skipped.push((name.clone(), "it is disabled there".into()));
            }
        }
    }
    if imported.added.is_empty() {
        return Ok(imported);
    }
    write_checked(path, &doc, |load| {
        for (from, name) in &imported.added {
            if let Some(e) = load.errors.iter().find(|e| &e.entry == name) {
                return Err(format!("{from:?} would not load in {}, nothing was changed: {}", path.display(), e.rule));
            }
        }
        Ok(())
    })?;
    Ok(imported)
}

/// An entry copied from another file, its transport named when the person's file is VS Code's
/// (which reads a URL without `type` as Streamable HTTP, and knows no `streamable-http`).
fn retyped(mut entry: Doc, spec: &ServerSpec, format: ConfigFormat) -> Doc {
    if format == ConfigFormat::VsCode {
        let kind = match spec {
            ServerSpec::Sse { .. } => "sse",
            ServerSpec::StreamableHttp { .. } => "http",
            _ => "stdio",
        };
        entry.set("type", Doc::string(kind));
    }
    entry
}

/// A resolved server as an entry of a file in `format`; none for a built-in server.
fn spec_doc(spec: &ServerSpec, format: ConfigFormat) -> Option<Doc> {
    let strings =
        |items: &[(String, String)]| Doc::Object(items.iter().map(|(k, v)| (k.clone(), Doc::string(v))).collect());
    let mut fields = Vec::new();
    match spec {
        ServerSpec::Stdio { program, args, env, cwd, .. } => {
            if format == ConfigFormat::VsCode {
                fields.push(("type".to_owned(), Doc::string("stdio")));
            }
            fields.push(("command".to_owned(), Doc::string(program)));
            fields.push(("args".to_owned(), Doc::Array(args.iter().map(Doc::string).collect())));
            if !env.is_empty() {
                fields.push(("env".to_owned(), strings(env)));
            }
            if let Some(cwd) = cwd {
                fields.push(("cwd".to_owned(), Doc::string(cwd.to_string_lossy())));
            }
        }
        ServerSpec::StreamableHttp { url, headers, oauth, .. } | ServerSpec::Sse { url, headers, oauth, .. } => {
            let sse = matches!(spec, ServerSpec::Sse { .. });
            fields.push(("type".to_owned(), Doc::string(if sse { "sse" } else { "http" })));
            fields.push(("url".to_owned(), Doc::string(url.as_str())));
            if !headers.is_empty() {
                fields.push(("headers".to_owned(), strings(headers)));
            }
            if let Some(oauth) = oauth {
                let mut client = vec![("clientId".to_owned(), Doc::string(&oauth.client_id))];
                if let Some(secret) = &oauth.client_secret {
                    client.push(("clientSecret".to_owned(), Doc::string(secret)));
                }
                fields.push(("oauth".to_owned(), Doc::Object(client)));
            }
        }
        _ => return None,
    }
    Some(Doc::Object(fields))
}

/// The check an edit's new file passes before it replaces the old one: the entry `name` (the
/// `what` of the edit: "new entry", "entry", "changed entry") loads without an error, and, when
/// `runs` (it is not disabled), as a server.
fn entry_loads(load: &crate::server::config::ConfigLoad, what: &str, name: &str, runs: bool) -> Result<(), String> {
    if let Some(e) = load.errors.iter().find(|e| e.entry == name) {
        return Err(format!("the {what} {name:?} would not load, nothing was changed: {}", e.rule));
    }
    if runs && !load.servers.iter().any(|s| s.name() == name) {
        return Err(format!("the {what} {name:?} would not load, nothing was changed"));
    }
    Ok(())
}

/// Reads `path` for an edit: its document and format. A file the loader cannot read is refused
/// (`fix` says where to go instead); a file with comments (VS Code's JSONC) is refused by name,
/// since rewriting it as JSON would drop them.
fn open(path: &Path, elsewhere: &str) -> Result<(Doc, ConfigFormat), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if serde_json::from_str::<serde_json::Value>(text).is_err() && has_comments(text) {
        return Err(format!(
            "{} has comments, which rewriting it as JSON would drop; nothing was changed. Edit it in a text \
             editor, or take the comments out first",
            path.display()
        ));
    }
    let load = load_config(path, &LoadOptions::new())
        .map_err(|e| format!("cannot change its servers: {e}; fix the file first, or use another with {elsewhere}"))?;
    let doc: Doc = serde_json::from_str(text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    Ok((doc, load.format))
}

/// The object that holds the servers of a file in `format`.
fn servers_of<'a>(doc: &'a mut Doc, format: ConfigFormat, path: &Path) -> Result<&'a mut Doc, String> {
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
    Ok(servers)
}

/// `//` or `/*` outside a string: JSON with comments.
fn has_comments(text: &str) -> bool {
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if c == '/' && matches!(chars.peek(), Some('/' | '*')) {
            return true;
        }
    }
    false
}

/// Writes `doc` beside `path`, loads it with the host's loader, lets `check` judge what loaded,
/// and only then renames it over `path`: a change that would not load leaves the file as it
/// was. Returns the file's mode (an existing file keeps its own).
fn write_checked(
    path: &Path,
    doc: &Doc,
    check: impl FnOnce(&crate::server::config::ConfigLoad) -> Result<(), String>,
) -> Result<Option<u32>, String> {
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
        .and_then(|()| {
            load_config(&tmp, &LoadOptions::new()).map_err(|e| format!("the new config would not load: {e}"))
        })
        .and_then(|load| check(&load))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| format!("cannot replace {}: {e}", path.display())));
    if outcome.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    outcome.map(|()| mode)
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

/// Writes the conversation's model into `path`'s `model` section (created as a
/// desktop-format file when missing): `name` as `PROVIDER:NAME` and `url` (none: taken out).
/// A `keyFile` the section names stays, unless `drop_key_file` (the person gave the key in the
/// app, which now wins over a file). A VS Code file has no such section: refused, saying so.
pub(crate) fn set_model(path: &Path, name: &str, url: Option<&str>, drop_key_file: bool) -> Result<(), String> {
    let mut doc = if path.exists() {
        let (doc, format) = open(path, "--config")?;
        if format != ConfigFormat::DesktopClient {
            return Err(format!(
                "{} is not a desktop-format config file ({{\"mcpServers\": ...}}), which is where the host keeps \
                 its model; nothing was changed. Choose the model with --model, or use a desktop-format file",
                path.display()
            ));
        }
        doc
    } else {
        Doc::Object(vec![("mcpServers".to_owned(), Doc::Object(Vec::new()))])
    };
    let mut section = match doc.get_mut("model") {
        Some(Doc::Object(fields)) => Doc::Object(fields.clone()),
        _ => Doc::Object(Vec::new()),
    };
    section.set("name", Doc::string(name));
    match url {
        Some(url) => section.set("url", Doc::string(url)),
        None => {
            section.remove("url");
        }
    }
    if drop_key_file {
        section.remove("keyFile");
    }
    doc.set("model", section);
    write_checked(path, &doc, |load| match &load.model {
        Some(m) if m.name == name => Ok(()),
        _ => Err("the new model section would not load, nothing was changed".to_owned()),
    })
    .map(|_| ())
}

#[cfg(test)]
mod tests;
