//! The resolved model every config format and CLI flag turns into: [`ServerSpec`], its names
//! and identity, and the checks of a remote URL and its header lines.

use std::path::PathBuf;

use super::BUILTIN_SERVER_BIN;
use crate::error::{Error, Result};

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

    /// The same server under another name (a server set's unique name for it: what its
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
    /// person gave (a config file's key, an embedder's name, a built-in server's). A key written
    /// the same as the made-up name says no more than the command line, so it counts as made up
    /// too. Either way the name stands as the server's label: a server may not rename itself
    /// (see [`crate::server::set::ServerSet::label`]).
    pub fn name_is_derived(&self) -> bool {
        match self {
            Self::Stdio { name, program, args, .. } => *name == display_name(program, args),
            Self::StreamableHttp { name, url, .. } | Self::Sse { name, url, .. } => *name == url_display_name(url),
            Self::Builtin { .. } => false,
        }
    }

    /// The server's identity: what approval modes are remembered by, what the server set and the
    /// servers panel tell servers apart by, and what its sandbox origin is derived from.
    ///
    /// A remote server is its URL (`http:URL`, `sse:URL`). Configured headers do not count:
    /// they say who the host is to the server (a key, an account), not which program answers,
    /// and a rotated key must not make a trusted server a stranger (nor drop its sign-in
    /// tokens, kept by this identity). A stdio server is the program the host would start now:
    /// its command line, the directory it starts in (the entry's `cwd`, made absolute against
    /// the host's own working directory, which is also where a child without `cwd` starts), its
    /// environment (the entry's `env`, later entries winning, sorted and hashed: values may be
    /// secrets) and the executable found for it (through the `PATH` the child gets, then
    /// canonicalized). A relative script (`node notes.mjs`) is the file in that directory, so two
    /// folders, two environments or two executables behind one command line are two servers.
    /// See [`ServerSpec::identity_in`].
    pub fn identity(&self) -> String {
        self.identity_in(&Surroundings::host())
    }

    /// [`ServerSpec::identity`] as it would be for a host in `around` (its working directory and
    /// `PATH`): the same entry in the same surroundings has the same identity in every run.
    pub fn identity_in(&self, around: &Surroundings) -> String {
        match self {
            Self::Stdio { program, args, env, cwd, .. } => {
                let launch = launch(program, env, cwd.as_deref(), around);
                // Every part is written with `{:?}` (quoted, escaped), so no choice of command
                // line, folder or file name can spell another entry's identity. The `{` after
                // `stdio:` also keeps it apart from the command-line-only identities of older
                // versions (a quoted command line never starts with `{`): see `Approvals`.
                format!(
                    "stdio:{{argv:{:?},cwd:{:?},exe:{:?},env:{}}}",
                    std::iter::once(program).chain(args).collect::<Vec<_>>(),
                    launch.dir,
                    launch.exe,
                    env_digest(env)
                )
            }
            Self::StreamableHttp { url, .. } => format!("http:{url}"),
            Self::Sse { url, .. } => format!("sse:{url}"),
            Self::Builtin { name } => format!("builtin:{name}"),
        }
    }

    /// The identity as versions before the program's surroundings counted wrote it: the command
    /// line or URL only. Secret settings are still found by it (the installer stores them from
    /// its own process, whose working directory is not the host's); it must never find an
    /// approval mode (it is ambiguous: one line, any number of programs).
    pub(crate) fn written_identity(&self) -> String {
        match self {
            Self::Stdio { program, args, .. } => {
                format!("stdio:{}", shell_words::join(std::iter::once(program).chain(args)))
            }
            _ => self.identity_in(&Surroundings::default()),
        }
    }
}

/// Where a stdio server starts, and the executable that runs.
struct Launch {
    dir: PathBuf,
    exe: Option<PathBuf>,
}

/// Where the stdio program `program` with `env` and `cwd` starts and which file it is, for a
/// host in `around`.
fn launch(program: &str, env: &[(String, String)], cwd: Option<&std::path::Path>, around: &Surroundings) -> Launch {
    // What `Command::current_dir` does with it: relative to the host's own directory, which is
    // also where a child without `cwd` starts.
    let dir = match (cwd, &around.cwd) {
        (Some(cwd), Some(host)) => host.join(cwd),
        (Some(cwd), None) => cwd.to_owned(),
        (None, host) => host.clone().unwrap_or_default(),
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    // A `PATH` in the entry's env is the one the child's lookup uses (the last one wins).
    let path = env.iter().rev().find(|(k, _)| k == "PATH").map(|(_, v)| std::ffi::OsString::from(v));
    let exe = resolve_program(program, &dir, path.as_deref().or(around.path.as_deref()));
    Launch { exe, dir }
}

/// For each of `specs`, what tells it apart from the others that share its command line, in
/// the person's words (`in /home/a/notes`, `env: FOO`, `other env values`, `runs
/// /usr/bin/node`); `None` for an entry whose command line no other entry has, or that no
/// surrounding tells apart (then it is the same program: one identity).
pub fn tell_apart(specs: &[&ServerSpec], around: &Surroundings) -> Vec<Option<String>> {
    /// What is known of one stdio entry.
    struct Facts<'a> {
        line: String,
        launch: Launch,
        keys: Vec<&'a str>,
        digest: String,
    }
    let facts: Vec<Option<Facts>> = specs
        .iter()
        .map(|spec| {
            let ServerSpec::Stdio { program, env, cwd, .. } = spec else { return None };
            let mut keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
            keys.sort_unstable();
            keys.dedup();
            let launch = launch(program, env, cwd.as_deref(), around);
            Some(Facts { line: spec.written_identity(), launch, keys, digest: env_digest(env) })
        })
        .collect();
    facts
        .iter()
        .enumerate()
        .map(|(i, mine)| {
            let mine = mine.as_ref()?;
            let others: Vec<&Facts> = facts
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .filter_map(|(_, o)| o.as_ref())
                .filter(|o| o.line == mine.line)
                .collect();
            let mut said = Vec::new();
            if others.iter().any(|o| o.launch.dir != mine.launch.dir) {
                said.push(format!("in {}", mine.launch.dir.display()));
            }
            if others.iter().any(|o| o.keys != mine.keys) {
                said.push(match mine.keys.is_empty() {
                    true => "no env".to_owned(),
                    false => format!("env: {}", mine.keys.join(", ")),
                });
            } else if others.iter().any(|o| o.digest != mine.digest) {
                // The same names with other values: the values are not shown (they may be secrets).
                said.push(format!("env: {} (other values)", mine.keys.join(", ")));
            }
            if others.iter().any(|o| o.launch.exe != mine.launch.exe) {
                said.push(match &mine.launch.exe {
                    Some(exe) => format!("runs {}", exe.display()),
                    None => "its program is not found".to_owned(),
                });
            }
            (!said.is_empty()).then(|| said.join(", "))
        })
        .collect()
}

/// Where the host is when it starts a stdio server: its working directory (a child's when its
/// entry names none) and its `PATH` (where a bare program name is looked up).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Surroundings {
    /// The host's working directory.
    pub cwd: Option<PathBuf>,
    /// The host's `PATH`.
    pub path: Option<std::ffi::OsString>,
}

impl Surroundings {
    /// This process's, now.
    pub fn host() -> Self {
        Self { cwd: std::env::current_dir().ok(), path: std::env::var_os("PATH") }
    }

    /// A host in `cwd` with `path` as its `PATH`.
    pub fn new(cwd: impl Into<PathBuf>, path: Option<std::ffi::OsString>) -> Self {
        Self { cwd: Some(cwd.into()), path }
    }
}

/// The executable `program` names for a child starting in `dir` with `path` as its `PATH`, as
/// `execvp` finds it (a name with a `/` is a path, relative to `dir`; else the first executable
/// file on `PATH`, an empty or relative entry taken against `dir`), canonicalized. `None` when
/// there is none (the server will not start; its identity still differs from one that does).
fn resolve_program(program: &str, dir: &std::path::Path, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if program.contains('/') {
        return dir.join(program).canonicalize().ok();
    }
    std::env::split_paths(path?).find_map(|entry| {
        let candidate = dir.join(entry).join(program);
        is_executable_file(&candidate).then(|| candidate.canonicalize().ok()).flatten()
    })
}

fn is_executable_file(path: &std::path::Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else { return false };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// The environment an entry sets, in a canonical form (the last value of each name, sorted by
/// name), hashed: an identity may be logged, and a value may be a secret.
fn env_digest(env: &[(String, String)]) -> String {
    use sha2::Digest;
    let mut last: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
    for (k, v) in env {
        last.insert(k, v);
    }
    let canonical = format!("{:?}", last.into_iter().collect::<Vec<_>>());
    sha2::Sha256::digest(canonical.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

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

pub(super) fn url_looks_like_sse(url: &url::Url) -> bool {
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
pub(super) fn redact_url(raw: &str) -> String {
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
pub(super) fn check_header_name(name: &str) -> Result<(), String> {
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
pub(super) fn check_header_value(name: &str, value: &str) -> Result<(), String> {
    if value.chars().any(|c| c.is_ascii_control() && c != '\t') {
        return Err(format!("the value of header {name:?} contains a control character (CR, LF, NUL...)"));
    }
    Ok(())
}

pub(super) fn check_header_unique(seen: &[(String, String)], name: &str) -> Result<(), String> {
    match seen.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
        Some((first, _)) if first == name => Err(format!("header {name:?} is given twice")),
        Some((first, _)) => {
            Err(format!("header {name:?} repeats {first:?} with different case; HTTP field names ignore case"))
        }
        None => Ok(()),
    }
}

#[cfg(test)]
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
