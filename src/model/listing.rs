//! The models an endpoint offers, for the model settings page: OpenAI's and compatible servers'
//! `GET /models`, Anthropic's `GET /v1/models`, Ollama's `GET /api/tags`. The same request also
//! tests the connection: the address, the key and the wire format answer, or say why not.
//!
//! The request goes to the spec's own base URL (the address the page names), with the key as the
//! conversation would send it, no redirect followed, within [`LIST_TIMEOUT`] and [`MAX_BYTES`];
//! what comes back is the endpoint's word, so only names of one short line are kept.

use std::time::Duration;

use serde_json::Value;

use super::{anthropic, openai, wire, ModelSpec, Provider};

/// The longest a listing may take.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(15);
/// The most bytes of an answer read.
pub const MAX_BYTES: usize = 1024 * 1024;
/// The most names kept.
pub const MAX_MODELS: usize = 500;

/// Where the listing of `spec`'s endpoint is asked, and with which headers.
pub(crate) fn request_of(spec: &ModelSpec) -> (url::Url, Vec<(&'static str, String)>) {
    match spec.provider {
        Provider::OpenAi => (wire::endpoint(&spec.base_url, "models"), openai::headers(spec)),
        Provider::Anthropic => {
            let mut url = wire::endpoint(&spec.base_url, "v1/models");
            url.set_query(Some("limit=1000"));
            (url, anthropic::headers(spec))
        }
        Provider::Ollama => {
            // Its OpenAI-compatible base is `…/v1`; the tags are beside it, at the root.
            let mut root = spec.base_url.clone();
            let path = root.path().trim_end_matches('/').trim_end_matches("/v1").to_owned();
            root.set_path(&path);
            (wire::endpoint(&root, "api/tags"), Vec::new())
        }
    }
}

/// The model names in an answer: `data[].id` (OpenAI, Anthropic) or `models[].name` (Ollama),
/// each one line of at most 200 characters, at most [`MAX_MODELS`]; OpenAI's unordered list
/// sorted, the others in the endpoint's order (Anthropic's newest first).
pub(crate) fn names_in(provider: Provider, answer: &Value) -> Vec<String> {
    let (list, field) = match provider {
        Provider::Ollama => ("models", "name"),
        _ => ("data", "id"),
    };
    let mut names: Vec<String> = answer[list]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|m| m[field].as_str())
        .filter(|n| !n.is_empty() && n.chars().count() <= 200 && !n.chars().any(char::is_control))
        .map(str::to_owned)
        .take(MAX_MODELS)
        .collect();
    if provider == Provider::OpenAi {
        names.sort();
    }
    names.dedup();
    names
}

/// Asks `spec`'s endpoint which models it offers; an error says why in a person's words.
pub async fn list_models(spec: &ModelSpec) -> Result<Vec<String>, String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .timeout(LIST_TIMEOUT)
        .build()
        .map_err(|e| format!("cannot make the request: {e}"))?;
    let (url, headers) = request_of(spec);
    let shown = wire::shown(&url);
    let mut request = http.get(url);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let unreachable = |e: reqwest::Error| format!("Cannot reach {shown}: {}", wire::without_url(&e));
    let mut response = request.send().await.map_err(unreachable)?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
        if body.len() + chunk.len() > MAX_BYTES {
            return Err(format!("{shown} answered more than a model list holds ({MAX_BYTES} bytes)."));
        }
        body.extend_from_slice(&chunk);
    }
    match status.as_u16() {
        200..=299 => {}
        401 | 403 => return Err(format!("{shown} refused the key (HTTP {}): check it.", status.as_u16())),
        404 => return Err(format!("{shown} has no model list (HTTP 404): is this the right address?")),
        code if (300..400).contains(&code) => {
            return Err(format!("{shown} sends the request elsewhere (HTTP {code}): give the address it names."))
        }
        code => {
            let said = crate::consent::one_line_max(&String::from_utf8_lossy(&body), 200);
            return Err(format!("{shown} answered HTTP {code}: {said}"));
        }
    }
    let answer: Value = serde_json::from_slice(&body)
        .map_err(|_| format!("{shown} answered, but not with a model list: is this the right address?"))?;
    Ok(names_in(spec.provider, &answer))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(text: &str, url: Option<&str>) -> ModelSpec {
        ModelSpec::parse_with(text, url, |_| None).unwrap()
    }

    #[test]
    fn each_provider_is_asked_at_its_own_address() {
        let (url, headers) = request_of(&spec("openai:x", Some("http://127.0.0.1:9/v1")));
        assert_eq!(url.as_str(), "http://127.0.0.1:9/v1/models");
        assert!(headers.is_empty(), "no key, no header");
        let mut keyed = spec("anthropic:x", None);
        keyed.api_key = Some(super::super::ApiKey::new("k"));
        let (url, headers) = request_of(&keyed);
        assert_eq!(url.as_str(), "https://api.anthropic.com/v1/models?limit=1000");
        assert!(
            headers.contains(&("x-api-key", "k".to_owned())) && headers.iter().any(|(n, _)| *n == "anthropic-version")
        );
        let (url, _) = request_of(&spec("ollama:x", Some("http://10.0.0.2:11434/v1/")));
        assert_eq!(url.as_str(), "http://10.0.0.2:11434/api/tags");
    }

    #[test]
    fn names_are_read_per_format_and_bounded() {
        let openai = json!({"data": [{"id": "gpt-b"}, {"id": "gpt-a"}, {"id": "bad\nname"}, {"id": 3}, {"name": "x"}]});
        assert_eq!(names_in(Provider::OpenAi, &openai), ["gpt-a", "gpt-b"]);
        let anthropic = json!({"data": [{"id": "claude-new", "display_name": "New"}, {"id": "claude-old"}]});
        assert_eq!(names_in(Provider::Anthropic, &anthropic), ["claude-new", "claude-old"]);
        let ollama = json!({"models": [{"name": "qwen3:8b"}, {"name": "x".repeat(201)}]});
        assert_eq!(names_in(Provider::Ollama, &ollama), ["qwen3:8b"]);
        let many = json!({"data": (0..2000).map(|i| json!({"id": format!("m{i:04}")})).collect::<Vec<_>>()});
        assert_eq!(names_in(Provider::OpenAi, &many).len(), MAX_MODELS);
        assert!(names_in(Provider::OpenAi, &json!({"data": "no"})).is_empty());
    }
}
