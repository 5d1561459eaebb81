//! JSON-RPC 2.0 framing for the View channel: parsing untrusted input and building replies.
//!
//! Everything a View sends is untrusted. [`Message::parse`] accepts exactly the four JSON-RPC 2.0
//! shapes and says precisely what is wrong with anything else, so the bridge can log it and move on.

use serde_json::{json, Map, Value};

/// Standard and MCP Apps error codes.
pub mod code {
    /// Invalid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Implementation-defined: the host refused (policy, visibility, state).
    pub const DENIED: i64 = -32000;
    /// Implementation-defined: the request timed out or its server went away.
    pub const UNAVAILABLE: i64 = -32001;
}

/// A JSON-RPC request id: a string or a number (never null for requests).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// A numeric id (kept as its JSON text so large or fractional numbers survive unchanged).
    Number(String),
    /// A string id.
    String(String),
}

impl RequestId {
    fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Number(n) => Some(Self::Number(n.to_string())),
            Value::String(s) => Some(Self::String(s.clone())),
            _ => None,
        }
    }

    /// The id as a JSON value, exactly as it arrived.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Number(n) => serde_json::from_str(n).unwrap_or(Value::Null),
            Self::String(s) => Value::String(s.clone()),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        Self::Number(n.to_string())
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number(n) => f.write_str(n),
            Self::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RpcError {
    /// The error code (see [`code`]).
    pub code: i64,
    /// A message for people.
    pub message: String,
    /// Optional extra data.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a code and message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    /// `-32602`: the params are wrong; say which field and why.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }

    /// `-32601` for `method`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(code::METHOD_NOT_FOUND, format!("method not found: {method}"))
    }

    /// `-32000`: refused by the host.
    pub fn denied(message: impl Into<String>) -> Self {
        Self::new(code::DENIED, message)
    }

    /// The error as its JSON object.
    pub fn to_value(&self) -> Value {
        let mut obj = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            obj["data"] = data.clone();
        }
        obj
    }

    fn from_value(value: &Value) -> Option<Self> {
        let obj = value.as_object()?;
        Some(Self {
            code: obj.get("code")?.as_i64()?,
            message: obj.get("message")?.as_str()?.to_owned(),
            data: obj.get("data").cloned(),
        })
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// One JSON-RPC 2.0 message.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Message {
    /// A request: expects a response with the same id.
    Request {
        /// Request id.
        id: RequestId,
        /// Method name.
        method: String,
        /// Params (absent params are `None`; the spec allows an object or an array).
        params: Option<Value>,
    },
    /// A notification: no id, no response.
    Notification {
        /// Method name.
        method: String,
        /// Params.
        params: Option<Value>,
    },
    /// A successful response.
    Response {
        /// Id of the request this answers.
        id: RequestId,
        /// The result.
        result: Value,
    },
    /// An error response. The id is `None` when the peer could not read the request's id.
    Error {
        /// Id of the request this answers.
        id: Option<RequestId>,
        /// The error.
        error: RpcError,
    },
}

/// Why a value is not a JSON-RPC 2.0 message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// Not JSON at all.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// JSON, but not an object.
    #[error("not a JSON object")]
    NotObject,
    /// `jsonrpc` is missing or not `"2.0"`.
    #[error("\"jsonrpc\" must be \"2.0\"")]
    BadVersion,
    /// A shape that is none of request, notification, response, error.
    #[error("invalid JSON-RPC message: {0}")]
    Invalid(&'static str),
}

impl Message {
    /// Parses untrusted text.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ParseError::NotJson(e.to_string()))?;
        Self::from_value(&value)
    }

    /// Reads an already parsed value.
    pub fn from_value(value: &Value) -> Result<Self, ParseError> {
        let obj = value.as_object().ok_or(ParseError::NotObject)?;
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(ParseError::BadVersion);
        }
        let params = match obj.get("params") {
            None => None,
            Some(p @ (Value::Object(_) | Value::Array(_))) => Some(p.clone()),
            Some(_) => return Err(ParseError::Invalid("\"params\" must be an object or array")),
        };
        match (obj.get("method"), obj.get("id")) {
            (Some(Value::String(method)), None) => Ok(Self::Notification { method: method.clone(), params }),
            (Some(Value::String(method)), Some(id)) => Ok(Self::Request {
                id: RequestId::from_value(id)
                    .ok_or(ParseError::Invalid("request \"id\" must be a string or number"))?,
                method: method.clone(),
                params,
            }),
            (Some(_), _) => Err(ParseError::Invalid("\"method\" must be a string")),
            (None, id) => {
                let id = id.and_then(RequestId::from_value);
                match (obj.get("result"), obj.get("error")) {
                    (Some(result), None) => Ok(Self::Response {
                        id: id.ok_or(ParseError::Invalid("response \"id\" must be a string or number"))?,
                        result: result.clone(),
                    }),
                    (None, Some(error)) => Ok(Self::Error {
                        id,
                        error: RpcError::from_value(error)
                            .ok_or(ParseError::Invalid("\"error\" must have a numeric code and a message"))?,
                    }),
                    (Some(_), Some(_)) => Err(ParseError::Invalid("both \"result\" and \"error\"")),
                    (None, None) => Err(ParseError::Invalid("no \"method\", \"result\" or \"error\"")),
                }
            }
        }
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Self::Request { method, .. } | Self::Notification { method, .. } => Some(method),
            _ => None,
        }
    }

    /// The message as JSON.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Request { id, method, params } => {
                let mut v = json!({"jsonrpc": "2.0", "id": id.to_value(), "method": method});
                if let Some(p) = params {
                    v["params"] = p.clone();
                }
                v
            }
            Self::Notification { method, params } => {
                let mut v = json!({"jsonrpc": "2.0", "method": method});
                if let Some(p) = params {
                    v["params"] = p.clone();
                }
                v
            }
            Self::Response { id, result } => {
                json!({"jsonrpc": "2.0", "id": id.to_value(), "result": result})
            }
            Self::Error { id, error } => json!({
                "jsonrpc": "2.0",
                "id": id.as_ref().map_or(Value::Null, RequestId::to_value),
                "error": error.to_value(),
            }),
        }
    }

    /// A notification with params.
    pub fn notification(method: &str, params: Value) -> Self {
        Self::Notification { method: method.to_owned(), params: Some(params) }
    }

    /// A request with params.
    pub fn request(id: RequestId, method: &str, params: Value) -> Self {
        Self::Request { id, method: method.to_owned(), params: Some(params) }
    }
}

/// The params of a request or notification as an object; absent params are an empty object.
pub fn params_object(params: Option<&Value>) -> Result<Map<String, Value>, RpcError> {
    match params {
        None => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(_) => Err(RpcError::invalid_params("params must be an object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_four_shapes() {
        let req = Message::parse(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        assert_eq!(req, Message::Request { id: 1.into(), method: "ping".into(), params: None });
        let note = Message::parse(r#"{"jsonrpc":"2.0","method":"x","params":{"a":1}}"#).unwrap();
        assert_eq!(note.method(), Some("x"));
        let resp = Message::parse(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap();
        assert!(matches!(resp, Message::Response { id: RequestId::String(ref s), .. } if s == "a"));
        let err = Message::parse(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m"}}"#).unwrap();
        assert!(matches!(err, Message::Error { id: None, .. }));
    }

    #[test]
    fn rejects_everything_else_with_a_reason() {
        let cases = [
            ("nope", "not JSON"),
            ("[1]", "not a JSON object"),
            (r#"{"id":1,"method":"x"}"#, "jsonrpc"),
            (r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#, "jsonrpc"),
            (r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#, "id"),
            (r#"{"jsonrpc":"2.0","method":7}"#, "method"),
            (r#"{"jsonrpc":"2.0","method":"x","params":3}"#, "params"),
            (r#"{"jsonrpc":"2.0","id":1}"#, "no \"method\""),
            (r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#, "both"),
            (r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#, "error"),
        ];
        for (text, needle) in cases {
            let err = Message::parse(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn ids_round_trip_exactly() {
        for text in [
            r#"{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"abc","method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#,
        ] {
            let msg = Message::parse(text).unwrap();
            let original: Value = serde_json::from_str(text).unwrap();
            assert_eq!(msg.to_value()["id"], original["id"], "{text}");
        }
    }
}
