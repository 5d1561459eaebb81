//! The models a conversation runs on: any OpenAI-compatible Chat Completions endpoint (OpenAI,
//! Ollama, llama.cpp's server, vLLM, LM Studio, OpenRouter) and the Anthropic Messages API, both
//! streamed (server-sent events), text and tool-call arguments alike.
//!
//! The two wire formats are written here on `reqwest` and `sse-stream` (both already in the
//! tree for the MCP transports) rather than through a client crate: the multi-provider crates
//! are pre-1.0 and change their stream types between betas, the OpenAI-only ones speak one of
//! the two formats, and the host needs exactly what the wire carries: each fragment of a tool
//! call's arguments, in order, for `ui/notifications/tool-input-partial`.
//!
//! A provider-neutral [`ModelRequest`] goes in; [`ModelEvent`]s come out. An embedder brings a
//! model of its own by implementing [`Model`].

mod anthropic;
mod api;
pub mod key_policy;
pub mod listing;
mod openai;
pub mod partial_json;
pub mod sampling;
mod scripted;
mod wire;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;
use url::Url;

pub use scripted::ScriptedModel;

/// How many events a model may have in flight before it waits for the conversation.
const EVENT_BUFFER: usize = 256;

/// Why a model request failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The model spec or its settings are wrong.
    #[error("model configuration: {0}")]
    Config(String),
    /// The endpoint could not be reached or the connection broke.
    #[error("cannot reach the model at {url}: {reason}")]
    Connect {
        /// The endpoint.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The endpoint answered with an error.
    #[error("the model API answered {status}: {message}")]
    Api {
        /// The HTTP status (0 for an error event inside the stream).
        status: u16,
        /// The API's message.
        message: String,
    },
    /// The stream did not follow the wire format.
    #[error("the model's stream is malformed: {0}")]
    Protocol(String),
}

/// The wire format a model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Chat Completions (`POST {base}/chat/completions`), and every server compatible
    /// with it.
    OpenAi,
    /// Anthropic Messages (`POST {base}/v1/messages`).
    Anthropic,
    /// Ollama's OpenAI-compatible endpoint (`{OLLAMA_HOST}/v1`).
    Ollama,
}

impl Provider {
    /// The provider as `--model` writes it: `openai`, `anthropic`, `ollama`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Ollama => "ollama",
        }
    }
}

/// An API key. It is never printed: not in logs, traces, errors or Views.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// Reads a key from `path`, which only its owner may read (like the sign-in tokens).
    pub fn from_file(path: &Path) -> Result<Self, ModelError> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let meta = std::fs::metadata(path)
                .map_err(|e| ModelError::Config(format!("cannot read the key file {}: {e}", path.display())))?;
            if meta.permissions().mode() & 0o077 != 0 {
                return Err(ModelError::Config(format!(
                    "the key file {} may be read by others: make it owner-only (chmod 600)",
                    path.display()
                )));
            }
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModelError::Config(format!("cannot read the key file {}: {e}", path.display())))?;
        let key = text.trim();
        if !key_policy::key_shaped(key) {
            return Err(ModelError::Config(format!(
                "the key file {} must hold one key (one line of letters, digits and . _ ~ + / = -); it was not used",
                path.display()
            )));
        }
        Ok(Self(key.to_owned()))
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with the key, and every run of 10 of its characters, replaced by
    /// `[the key]`: an endpoint that echoes the key (whole or in part) in an error does not
    /// carry it into a log, the trace, the shell or a server's sampling error.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.replace(self.0.as_str(), "[the key]");
        let chars: Vec<char> = self.0.chars().collect();
        if chars.len() >= ECHO_RUN {
            for start in 0..=chars.len() - ECHO_RUN {
                let run: String = chars[start..start + ECHO_RUN].iter().collect();
                if out.contains(&run) {
                    out = out.replace(&run, "[the key]");
                }
            }
        }
        out
    }
}

/// Runs of this many of a key's characters are taken for the key when an endpoint echoes them.
const ECHO_RUN: usize = 10;

impl ModelError {
    /// This error with `key` redacted from every text it holds (see [`ApiKey::redact`]).
    pub fn redacted(self, key: Option<&ApiKey>) -> Self {
        let Some(key) = key else { return self };
        match self {
            Self::Config(t) => Self::Config(key.redact(&t)),
            Self::Connect { url, reason } => Self::Connect { url: key.redact(&url), reason: key.redact(&reason) },
            Self::Api { status, message } => Self::Api { status, message: key.redact(&message) },
            Self::Protocol(t) => Self::Protocol(key.redact(&t)),
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(..)")
    }
}

/// Which model, where, and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelSpec {
    /// The wire format.
    pub provider: Provider,
    /// The model's name at the endpoint (`gpt-4.1-mini`, `claude-sonnet-4-5`, `qwen3:8b`).
    pub name: String,
    /// The API's base URL (`https://api.openai.com/v1`, `https://api.anthropic.com`).
    pub base_url: Url,
    /// The key, if the endpoint needs one.
    pub api_key: Option<ApiKey>,
    /// At most this many tokens per answer (Anthropic requires a bound).
    pub max_tokens: u32,
}

impl ModelSpec {
    /// `PROVIDER:NAME` (`openai:gpt-4.1-mini`, `anthropic:claude-sonnet-4-5`,
    /// `ollama:qwen3:8b`), at `url` or the provider's usual environment variables
    /// (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `OLLAMA_HOST`) or its public endpoint; the
    /// key from `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`.
    pub fn parse(spec: &str, url: Option<&str>) -> Result<Self, ModelError> {
        Self::parse_with(spec, url, |name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    /// [`Self::parse`] with the environment given as a function (tests).
    pub fn parse_with(spec: &str, url: Option<&str>, env: impl Fn(&str) -> Option<String>) -> Result<Self, ModelError> {
        let (provider, name) = spec.split_once(':').ok_or_else(|| {
            ModelError::Config(format!("--model {spec:?} must be PROVIDER:NAME (openai:, anthropic: or ollama:)"))
        })?;
        let provider = match provider {
            "openai" => Provider::OpenAi,
            "anthropic" => Provider::Anthropic,
            "ollama" => Provider::Ollama,
            other => {
                return Err(ModelError::Config(format!(
                    "unknown model provider {other:?}: use openai:, anthropic: or ollama:"
                )))
            }
        };
        if name.trim().is_empty() {
            return Err(ModelError::Config(format!("--model {spec:?} names no model")));
        }
        let base = match (url.map(str::to_owned), provider) {
            (Some(url), _) => url,
            (None, Provider::OpenAi) => env("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into()),
            (None, Provider::Anthropic) => {
                env("ANTHROPIC_BASE_URL").unwrap_or_else(|| "https://api.anthropic.com".into())
            }
            (None, Provider::Ollama) => {
                let host = env("OLLAMA_HOST").unwrap_or_else(|| "http://127.0.0.1:11434".into());
                let host = if host.contains("://") { host } else { format!("http://{host}") };
                format!("{}/v1", host.trim_end_matches('/'))
            }
        };
        let base_url = Url::parse(&base).map_err(|e| ModelError::Config(format!("model URL {base:?}: {e}")))?;
        if !matches!(base_url.scheme(), "http" | "https") {
            return Err(ModelError::Config(format!("model URL {base:?} must be http or https")));
        }
        let api_key = match provider {
            Provider::OpenAi => env("OPENAI_API_KEY"),
            Provider::Anthropic => env("ANTHROPIC_API_KEY"),
            Provider::Ollama => None,
        }
        .map(ApiKey);
        Ok(Self { provider, name: name.to_owned(), base_url, api_key, max_tokens: 4096 })
    }

    /// The environment variable a key for this provider comes from, if it has one.
    pub fn key_variable(&self) -> Option<&'static str> {
        match self.provider {
            Provider::OpenAi => Some("OPENAI_API_KEY"),
            Provider::Anthropic => Some("ANTHROPIC_API_KEY"),
            Provider::Ollama => None,
        }
    }

    /// The model as the person sees it named: `openai:gpt-4.1-mini at https://…` (the URL
    /// without credentials or query, which may hold a key).
    pub fn describe(&self) -> String {
        format!("{}:{} at {}", self.provider.as_str(), self.name, wire::shown(&self.base_url))
    }

    /// The built-in model for this spec.
    pub fn build(self) -> Result<Arc<dyn Model>, ModelError> {
        // No redirects: a key header must not follow the request to another host.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Arc::new(api::HttpModel { spec: self, http }))
    }
}

/// One entry of a conversation, as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChatItem {
    /// The person's turn, or an App's `ui/message` (`from_app` names the App).
    User {
        /// What was said.
        text: String,
        /// The App that said it, if an App did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from_app: Option<String>,
    },
    /// The model's turn: its text and the tools it called.
    Assistant {
        /// Its text.
        text: String,
        /// Its tool calls.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one of the model's tool calls.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// MCP content blocks (`text`, `image`, `resource_link`, `resource`).
        content: Vec<Value>,
        /// The result's `structuredContent`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured: Option<Value>,
        /// Whether the call failed (or was refused).
        #[serde(default)]
        is_error: bool,
    },
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The model's id for the call.
    pub id: String,
    /// The tool's name as the model knows it.
    pub name: String,
    /// Its arguments (a JSON object).
    pub arguments: Value,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// The tool's title and description.
    pub description: String,
    /// The tool's `inputSchema`.
    pub input_schema: Value,
}

/// What one model turn gets.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The host's instructions, with the Apps' model context appended.
    pub system: String,
    /// The conversation so far.
    pub items: Vec<ChatItem>,
    /// The tools the model may call.
    pub tools: Vec<ToolSpec>,
}

impl ModelRequest {
    /// A request for `items` with `tools`.
    pub fn new(system: impl Into<String>, items: Vec<ChatItem>, tools: Vec<ToolSpec>) -> Self {
        Self { system: system.into(), items, tools }
    }
}

/// What a model streams back.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ModelEvent {
    /// More of the answer's text.
    Text(String),
    /// A tool call starts (its `index` numbers it within this answer).
    ToolCallStart {
        /// Its place in this answer.
        index: usize,
        /// The model's id for it.
        id: String,
        /// The tool.
        name: String,
    },
    /// More of a tool call's arguments (JSON text, in pieces).
    ToolCallArguments {
        /// The call.
        index: usize,
        /// The next piece.
        fragment: String,
    },
    /// The answer is complete (the API's stop reason).
    End {
        /// `stop`, `tool_calls`, `end_turn`, `tool_use`, `length`, ...
        stop_reason: String,
    },
}

/// A model: takes a request, streams its answer.
pub trait Model: Send + Sync {
    /// The model for the person (`openai:gpt-4.1-mini at …`, `the scripted demo model`).
    fn describe(&self) -> String;

    /// The model's name for servers (a sampling result's `model`): no URL. Default: `describe`.
    fn name(&self) -> String {
        self.describe()
    }

    /// The same endpoint with the same key, another model of it (`gpt-4.1` for `gpt-4.1-mini`):
    /// a conversation switches models this way without the key going anywhere new. None when
    /// this model has no other (the scripted demo model).
    fn with_name(&self, _name: &str) -> Option<std::sync::Arc<dyn Model>> {
        None
    }

    /// Starts one turn. The answer streams into the receiver; it ends with
    /// [`ModelEvent::End`] or an error. Dropping the receiver cancels the request.
    fn stream(&self, request: ModelRequest) -> mpsc::Receiver<Result<ModelEvent, ModelError>>;
}

/// Where a model's answer goes.
pub type AnswerSender = mpsc::Sender<Result<ModelEvent, ModelError>>;

/// A channel for a model's answer.
pub(crate) fn channel() -> (AnswerSender, mpsc::Receiver<Result<ModelEvent, ModelError>>) {
    mpsc::channel(EVENT_BUFFER)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn a_spec_names_provider_and_model_and_takes_urls_and_keys_from_the_environment() {
        let s = ModelSpec::parse_with("openai:gpt-4.1-mini", None, env(&[])).unwrap();
        assert_eq!(
            (s.provider, s.name.as_str(), s.base_url.as_str()),
            (Provider::OpenAi, "gpt-4.1-mini", "https://api.openai.com/v1")
        );
        assert_eq!(s.api_key, None);
        let s = ModelSpec::parse_with(
            "openai:local",
            None,
            env(&[("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"), ("OPENAI_API_KEY", "sk-secret")]),
        )
        .unwrap();
        assert_eq!(s.base_url.as_str(), "http://127.0.0.1:8080/v1");
        assert_eq!(s.api_key, Some(ApiKey::new("sk-secret")));
        assert!(!format!("{s:?}").contains("sk-secret"), "a key is never printed");
        let s = ModelSpec::parse_with("openai:m", Some("http://u:pw@127.0.0.1:8080/v1?api-key=k1"), env(&[])).unwrap();
        assert_eq!(s.describe(), "openai:m at http://127.0.0.1:8080/v1", "no credentials or query");
        // A model name may itself hold colons (Ollama tags).
        let s = ModelSpec::parse_with("ollama:qwen3:8b", None, env(&[("OLLAMA_HOST", "10.0.0.2:11434")])).unwrap();
        assert_eq!((s.name.as_str(), s.base_url.as_str()), ("qwen3:8b", "http://10.0.0.2:11434/v1"));
        let s =
            ModelSpec::parse_with("anthropic:claude", Some("http://127.0.0.1:9/"), env(&[("ANTHROPIC_API_KEY", "k")]))
                .unwrap();
        assert_eq!((s.provider, s.base_url.as_str()), (Provider::Anthropic, "http://127.0.0.1:9/"));
        for bad in ["gpt-4", "mistral:large", "openai:", "openai: "] {
            assert!(ModelSpec::parse_with(bad, None, env(&[])).is_err(), "{bad}");
        }
        assert!(ModelSpec::parse_with("openai:x", Some("file:///etc/passwd"), env(&[])).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_key_file_must_be_owner_only_and_hold_one_key() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "sk-abc\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = ApiKey::from_file(&path).unwrap_err().to_string();
        assert!(e.contains("owner-only") && !e.contains("sk-abc"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(ApiKey::from_file(&path).unwrap(), ApiKey::new("sk-abc"));
        std::fs::write(&path, "one\ntwo\n").unwrap();
        assert!(ApiKey::from_file(&path).is_err());
    }
}
