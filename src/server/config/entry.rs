//! One server entry of a config file: the name rules every format shares (unique, not empty)
//! and the local and remote servers the desktop client and VS Code formats both write.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::fields::{env_map, field, header_map, optional_string, required_string, string_array, Json};
use super::spec::{parse_remote_url, redact_url, url_looks_like_sse, OAuthClient, ServerSpec};
use super::EntryError;

/// What an entry resolved to: a server, nothing (disabled on purpose), or the rule it broke.
pub(super) type EntryResult = Result<Option<ServerSpec>, String>;

/// Collects servers and entry errors, enforcing unique names.
pub(super) struct Entries<'a> {
    pub(super) path: &'a Path,
    pub(super) names: HashSet<String>,
    pub(super) servers: Vec<ServerSpec>,
    pub(super) errors: Vec<EntryError>,
}

impl Entries<'_> {
    pub(super) fn add(&mut self, name: &str, resolved: EntryResult) {
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

/// A stdio server as written (no placeholder expansion, the command used verbatim).
pub(super) fn local_server(name: &str, fields: &[(String, Json)]) -> Result<ServerSpec, String> {
    Ok(ServerSpec::Stdio {
        name: name.to_owned(),
        program: required_string(fields, "command")?.to_owned(),
        args: string_array(fields, "args")?,
        env: env_map(fields)?,
        cwd: optional_string(fields, "cwd")?.map(PathBuf::from),
    })
}

/// `sse`: `None` = decide by the URL (a path ending in `/sse` is the legacy SSE transport).
pub(super) fn remote_server(name: &str, fields: &[(String, Json)], sse: Option<bool>) -> Result<ServerSpec, String> {
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
pub(super) fn oauth_client(fields: &[(String, Json)]) -> Result<Option<OAuthClient>, String> {
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

pub(super) fn reject_fields(fields: &[(String, Json)], keys: &[&str], what: &str) -> Result<(), String> {
    match fields.iter().find(|(k, _)| keys.contains(&k.as_str())) {
        Some((key, _)) => Err(format!("field {key:?} does not apply to {what}")),
        None => Ok(()),
    }
}
