//! VS Code's `{"servers": {...}, "inputs": [...]}`: typed entries, variables kept literal and
//! input variables refused.

use super::entry::{local_server, reject_fields, remote_server, EntryResult};
use super::fields::{entry_object, field, optional_string, Json};

/// `{"type": "stdio" | "http" | "sse", ...}`; `${env:...}` and friends stay literal; `"disabled":
/// true` leaves the server out, as in the desktop format.
pub(super) fn vscode_server(name: &str, value: &Json) -> EntryResult {
    let fields = entry_object(value)?;
    // Not VS Code's own key (it keeps that state elsewhere), but the one desktop clients write
    // and this host's servers editor writes in every format.
    match field(fields, "disabled") {
        None | Some(Json::Bool(false)) => {}
        Some(Json::Bool(true)) => return Ok(None),
        Some(other) => return Err(format!("\"disabled\" must be true or false, found {}", other.describe())),
    }
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
