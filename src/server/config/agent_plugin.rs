//! Agent Plugins `mcp.json` 1.0: closed variants, plugin-relative commands, and the
//! `${PLUGIN_ROOT}` / `${PLUGIN_DATA}` placeholders resolved against the plugin's directories.

use std::path::{Component, Path, PathBuf};

use super::entry::EntryResult;
use super::fields::{entry_object, env_map, field, header_map, optional_string, required_string, string_array, Json};
use super::spec::{parse_remote_url, redact_url, ServerSpec};
use super::LoadOptions;

/// The `$schema` of an Agent Plugins 1.0.0 `mcp.json`, the only version this host implements.
pub const AGENT_PLUGINS_MCP_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json";
pub(super) const AGENT_PLUGINS_SCHEMA_PREFIX: &str = "https://agent-plugins.org/schemas/";
const AGENT_PLUGINS_VERSION: &str = "1.0.0";
const PLUGIN_ROOT: &str = "PLUGIN_ROOT";
const PLUGIN_DATA: &str = "PLUGIN_DATA";
const ROOT_PLACEHOLDER: &str = "${PLUGIN_ROOT}";
const DATA_PLACEHOLDER: &str = "${PLUGIN_DATA}";

/// Where a plugin keeps its `${PLUGIN_DATA}` when [`LoadOptions`] names none:
/// `<user data dir>/mcp-apps-host/plugin-data/<plugin name>`.
///
/// The name is `plugin.json`'s `name` when it is a valid plugin name (so the directory survives
/// updates), else the directory name plus a hash of the root's path.
pub fn default_plugin_data_dir(plugin_root: &Path) -> Option<PathBuf> {
    let base = directories::BaseDirs::new()?.data_dir().join("mcp-apps-host").join("plugin-data");
    let manifest_name = read_plugin_manifest(plugin_root).and_then(|fields| match field(&fields, "name") {
        Some(Json::String(name)) if is_plugin_name(name) => Some(name.clone()),
        _ => None,
    });
    let name = manifest_name.unwrap_or_else(|| {
        use sha2::{Digest, Sha256};
        let dir: String = plugin_root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' })
            .collect();
        let digest = Sha256::digest(plugin_root.as_os_str().as_encoded_bytes());
        let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        format!("{dir}-{hash}")
    });
    Some(base.join(name))
}

/// Agent Plugins name rule: 1-64 of `[a-z0-9.-]`, alphanumeric at both ends, no `--` or `..`.
fn is_plugin_name(name: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    (1..=64).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        && edge(name.chars().next())
        && edge(name.chars().last())
        && !name.contains("--")
        && !name.contains("..")
}

/// The resolved places of one plugin: its root and its data directory (created when the file is
/// opened; if that fails, only the stdio entries, which need it, are invalid).
pub(super) struct AgentPlugin {
    root: PathBuf,
    root_str: String,
    data: Result<(PathBuf, String), String>,
}

impl AgentPlugin {
    /// Checks the top level (the whole file is disabled if it is wrong) and resolves the root.
    pub(super) fn open(dir: &Path, top: &[(String, Json)], opts: &LoadOptions) -> Result<Self, String> {
        if let Some((key, _)) = top.iter().find(|(k, _)| !matches!(k.as_str(), "$schema" | "mcpServers")) {
            return Err(format!(
                "unknown top-level key {key:?}: an Agent Plugins mcp.json has only \"$schema\" \
                 and \"mcpServers\", so MCP is disabled for this plugin"
            ));
        }
        match field(top, "$schema") {
            None => {}
            Some(Json::String(s)) if s == AGENT_PLUGINS_MCP_SCHEMA => {}
            Some(Json::String(s)) if s.starts_with(AGENT_PLUGINS_SCHEMA_PREFIX) => {
                return Err(format!(
                    "$schema {s:?} is not supported; this host implements Agent Plugins \
                     {AGENT_PLUGINS_VERSION} ({AGENT_PLUGINS_MCP_SCHEMA})"
                ))
            }
            Some(other) => {
                return Err(format!("$schema must be \"{AGENT_PLUGINS_MCP_SCHEMA}\", found {}", other.describe()))
            }
        }
        if let Some(manifest) = read_plugin_manifest(dir) {
            if let Some(Json::String(s)) = field(&manifest, "$schema") {
                let version = s.strip_prefix(AGENT_PLUGINS_SCHEMA_PREFIX).and_then(|rest| rest.split('/').next());
                if version.is_some_and(|v| v != AGENT_PLUGINS_VERSION) {
                    return Err(format!(
                        "plugin.json targets {s:?} but this mcp.json is Agent Plugins \
                         {AGENT_PLUGINS_VERSION}; the versions must match, so MCP is disabled \
                         for this plugin"
                    ));
                }
            }
        }
        let root = dir.canonicalize().map_err(|e| format!("cannot resolve the plugin root {}: {e}", dir.display()))?;
        let root_str = path_str(&root)?;
        let data = prepare_data_dir(&root, opts);
        Ok(Self { root, root_str, data })
    }

    pub(super) fn server(&self, name: &str, value: &Json) -> EntryResult {
        let fields = entry_object(value)?;
        let kind = match field(fields, "type") {
            None => return Err("\"type\" is required: one of \"stdio\", \"streamable-http\", \"sse\"".into()),
            Some(Json::String(kind)) => kind.as_str(),
            Some(other) => return Err(format!("\"type\" must be a string, found {}", other.describe())),
        };
        const STDIO: &[&str] = &["type", "command", "args", "env", "cwd"];
        const REMOTE: &[&str] = &["type", "url", "headers"];
        let (allowed, other_fields, other_variant) = match kind {
            "stdio" => (STDIO, REMOTE, "the streamable-http and sse variants"),
            "streamable-http" | "sse" => (REMOTE, STDIO, "the stdio variant"),
            other => return Err(format!("unknown type {other:?}: expected \"stdio\", \"streamable-http\" or \"sse\"")),
        };
        for (key, _) in fields {
            if !allowed.contains(&key.as_str()) {
                return Err(if other_fields.contains(&key.as_str()) {
                    format!("field {key:?} belongs to {other_variant}, not to type {kind:?}")
                } else {
                    format!("unknown field {key:?} for type {kind:?}")
                });
            }
        }
        if kind == "stdio" {
            self.stdio_server(name, fields).map(Some)
        } else {
            let url = required_string(fields, "url")?;
            let url = parse_remote_url(url).map_err(|reason| format!("url {}: {reason}", redact_url(url)))?;
            let headers = header_map(fields)?;
            let name = name.to_owned();
            Ok(Some(if kind == "sse" {
                ServerSpec::Sse { name, url, headers, oauth: None }
            } else {
                ServerSpec::StreamableHttp { name, url, headers, oauth: None }
            }))
        }
    }

    fn stdio_server(&self, name: &str, fields: &[(String, Json)]) -> Result<ServerSpec, String> {
        let program = self.resolve_command(required_string(fields, "command")?)?;
        let args = string_array(fields, "args")?;
        let env = env_map(fields)?;
        for (key, _) in &env {
            let reserved = |r: &str| {
                if cfg!(windows) {
                    key.eq_ignore_ascii_case(r)
                } else {
                    key == r
                }
            };
            if reserved(PLUGIN_ROOT) || reserved(PLUGIN_DATA) {
                return Err(format!("env must not set {key}: the host sets PLUGIN_ROOT and PLUGIN_DATA itself"));
            }
        }
        let cwd = optional_string(fields, "cwd")?;
        let (data, data_str) = self.data.as_ref().map_err(Clone::clone)?;
        let expand = |s: &str| expand_placeholders(s, &self.root_str, data_str);
        let cwd = match cwd {
            None => self.root.clone(),
            Some(raw) => self.resolve_cwd(raw, &expand(raw), data)?,
        };
        let args = args.iter().map(|a| expand(a)).collect();
        let mut env: Vec<(String, String)> = env.into_iter().map(|(k, v)| (k, expand(&v))).collect();
        // Last, so they override anything before them.
        env.push((PLUGIN_ROOT.into(), self.root_str.clone()));
        env.push((PLUGIN_DATA.into(), data_str.clone()));
        Ok(ServerSpec::Stdio { name: name.to_owned(), program, args, env, cwd: Some(cwd) })
    }

    /// A bare name stays as is (PATH lookup at spawn); `./rel` must be a file inside the root.
    fn resolve_command(&self, command: &str) -> Result<String, String> {
        if command.chars().any(char::is_whitespace) {
            return Err("command must be a single token (no spaces); use args".into());
        }
        if command.contains(ROOT_PLACEHOLDER) || command.contains(DATA_PLACEHOLDER) {
            return Err(format!(
                "command {command:?}: placeholders are not expanded in command; \
                 use a ./relative path for an executable in the plugin"
            ));
        }
        let Some(relative) = command.strip_prefix("./") else {
            if command.chars().any(std::path::is_separator) {
                return Err(format!(
                    "command {command:?} must be a bare name (found on PATH) or a ./relative \
                     path inside the plugin"
                ));
            }
            return Ok(command.to_owned());
        };
        let path = lexical_normal(&self.root.join(relative));
        if !path.starts_with(&self.root) {
            return Err(format!("command {command:?} escapes the plugin root"));
        }
        let real = path.canonicalize().map_err(|e| format!("command {command:?} is not in the plugin ({e})"))?;
        if !real.starts_with(&self.root) {
            return Err(format!("command {command:?} resolves outside the plugin root (through a symlink)"));
        }
        if !real.is_file() {
            return Err(format!("command {command:?} is not a file"));
        }
        // The unresolved path keeps argv[0] as the plugin named it (multi-call binaries care).
        path_str(&path)
    }

    /// `cwd` must be `./...`, `${PLUGIN_ROOT}[/...]` or `${PLUGIN_DATA}[/...]` and stay inside.
    fn resolve_cwd(&self, raw: &str, expanded: &str, data: &Path) -> Result<PathBuf, String> {
        let rooted = |placeholder: &str| {
            raw.strip_prefix(placeholder).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        let (base, base_name) = if raw.starts_with("./") || rooted(ROOT_PLACEHOLDER) {
            (self.root.as_path(), "the plugin root")
        } else if rooted(DATA_PLACEHOLDER) {
            (data, "the plugin data directory")
        } else {
            return Err(format!("cwd {raw:?} must start with ./, ${{PLUGIN_ROOT}} or ${{PLUGIN_DATA}}"));
        };
        let path = lexical_normal(&self.root.join(expanded));
        if !path.starts_with(base) {
            return Err(format!("cwd {raw:?} escapes {base_name}"));
        }
        let real = path.canonicalize().map_err(|e| format!("cwd {raw:?} does not exist ({e})"))?;
        if !real.starts_with(base) {
            return Err(format!("cwd {raw:?} resolves outside {base_name} (through a symlink)"));
        }
        if !real.is_dir() {
            return Err(format!("cwd {raw:?} is not a directory"));
        }
        Ok(real)
    }
}

/// Creates the data directory and resolves it; a failure only invalidates stdio entries.
fn prepare_data_dir(root: &Path, opts: &LoadOptions) -> Result<(PathBuf, String), String> {
    let dir = match &opts.plugin_data_dir {
        Some(dir) => dir.clone(),
        None => default_plugin_data_dir(root).ok_or(
            "no plugin data directory: the user data directory is unknown; \
             configure one for ${PLUGIN_DATA}",
        )?,
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create the plugin data directory {}: {e}", dir.display()))?;
    let dir =
        dir.canonicalize().map_err(|e| format!("cannot resolve the plugin data directory {}: {e}", dir.display()))?;
    let dir_str = path_str(&dir)?;
    Ok((dir, dir_str))
}

fn read_plugin_manifest(dir: &Path) -> Option<Vec<(String, Json)>> {
    let text = std::fs::read_to_string(dir.join("plugin.json")).ok()?;
    match serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(&text)).ok()? {
        Json::Object(fields) => Some(fields),
        _ => None,
    }
}

/// Replaces `${PLUGIN_ROOT}` and `${PLUGIN_DATA}` in one pass; inserted text is not rescanned and
/// any other `${...}` stays literal.
pub(super) fn expand_placeholders(text: &str, root: &str, data: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix(ROOT_PLACEHOLDER) {
            out.push_str(root);
            rest = after;
        } else if let Some(after) = tail.strip_prefix(DATA_PLACEHOLDER) {
            out.push_str(data);
            rest = after;
        } else {
            out.push_str("${");
            rest = &tail[2..];
        }
    }
    out.push_str(rest);
    out
}

/// Resolves `.` and `..` without touching the file system (`..` at `/` stays at `/`).
fn lexical_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn path_str(path: &Path) -> Result<String, String> {
    path.to_str().map(str::to_owned).ok_or_else(|| format!("path {} is not valid UTF-8", path.display()))
}
