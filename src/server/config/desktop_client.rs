//! A desktop chat client's `{"mcpServers": {...}}`: servers written as in that client's own
//! config, its other fields left to it.

use super::entry::{local_server, reject_fields, remote_server, EntryResult};
use super::fields::{entry_object, field, optional_string, Json};

/// `{"command", "args"?, "env"?, "cwd"?}` or `{"url", "headers"?, "type"?}`; other fields are
/// the client's own (`disabled`, `autoApprove`, ...) and ignored, except `"disabled": true`.
pub(super) fn desktop_server(name: &str, value: &Json) -> EntryResult {
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
