//! Requests a server sends to the host: `elicitation/create`, `sampling/createMessage`,
//! `roots/list` and `ping`.
//!
//! A [`ServerRequests`] decides elicitation and sampling; the connection adds what every answer
//! needs: a time limit (a server that asks is never left waiting forever), schema validation of
//! accepted elicitation content, and one log line per request and answer.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::bridge::BoxFuture;
use crate::protocol::RpcError;

/// How long a person has to answer an elicitation before it is cancelled.
pub const ELICITATION_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a sampler may take.
pub const SAMPLING_TIMEOUT: Duration = Duration::from_secs(300);
/// How many elicitations of one connection may wait for an answer at once. More are refused
/// with a JSON-RPC error before they reach [`ServerRequests::elicit`]: a person answers one
/// question at a time, and a server that asks hundreds at once would otherwise bury every other
/// server's questions (and the host's own consent prompts) behind its own.
pub const MAX_PENDING_ELICITATIONS: usize = 2;

/// One `elicitation/create` request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Elicitation {
    /// The asking server's display name.
    pub server: String,
    /// What the server says to the person.
    pub message: String,
    /// What is asked for.
    pub kind: ElicitationKind,
}

/// Form or URL elicitation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitationKind {
    /// Fill in a form: a flat object schema of strings, numbers, booleans and enums.
    Form {
        /// The `requestedSchema`.
        schema: Value,
    },
    /// Open a URL (sign-in, payment) outside the host.
    Url {
        /// The URL the server wants opened.
        url: String,
        /// The server's id for this elicitation.
        elicitation_id: String,
    },
}

/// A person's (or an embedder's) answer to an [`Elicitation`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitAnswer {
    /// Submitted, with the form's values (empty for URL elicitation).
    Accept(Map<String, Value>),
    /// Explicitly refused.
    Decline,
    /// Dismissed without a choice (closed, timed out, nobody there).
    Cancel,
}

impl ElicitAnswer {
    /// The wire `action`.
    pub fn action(&self) -> &'static str {
        match self {
            Self::Accept(_) => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
        }
    }
}

/// A filesystem root offered to servers in `roots/list`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A display name.
    pub name: Option<String>,
}

impl Root {
    /// A root for a directory (made absolute; it need not exist).
    pub fn directory(path: &Path) -> crate::Result<Self> {
        let absolute =
            std::path::absolute(path).map_err(|e| crate::Error::Desktop(format!("root {}: {e}", path.display())))?;
        let uri = url::Url::from_directory_path(&absolute).map_err(|()| {
            crate::Error::Desktop(format!("root {} is not an absolute directory path", path.display()))
        })?;
        let name = absolute.file_name().map(|n| n.to_string_lossy().into_owned());
        Ok(Self { uri: uri.to_string(), name })
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut root = json!({"uri": self.uri});
        if let Some(name) = &self.name {
            root["name"] = json!(name);
        }
        root
    }
}

/// Decides what servers ask of the host. Every method has a default that refuses: a host with
/// nobody to ask (`check`, a headless embedder) declines elicitation and offers no sampling.
pub trait ServerRequests: Send + Sync + 'static {
    /// Whether elicitation is offered (advertised as the `elicitation` capability). Default: yes;
    /// the default [`elicit`](Self::elicit) declines, which is an honest answer.
    fn can_elicit(&self) -> bool {
        true
    }

    /// `elicitation/create`: ask a person. The connection cancels it after
    /// [`ELICITATION_TIMEOUT`] (or the configured limit) and checks accepted content against the
    /// requested schema. Default: declined, with a log line saying nobody could answer.
    fn elicit(&self, request: Elicitation) -> BoxFuture<ElicitAnswer> {
        tracing::info!(server = %request.server, "elicitation declined: nobody can answer in this host: {}", request.message);
        Box::pin(std::future::ready(ElicitAnswer::Decline))
    }

    /// Whether sampling is offered (advertised as the `sampling` capability). Default: no.
    fn can_sample(&self) -> bool {
        false
    }

    /// `sampling/createMessage` with its params; the result is a `CreateMessageResult`.
    /// Default: refused.
    fn sample(&self, server: &str, params: Value) -> BoxFuture<Result<Value, RpcError>> {
        let _ = params;
        tracing::info!(server = %server, "sampling refused: this host has no model");
        Box::pin(std::future::ready(Err(RpcError::new(
            crate::protocol::jsonrpc::code::INVALID_REQUEST,
            "sampling is not offered by this host",
        ))))
    }
}

/// The refusing [`ServerRequests`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Unattended;

impl ServerRequests for Unattended {}

/// The [`ServerRequests`] shared by a connection's handler.
pub(crate) type SharedRequests = Arc<dyn ServerRequests>;

/// Counts the elicitations of one connection that wait for an answer (see
/// [`MAX_PENDING_ELICITATIONS`]).
#[derive(Debug, Clone)]
pub(crate) struct ElicitationGate {
    pending: Arc<AtomicUsize>,
    cap: usize,
}

/// One place in an [`ElicitationGate`], given back when dropped (answered, timed out, withdrawn).
#[derive(Debug)]
pub(crate) struct ElicitationSlot(Arc<AtomicUsize>);

impl Drop for ElicitationSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ElicitationGate {
    pub(crate) fn new(cap: usize) -> Self {
        Self { pending: Arc::new(AtomicUsize::new(0)), cap }
    }

    /// A place for one more elicitation, or the sentence the server gets when all are taken.
    pub(crate) fn enter(&self) -> Result<ElicitationSlot, String> {
        let cap = self.cap;
        self.pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < cap).then_some(n + 1))
            .map(|_| ElicitationSlot(self.pending.clone()))
            .map_err(|_| {
                let questions = if cap == 1 { "question" } else { "questions" };
                format!("the host already shows {cap} {questions} from this server; answer them first")
            })
    }
}

/// Reads an `elicitation/create` params object.
pub(crate) fn parse_elicitation(server: &str, params: &Value) -> Result<Elicitation, String> {
    let message = params.get("message").and_then(Value::as_str).unwrap_or_default().to_owned();
    let mode = params.get("mode").and_then(Value::as_str).unwrap_or("form");
    let kind = match mode {
        "url" => {
            let url = params.get("url").and_then(Value::as_str).ok_or("URL elicitation without `url`")?;
            // The ui/open-link rule: web pages only (no file:, javascript:, other apps' schemes,
            // paths or options for the opener), and no userinfo hiding the host.
            let (url, _) = crate::consent::LinkSubject::parse(url)
                .map_err(|reason| format!("URL elicitation refused: {reason}"))?;
            ElicitationKind::Url {
                url: url.to_string(),
                elicitation_id: params.get("elicitationId").and_then(Value::as_str).unwrap_or_default().to_owned(),
            }
        }
        "form" => {
            let schema = params.get("requestedSchema").cloned().ok_or("form elicitation without `requestedSchema`")?;
            check_form_schema(&schema)?;
            ElicitationKind::Form { schema }
        }
        other => return Err(format!("unknown elicitation mode {other:?}")),
    };
    Ok(Elicitation { server: server.to_owned(), message, kind })
}

/// The spec restricts `requestedSchema` to a flat object of primitive properties (and arrays of
/// enum strings for multi-select); anything else cannot be shown as a form.
fn check_form_schema(schema: &Value) -> Result<(), String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("`requestedSchema` must be an object schema".into());
    }
    let empty = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    for (name, property) in properties {
        let kind = property.get("type").and_then(Value::as_str).unwrap_or_default();
        let ok = match kind {
            "string" | "number" | "integer" | "boolean" => true,
            "array" => property.pointer("/items/enum").is_some() || property.pointer("/items/anyOf").is_some(),
            _ => false,
        };
        if !ok {
            return Err(format!(
                "property {name:?} has type {kind:?}; a form takes strings, numbers, booleans and enums"
            ));
        }
    }
    Ok(())
}

/// The form's values when every field takes its default: what an unattended host may accept.
/// Fails with the names of required fields that have no default.
pub fn form_defaults(schema: &Value) -> Result<Map<String, Value>, String> {
    let empty = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let values: Map<String, Value> =
        properties.iter().filter_map(|(name, p)| p.get("default").map(|d| (name.clone(), d.clone()))).collect();
    let missing: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|name| !values.contains_key(*name))
        .collect();
    if missing.is_empty() {
        Ok(values)
    } else {
        Err(missing.join(", "))
    }
}

/// Checks accepted content against the requested schema.
pub(crate) fn validate_content(schema: &Value, content: &Map<String, Value>) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema).map_err(|e| format!("the requested schema is invalid: {e}"))?;
    let instance = Value::Object(content.clone());
    let errors: Vec<String> = validator.iter_errors(&instance).take(3).map(|e| e.to_string()).collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_and_url_elicitations_are_read_and_bad_ones_named() {
        let form = parse_elicitation(
            "s",
            &json!({"message": "Name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}),
        )
        .unwrap();
        assert!(matches!(form.kind, ElicitationKind::Form { .. }));
        assert_eq!(form.message, "Name?");
        let url = parse_elicitation(
            "s",
            &json!({"mode": "url", "message": "Sign in", "url": "https://a.example/x", "elicitationId": "e1"}),
        )
        .unwrap();
        assert_eq!(url.kind, ElicitationKind::Url { url: "https://a.example/x".into(), elicitation_id: "e1".into() });
        let nested =
            json!({"message": "", "requestedSchema": {"type": "object", "properties": {"a": {"type": "object"}}}});
        assert!(parse_elicitation("s", &nested).unwrap_err().contains("\"a\""));
        assert!(parse_elicitation("s", &json!({"message": ""})).unwrap_err().contains("requestedSchema"));
        assert!(parse_elicitation("s", &json!({"mode": "telepathy"})).unwrap_err().contains("telepathy"));
    }

    #[test]
    fn url_elicitations_open_only_web_pages() {
        let long_user = format!("https://bank.example{}@evil.example/", "a".repeat(3000));
        for bad in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "mcp-host://app/",
            "ssh://attacker.example",
            "vscode://file/etc/passwd",
            "/usr/bin/xterm",
            "--help",
            "https://user:pass@example.com/",
            long_user.as_str(),
        ] {
            let err = parse_elicitation("s", &json!({"mode": "url", "message": "", "url": bad, "elicitationId": "e"}))
                .expect_err(bad);
            assert!(err.starts_with("URL elicitation refused"), "{bad}: {err}");
        }
    }

    #[test]
    fn content_is_checked_against_the_schema() {
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]});
        assert!(validate_content(&schema, json!({"n": 3}).as_object().unwrap()).is_ok());
        assert!(validate_content(&schema, json!({"n": 0}).as_object().unwrap()).is_err());
        assert!(validate_content(&schema, json!({}).as_object().unwrap()).unwrap_err().contains("n"));
    }

    #[test]
    fn defaults_fill_a_form_when_they_cover_what_is_required() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "Ada"}, "age": {"type": "integer"}, "ok": {"type": "boolean", "default": true}},
            "required": ["name"]});
        assert_eq!(form_defaults(&schema).unwrap(), *json!({"name": "Ada", "ok": true}).as_object().unwrap());
        let strict = json!({"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]});
        assert_eq!(form_defaults(&strict).unwrap_err(), "age");
    }

    #[test]
    fn elicitations_past_the_cap_are_refused_until_one_is_answered() {
        let gate = ElicitationGate::new(2);
        let first = gate.enter().unwrap();
        let second = gate.clone().enter().unwrap();
        let refused = gate.enter().unwrap_err();
        assert_eq!(refused, "the host already shows 2 questions from this server; answer them first");
        drop(first);
        let third = gate.enter().expect("an answered question frees its place");
        assert!(gate.enter().is_err());
        drop((second, third));
        assert_eq!(gate.pending.load(Ordering::Acquire), 0);
        assert!(ElicitationGate::new(1).enter().is_ok());
        let one = ElicitationGate::new(1);
        let _held = one.enter().unwrap();
        assert!(one.enter().unwrap_err().contains("1 question from"));
    }

    #[test]
    fn roots_are_file_uris() {
        let root = Root::directory(Path::new("/tmp/some dir")).unwrap();
        assert_eq!(root.uri, "file:///tmp/some%20dir/");
        assert_eq!(root.to_json(), json!({"uri": "file:///tmp/some%20dir/", "name": "some dir"}));
    }
}
