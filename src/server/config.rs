//! How to reach a server: the resolved model every config format and CLI flag turns into.
//!
//! Three config file formats are understood, told apart by their content (see [`load_config`]):
//! - **Agent Plugins `mcp.json` 1.0**: `mcp.json` at the root of a plugin (a directory with
//!   `plugin.json`) or any file whose `$schema` is the Agent Plugins MCP schema. Closed variants,
//!   plugin-relative commands, `${PLUGIN_ROOT}` / `${PLUGIN_DATA}` placeholders.
//! - **Desktop chat client**: `{"mcpServers": {"name": {"command", ...} | {"url", ...}}}`.
//! - **VS Code**: `{"servers": {"name": {"type": "stdio" | "http" | "sse", ...}}, "inputs": [...]}`.
//!
//! A file that cannot be read or has an unknown shape fails as a whole; a bad server entry is
//! reported as an [`EntryError`] and skipped, so the other servers still load.

use std::collections::HashSet;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// The `$schema` of an Agent Plugins 1.0.0 `mcp.json`, the only version this host implements.
pub const AGENT_PLUGINS_MCP_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json";
const AGENT_PLUGINS_SCHEMA_PREFIX: &str = "https://agent-plugins.org/schemas/";
const AGENT_PLUGINS_VERSION: &str = "1.0.0";
const PLUGIN_ROOT: &str = "PLUGIN_ROOT";
const PLUGIN_DATA: &str = "PLUGIN_DATA";
const ROOT_PLACEHOLDER: &str = "${PLUGIN_ROOT}";
const DATA_PLACEHOLDER: &str = "${PLUGIN_DATA}";

/// One MCP server the host should connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerSpec {
    /// A local process speaking MCP on stdin/stdout.
    Stdio {
        /// Display name.
        name: String,
        /// The executable: a bare name (looked up on `PATH` at spawn time) or a path.
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables set on top of the host's own, in order (later wins).
        env: Vec<(String, String)>,
        /// The working directory; `None` = the host's.
        cwd: Option<PathBuf>,
    },
    /// A remote server speaking MCP over Streamable HTTP.
    StreamableHttp {
        /// Display name.
        name: String,
        /// The MCP endpoint.
        url: url::Url,
        /// Extra request headers, names unique ignoring case.
        headers: Vec<(String, String)>,
        /// A client pre-registered with its authorization server (the config's `oauth`).
        oauth: Option<OAuthClient>,
    },
    /// A remote server speaking the legacy (2024-11-05) HTTP+SSE transport.
    Sse {
        /// Display name.
        name: String,
        /// The SSE endpoint.
        url: url::Url,
        /// Extra request headers, names unique ignoring case.
        headers: Vec<(String, String)>,
        /// A client pre-registered with its authorization server (the config's `oauth`).
        oauth: Option<OAuthClient>,
    },
    /// A server compiled into this host, run in-process (e.g. `demo`).
    Builtin {
        /// Its name (see [`crate::demo::builtin`]).
        name: String,
    },
}

/// A client registered beforehand with a remote server's authorization server: the config
/// entry's `"oauth": {"clientId": "...", "clientSecret": "..."}` (secret optional).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthClient {
    /// The client id.
    pub client_id: String,
    /// The client secret, for confidential clients.
    pub client_secret: Option<String>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "[REDACTED]"))
            .finish()
    }
}

impl ServerSpec {
    /// A built-in, in-process server by name.
    pub fn builtin(name: impl Into<String>) -> Self {
        Self::Builtin { name: name.into() }
    }

    /// Parses a `--stdio "<command line>"` value with POSIX shell quoting (no expansion, no shell).
    pub fn from_command_line(command_line: &str) -> Result<Self> {
        let words = shell_words::split(command_line)
            .map_err(|e| Error::BadCommand { command: command_line.to_owned(), reason: e.to_string() })?;
        let mut words = words.into_iter();
        let program = words
            .next()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| Error::BadCommand { command: command_line.to_owned(), reason: "it is empty".into() })?;
        let args: Vec<String> = words.collect();
        let name = display_name(&program, &args);
        Ok(Self::Stdio { name, program, args, env: Vec::new(), cwd: None })
    }

    /// Parses a `--url` value and its `--header "Name: value"` lines.
    ///
    /// The URL must be absolute `http`/`https` without userinfo or fragment, and `https` unless
    /// the host is `localhost` or a loopback IP. A URL whose path ends in `/sse` is taken as the
    /// legacy HTTP+SSE transport, any other as Streamable HTTP.
    pub fn from_url(url: &str, headers: &[String]) -> Result<Self> {
        let parsed = parse_remote_url(url).map_err(|reason| Error::BadUrl { url: redact_url(url), reason })?;
        let headers = parse_header_lines(headers)?;
        let name = url_display_name(&parsed);
        Ok(if url_looks_like_sse(&parsed) {
            Self::Sse { name, url: parsed, headers, oauth: None }
        } else {
            Self::StreamableHttp { name, url: parsed, headers, oauth: None }
        })
    }

    /// The display name.
    pub fn name(&self) -> &str {
        match self {
            Self::Stdio { name, .. }
            | Self::StreamableHttp { name, .. }
            | Self::Sse { name, .. }
            | Self::Builtin { name } => name,
        }
    }

    /// The same server under another name (a registry's unique name for it: what its
    /// requests to the host, sampling and elicitation, are known by). A built-in server keeps
    /// its name.
    pub fn named(&self, new: &str) -> Self {
        let mut spec = self.clone();
        match &mut spec {
            Self::Stdio { name, .. } | Self::StreamableHttp { name, .. } | Self::Sse { name, .. } => {
                *name = new.to_owned();
            }
            // A built-in server's name says which built-in it is.
            Self::Builtin { .. } => {}
        }
        spec
    }

    /// Whether the name is only what the host made up from the command line or URL (as
    /// [`ServerSpec::from_command_line`] and [`ServerSpec::from_url`] name servers), not one a
    /// person gave (a config file's key, an embedder's name, a built-in server's). A made-up
    /// name such as `index` (for `node dist/index.js`) gives way to the server's own name once
    /// it is connected (see [`crate::server::registry::Registry::label`]). A key written the same
    /// as the made-up name says no more than the command line, so it counts as made up too.
    pub fn name_is_derived(&self) -> bool {
        match self {
            Self::Stdio { name, program, args, .. } => *name == display_name(program, args),
            Self::StreamableHttp { name, url, .. } | Self::Sse { name, url, .. } => *name == url_display_name(url),
            Self::Builtin { .. } => false,
        }
    }

    /// A stable identity of the server (what its sandbox origin is derived from).
    pub fn identity(&self) -> String {
        match self {
            Self::Stdio { program, args, .. } => {
                format!("stdio:{}", shell_words::join(std::iter::once(program).chain(args)))
            }
            Self::StreamableHttp { url, .. } => format!("http:{url}"),
            Self::Sse { url, .. } => format!("sse:{url}"),
            Self::Builtin { name } => format!("builtin:{name}"),
        }
    }
}

/// The file name (without `.exe`) of the small binary that serves the host's built-in MCP
/// servers (`mcp-apps-host-server probe|demo`, see `cli::builtin_server_main`).
pub(crate) const BUILTIN_SERVER_BIN: &str = "mcp-apps-host-server";

/// A short name for a command: the script for interpreters (`node server.mjs` -> `server`),
/// the package for runners (`npx -y @scope/pkg` -> `@scope/pkg`), else the program's file name.
fn display_name(program: &str, args: &[String]) -> String {
    let base = |p: &str| {
        let path = std::path::Path::new(p);
        path.file_stem()
            .or_else(|| path.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.to_owned())
    };
    // A host's own built-in server (`mcp-apps-host __demo-server`, `mcp-apps-host-server demo`)
    // is named after what it serves.
    if let Some(builtin) = args.first().and_then(|a| a.strip_prefix("__")) {
        return builtin.to_owned();
    }
    let program_name = base(program);
    if program_name == BUILTIN_SERVER_BIN {
        if let [name] = args {
            return format!("{name}-server");
        }
    }
    let runners = ["node", "nodejs", "deno", "bun", "python", "python3", "uv", "uvx", "npx", "pnpm", "yarn"];
    if runners.contains(&program_name.as_str()) {
        if let Some(first) = args.iter().find(|a| !a.starts_with('-') && *a != "run") {
            return if first.starts_with('@') { first.clone() } else { base(first) };
        }
    }
    program_name
}

/// `host[:port]` of a remote server, its default display name.
fn url_display_name(url: &url::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

fn url_looks_like_sse(url: &url::Url) -> bool {
    url.path().trim_end_matches('/').ends_with("/sse")
}

/// Checks a remote server URL: absolute http(s), no userinfo, no fragment, https unless loopback.
pub(crate) fn parse_remote_url(raw: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(raw).map_err(|e| match e {
        url::ParseError::RelativeUrlWithoutBase => "it must be an absolute http:// or https:// URL".to_owned(),
        other => format!("it is not a valid URL ({other})"),
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "scheme `{}` is not supported; use https:// (or http:// for a loopback host)",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("it has no host".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("it must not contain a user name or password (user:pass@); send credentials in a header".into());
    }
    if url.fragment().is_some() {
        return Err("it must not contain a fragment (#...)".into());
    }
    if url.scheme() == "http" && !is_loopback(&url) {
        return Err("plain http:// is allowed only for localhost or a loopback IP \
                    (127.0.0.0/8, [::1]); use https://"
            .into());
    }
    Ok(url)
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The URL as it may be shown in an error: without a password or user name in it.
fn redact_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut url) if !url.username().is_empty() || url.password().is_some() => {
            // Both setters only fail for URLs that cannot carry userinfo, which this one does.
            let _ = url.set_password(None);
            let _ = url.set_username("");
            url.to_string()
        }
        _ => raw.to_owned(),
    }
}

/// Parses `--header "Name: value"` lines. Errors never show a header value (it may be a secret).
fn parse_header_lines(lines: &[String]) -> Result<Vec<(String, String)>> {
    let mut headers: Vec<(String, String)> = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let bad = |header: String, reason: String| Error::BadHeader { header, reason };
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad(format!("#{}", index + 1), "expected `Name: value` (no `:` found)".into()));
        };
        check_header_name(name).map_err(|reason| bad(format!("#{}", index + 1), reason))?;
        let value = value.trim_matches([' ', '\t']);
        check_header_value(name, value).map_err(|reason| bad(name.to_owned(), reason))?;
        check_header_unique(&headers, name).map_err(|reason| bad(name.to_owned(), reason))?;
        headers.push((name.to_owned(), value.to_owned()));
    }
    Ok(headers)
}

/// RFC 9110 `token`: what a field name may be made of.
fn check_header_name(name: &str) -> Result<(), String> {
    let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() {
        return Err("the header name is empty".into());
    }
    if !name.chars().all(tchar) {
        return Err(format!(
            "header name {name:?} is not a valid HTTP field name \
             (letters, digits and !#$%&'*+-.^_`|~ only)"
        ));
    }
    Ok(())
}

/// RFC 9110 `field-value`: no control characters (CR, LF, NUL...). The value is never echoed.
fn check_header_value(name: &str, value: &str) -> Result<(), String> {
    if value.chars().any(|c| c.is_ascii_control() && c != '\t') {
        return Err(format!("the value of header {name:?} contains a control character (CR, LF, NUL...)"));
    }
    Ok(())
}

fn check_header_unique(seen: &[(String, String)], name: &str) -> Result<(), String> {
    match seen.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
        Some((first, _)) if first == name => Err(format!("header {name:?} is given twice")),
        Some((first, _)) => {
            Err(format!("header {name:?} repeats {first:?} with different case; HTTP field names ignore case"))
        }
        None => Ok(()),
    }
}

/// `<user config dir>/mcp-apps-host/mcp.json`, e.g. `~/.config/mcp-apps-host/mcp.json` on Linux.
pub fn default_config_path() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|dirs| dirs.config_dir().join("mcp-apps-host").join("mcp.json"))
}

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

/// Options for [`load_config`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LoadOptions {
    /// The `${PLUGIN_DATA}` directory of an Agent Plugin (created if missing);
    /// `None` = [`default_plugin_data_dir`].
    pub plugin_data_dir: Option<PathBuf>,
}

impl LoadOptions {
    /// Default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the `${PLUGIN_DATA}` directory used for an Agent Plugins `mcp.json`.
    pub fn plugin_data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.plugin_data_dir = Some(dir.into());
        self
    }
}

/// Which format a config file was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigFormat {
    /// Agent Plugins `mcp.json` 1.0.
    AgentPlugin,
    /// A desktop chat client's `{"mcpServers": ...}`.
    DesktopClient,
    /// VS Code's `{"servers": ...}`.
    VsCode,
}

/// What a config file resolved to: the servers that passed every rule, and one error per entry
/// that did not.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigLoad {
    /// The format the file was read as.
    pub format: ConfigFormat,
    /// The valid servers, in file order.
    pub servers: Vec<ServerSpec>,
    /// The skipped entries and why.
    pub errors: Vec<EntryError>,
    /// The host's own `model` section (desktop client and Agent Plugins formats).
    pub model: Option<ModelConfig>,
}

/// A server entry that was skipped, with the rule it broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server {entry:?} in {}: {rule}", path.display())]
#[non_exhaustive]
pub struct EntryError {
    /// The config file.
    pub path: PathBuf,
    /// The server's name (its key in the file).
    pub entry: String,
    /// The rule it broke, human-readable.
    pub rule: String,
}

/// Reads one config file. The format is detected from its content and location:
/// - Agent Plugins when the file is `mcp.json` next to a `plugin.json`, or its `$schema` is an
///   Agent Plugins MCP schema;
/// - VS Code when it has a top-level `servers` object;
/// - the desktop client format when it has a top-level `mcpServers` object.
///
/// Fails if the file cannot be read, is not JSON, or its top level breaks its format's rules.
/// Individual bad entries are collected in [`ConfigLoad::errors`].
pub fn load_config(path: &Path, opts: &LoadOptions) -> Result<ConfigLoad> {
    let fail = |reason: String| Error::Config { path: path.to_owned(), reason };
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
    // Editors on Windows like to start JSON with a byte order mark; serde_json does not.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let doc: Json = serde_json::from_str(text).map_err(|e| fail(format!("it is not valid JSON: {e}")))?;
    let Json::Object(top) = doc else {
        return Err(fail(format!(
            "the top level is {}, expected an object with \"mcpServers\" or \"servers\"",
            doc.kind()
        )));
    };
    if let Some(key) = duplicate_key(&top) {
        return Err(fail(format!("top-level key {key:?} appears twice")));
    }

    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let in_plugin = path.file_name().is_some_and(|n| n == "mcp.json") && dir.join("plugin.json").is_file();
    let agent_schema = matches!(
        field(&top, "$schema"),
        Some(Json::String(s)) if s.starts_with(AGENT_PLUGINS_SCHEMA_PREFIX)
    );
    let mut entries = Entries { path, names: HashSet::new(), servers: Vec::new(), errors: Vec::new() };
    let format = if in_plugin || agent_schema {
        let plugin = AgentPlugin::open(dir, &top, opts).map_err(fail)?;
        for (name, value) in object_field(&top, "mcpServers").map_err(fail)? {
            entries.add(name, plugin.server(name, value));
        }
        ConfigFormat::AgentPlugin
    } else if field(&top, "servers").is_some() {
        if field(&top, "mcpServers").is_some() {
            return Err(fail(
                "it has both \"servers\" (VS Code) and \"mcpServers\" (desktop client); \
                 keep one"
                    .into(),
            ));
        }
        if let Some((key, _)) = top.iter().find(|(k, _)| !matches!(k.as_str(), "servers" | "inputs" | "$schema")) {
            if key == "model" {
                return Err(fail(
                    "a VS Code MCP config has no \"model\": put it in a desktop-format file ({\"mcpServers\": ...})"
                        .into(),
                ));
            }
            return Err(fail(format!(
                "unknown top-level key {key:?}: a VS Code MCP config has only \"servers\" and \"inputs\""
            )));
        }
        for (name, value) in object_field(&top, "servers").map_err(fail)? {
            entries.add(name, vscode_server(name, value));
        }
        ConfigFormat::VsCode
    } else if field(&top, "mcpServers").is_some() {
        // The desktop client's file also holds its other settings: other keys are not ours.
        for (name, value) in object_field(&top, "mcpServers").map_err(fail)? {
            entries.add(name, desktop_server(name, value));
        }
        ConfigFormat::DesktopClient
    } else {
        return Err(fail(
            "no \"mcpServers\" or \"servers\" object: not an MCP server config this host knows \
             (Agent Plugins mcp.json, desktop client mcpServers, VS Code servers)"
                .into(),
        ));
    };
    let model = match format {
        ConfigFormat::VsCode => None,
        _ => model_section::model_section(&top, dir).map_err(fail)?,
    };
    Ok(ConfigLoad { format, servers: entries.servers, errors: entries.errors, model })
}

/// What an entry resolved to: a server, nothing (disabled on purpose), or the rule it broke.
type EntryResult = Result<Option<ServerSpec>, String>;

/// Collects servers and entry errors, enforcing unique names.
struct Entries<'a> {
    path: &'a Path,
    names: HashSet<String>,
    servers: Vec<ServerSpec>,
    errors: Vec<EntryError>,
}

impl Entries<'_> {
    fn add(&mut self, name: &str, resolved: EntryResult) {
        let resolved = if name.trim().is_empty() {
            Err("the server name must not be empty".into())
        } else if !self.names.insert(name.to_owned()) {
            Err("a server with this name is already defined earlier in the file; names must be unique".into())
        } else {
            resolved
        };
        match resolved {
            Ok(Some(spec)) => self.servers.push(spec),
            Ok(None) => {}
            Err(rule) => self.errors.push(EntryError { path: self.path.to_owned(), entry: name.to_owned(), rule }),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Agent Plugins mcp.json 1.0

/// The resolved places of one plugin: its root and its data directory (created when the file is
/// opened; if that fails, only the stdio entries, which need it, are invalid).
struct AgentPlugin {
    root: PathBuf,
    root_str: String,
    data: Result<(PathBuf, String), String>,
}

impl AgentPlugin {
    /// Checks the top level (the whole file is disabled if it is wrong) and resolves the root.
    fn open(dir: &Path, top: &[(String, Json)], opts: &LoadOptions) -> Result<Self, String> {
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

    fn server(&self, name: &str, value: &Json) -> EntryResult {
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
fn expand_placeholders(text: &str, root: &str, data: &str) -> String {
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

// ---------------------------------------------------------------------------------------------
// Desktop chat client and VS Code

/// `{"command", "args"?, "env"?, "cwd"?}` or `{"url", "headers"?, "type"?}`; other fields are
/// the client's own (`disabled`, `autoApprove`, ...) and ignored, except `"disabled": true`.
fn desktop_server(name: &str, value: &Json) -> EntryResult {
    let fields = entry_object(value)?;
    match field(fields, "disabled") {
        None | Some(Json::Bool(false)) => {}
        Some(Json::Bool(true)) => return Ok(None),
        Some(other) => return Err(format!("\"disabled\" must be true or false, found {}", other.describe())),
    }
    let kind = optional_string(fields, "type")?;
    match (field(fields, "command"), field(fields, "url")) {
        (Some(_), Some(_)) => {
            Err("it has both \"command\" and \"url\"; a server is either local (command) or remote (url)".into())
        }
        (Some(_), None) => {
            if let Some(kind) = kind.filter(|k| *k != "stdio") {
                return Err(format!("type {kind:?} does not fit a server with a \"command\""));
            }
            reject_fields(fields, &["headers"], "a server with a \"command\"")?;
            local_server(name, fields).map(Some)
        }
        (None, Some(_)) => {
            reject_fields(fields, &["args", "env", "cwd"], "a server with a \"url\"")?;
            let sse = match kind {
                Some("sse") => Some(true),
                Some("http" | "streamable-http") => Some(false),
                None => None,
                Some(other) => {
                    return Err(format!(
                        "unknown type {other:?} for a server with a \"url\": expected \"http\", \
                         \"streamable-http\" or \"sse\""
                    ))
                }
            };
            remote_server(name, fields, sse).map(Some)
        }
        (None, None) => Err("it needs either \"command\" (a local server) or \"url\" (a remote server)".into()),
    }
}

/// `{"type": "stdio" | "http" | "sse", ...}`; `${env:...}` and friends stay literal.
fn vscode_server(name: &str, value: &Json) -> EntryResult {
    let fields = entry_object(value)?;
    if value.contains_text("${input:") {
        return Err("input variables (${input:...}) are not supported; write the value into the file \
             or the server's env"
            .into());
    }
    if field(fields, "envFile").is_some() {
        return Err("\"envFile\" is not supported; list the variables in \"env\"".into());
    }
    let kind = match optional_string(fields, "type")? {
        Some(kind) => kind,
        None if field(fields, "command").is_some() => "stdio",
        None if field(fields, "url").is_some() => "http",
        None => {
            return Err("it needs \"type\": \"stdio\" with a \"command\", or \"http\" / \"sse\" with a \"url\"".into())
        }
    };
    match kind {
        "stdio" => {
            reject_fields(fields, &["url", "headers"], "a stdio server")?;
            local_server(name, fields).map(Some)
        }
        "http" | "sse" => {
            reject_fields(fields, &["command", "args", "env", "cwd"], "an http or sse server")?;
            remote_server(name, fields, Some(kind == "sse")).map(Some)
        }
        other => Err(format!("unknown type {other:?}: expected \"stdio\", \"http\" or \"sse\"")),
    }
}

/// A stdio server as written (no placeholder expansion, the command used verbatim).
fn local_server(name: &str, fields: &[(String, Json)]) -> Result<ServerSpec, String> {
    Ok(ServerSpec::Stdio {
        name: name.to_owned(),
        program: required_string(fields, "command")?.to_owned(),
        args: string_array(fields, "args")?,
        env: env_map(fields)?,
        cwd: optional_string(fields, "cwd")?.map(PathBuf::from),
    })
}

/// `sse`: `None` = decide by the URL (a path ending in `/sse` is the legacy SSE transport).
fn remote_server(name: &str, fields: &[(String, Json)], sse: Option<bool>) -> Result<ServerSpec, String> {
    let raw = required_string(fields, "url")?;
    let url = parse_remote_url(raw).map_err(|reason| format!("url {}: {reason}", redact_url(raw)))?;
    let headers = header_map(fields)?;
    let oauth = oauth_client(fields)?;
    let name = name.to_owned();
    Ok(if sse.unwrap_or_else(|| url_looks_like_sse(&url)) {
        ServerSpec::Sse { name, url, headers, oauth }
    } else {
        ServerSpec::StreamableHttp { name, url, headers, oauth }
    })
}

/// `"oauth": {"clientId": "...", "clientSecret"?: "..."}`: a pre-registered client.
fn oauth_client(fields: &[(String, Json)]) -> Result<Option<OAuthClient>, String> {
    let inner = match field(fields, "oauth") {
        None => return Ok(None),
        Some(Json::Object(inner)) => inner,
        Some(other) => return Err(format!("\"oauth\" must be an object, found {}", other.describe())),
    };
    if let Some((key, _)) = inner.iter().find(|(k, _)| k != "clientId" && k != "clientSecret") {
        return Err(format!("\"oauth\" has unknown field {key:?} (expected \"clientId\", \"clientSecret\")"));
    }
    let client_id = required_string(inner, "clientId").map_err(|e| format!("\"oauth\": {e}"))?.to_owned();
    let client_secret =
        optional_string(inner, "clientSecret").map_err(|e| format!("\"oauth\": {e}"))?.map(str::to_owned);
    Ok(Some(OAuthClient { client_id, client_secret }))
}

fn reject_fields(fields: &[(String, Json)], keys: &[&str], what: &str) -> Result<(), String> {
    match fields.iter().find(|(k, _)| keys.contains(&k.as_str())) {
        Some((key, _)) => Err(format!("field {key:?} does not apply to {what}")),
        None => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------------
// Field readers: each error names the field and says what was expected.

fn entry_object(value: &Json) -> Result<&[(String, Json)], String> {
    let Json::Object(fields) = value else {
        return Err(format!("the entry must be an object, found {}", value.describe()));
    };
    if let Some(key) = duplicate_key(fields) {
        return Err(format!("field {key:?} appears twice"));
    }
    Ok(fields)
}

fn field<'a>(fields: &'a [(String, Json)], key: &str) -> Option<&'a Json> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn duplicate_key(fields: &[(String, Json)]) -> Option<&str> {
    let mut seen = HashSet::new();
    fields.iter().map(|(k, _)| k.as_str()).find(|k| !seen.insert(*k))
}

fn object_field<'a>(fields: &'a [(String, Json)], key: &str) -> Result<Vec<(&'a str, &'a Json)>, String> {
    match field(fields, key) {
        Some(Json::Object(entries)) => Ok(entries.iter().map(|(k, v)| (k.as_str(), v)).collect()),
        Some(other) => Err(format!("{key:?} must be an object, found {}", other.describe())),
        None => Err(format!("{key:?} is required")),
    }
}

fn optional_string<'a>(fields: &'a [(String, Json)], key: &str) -> Result<Option<&'a str>, String> {
    match field(fields, key) {
        None => Ok(None),
        Some(Json::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("{key:?} must be a string, found {}", other.describe())),
    }
}

fn required_string<'a>(fields: &'a [(String, Json)], key: &str) -> Result<&'a str, String> {
    match optional_string(fields, key)? {
        Some("") => Err(format!("{key:?} must not be empty")),
        Some(s) => Ok(s),
        None => Err(format!("{key:?} is required")),
    }
}

fn string_array(fields: &[(String, Json)], key: &str) -> Result<Vec<String>, String> {
    match field(fields, key) {
        None => Ok(Vec::new()),
        Some(Json::Array(items)) => items
            .iter()
            .map(|item| match item {
                Json::String(s) => Ok(s.clone()),
                other => Err(format!("{key:?} must be an array of strings, found {} in it", other.describe())),
            })
            .collect(),
        Some(other) => Err(format!("{key:?} must be an array of strings, found {}", other.describe())),
    }
}

fn string_map(fields: &[(String, Json)], key: &str) -> Result<Vec<(String, String)>, String> {
    let entries = match field(fields, key) {
        None => return Ok(Vec::new()),
        Some(Json::Object(entries)) => entries,
        Some(other) => return Err(format!("{key:?} must be an object of strings, found {}", other.describe())),
    };
    if let Some(dup) = duplicate_key(entries) {
        return Err(format!("{key:?} has {dup:?} twice"));
    }
    entries
        .iter()
        .map(|(k, v)| match v {
            Json::String(s) => Ok((k.clone(), s.clone())),
            other => Err(format!("{key:?}: the value of {k:?} must be a string, found {}", other.describe())),
        })
        .collect()
}

/// `env`: names a process can carry (non-empty, no `=`, no NUL), values without NUL.
fn env_map(fields: &[(String, Json)]) -> Result<Vec<(String, String)>, String> {
    let env = string_map(fields, "env")?;
    for (key, value) in &env {
        if key.is_empty() || key.contains('=') || key.contains('\0') {
            return Err(format!("env name {key:?} is not usable: it must be non-empty without '=' or NUL"));
        }
        if value.contains('\0') {
            return Err(format!("env {key:?}: the value contains a NUL character"));
        }
    }
    Ok(env)
}

/// `headers`: valid HTTP fields, names unique ignoring case. Values are never echoed in errors.
fn header_map(fields: &[(String, Json)]) -> Result<Vec<(String, String)>, String> {
    let mut headers: Vec<(String, String)> = Vec::new();
    for (name, value) in string_map(fields, "headers")? {
        check_header_name(&name)?;
        check_header_value(&name, &value)?;
        if value.trim_matches([' ', '\t']) != value {
            return Err(format!("the value of header {name:?} has leading or trailing whitespace"));
        }
        check_header_unique(&headers, &name)?;
        headers.push((name, value));
    }
    Ok(headers)
}

// ---------------------------------------------------------------------------------------------

/// A JSON value that keeps object keys in file order with duplicates (serde_json's `Value` keeps
/// neither), so a repeated server name or header is seen instead of silently overwritten.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number,
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn kind(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "a boolean",
            Self::Number => "a number",
            Self::String(_) => "a string",
            Self::Array(_) => "an array",
            Self::Object(_) => "an object",
        }
    }

    /// The kind, with the text when it is a short string (for "expected X, found Y").
    fn describe(&self) -> String {
        match self {
            Self::String(s) if s.len() <= 80 => format!("the string {s:?}"),
            other => other.kind().to_owned(),
        }
    }

    /// Whether any string in it (keys included) contains `needle`.
    fn contains_text(&self, needle: &str) -> bool {
        match self {
            Self::String(s) => s.contains(needle),
            Self::Array(items) => items.iter().any(|i| i.contains_text(needle)),
            Self::Object(fields) => fields.iter().any(|(k, v)| k.contains(needle) || v.contains_text(needle)),
            Self::Null | Self::Bool(_) | Self::Number => false,
        }
    }
}

impl<'de> serde::Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> serde::de::Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Json, E> {
        Ok(Json::Number)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Json, E> {
        Ok(Json::Number)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Json, E> {
        Ok(Json::Number)
    }

    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut fields = Vec::new();
        while let Some(entry) = map.next_entry::<String, Json>()? {
            fields.push(entry);
        }
        Ok(Json::Object(fields))
    }
}

mod model_section;
pub use model_section::ModelConfig;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod naming_tests {
    use super::*;

    #[test]
    fn only_made_up_names_are_derived() {
        assert!(ServerSpec::from_command_line("node dist/index.js").unwrap().name_is_derived());
        assert!(ServerSpec::from_url("https://example.com/mcp", &[]).unwrap().name_is_derived());
        assert!(!ServerSpec::builtin("demo").name_is_derived());
        let keyed = ServerSpec::Stdio {
            name: "weather".into(),
            program: "node".into(),
            args: vec!["dist/index.js".into()],
            env: Vec::new(),
            cwd: None,
        };
        assert!(!keyed.name_is_derived(), "a config key is the person's name for the server");
    }
}
