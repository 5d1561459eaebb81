//! A model behind an HTTP API: which provider's wire format a request is written in and its
//! stream read in (`openai`, `anthropic`), over the one streamed POST both share (`wire`).

use super::wire::stream_post;
use super::{anthropic, openai, Model, ModelError, ModelEvent, ModelRequest, ModelSpec, Provider};

/// A model behind an HTTP API, in the wire format of its provider.
pub(super) struct HttpModel {
    pub(super) spec: ModelSpec,
    pub(super) http: reqwest::Client,
}

impl Model for HttpModel {
    fn describe(&self) -> String {
        self.spec.describe()
    }

    fn name(&self) -> String {
        self.spec.name.clone()
    }

    fn with_name(&self, name: &str) -> Option<std::sync::Arc<dyn Model>> {
        let name = name.trim();
        if name.is_empty() || name.len() > 200 || name.chars().any(char::is_control) {
            return None;
        }
        let spec = ModelSpec { name: name.to_owned(), ..self.spec.clone() };
        Some(std::sync::Arc::new(HttpModel { spec, http: self.http.clone() }))
    }

    fn stream(&self, request: ModelRequest) -> tokio::sync::mpsc::Receiver<Result<ModelEvent, ModelError>> {
        let (tx, rx) = super::channel();
        let (spec, http) = (&self.spec, self.http.clone());
        let anthropic = spec.provider == Provider::Anthropic;
        let (url, headers, body) = if anthropic {
            (anthropic::endpoint(spec), anthropic::headers(spec), anthropic::body(spec, &request))
        } else {
            (openai::endpoint(spec), openai::headers(spec), openai::body(spec, &request))
        };
        let key = spec.api_key.clone();
        tokio::spawn(async move {
            let key = key.as_ref();
            if anthropic {
                let mut blocks = anthropic::Blocks::default();
                stream_post(&http, url, headers, body, &tx, key, |event, data| blocks.take(event, data)).await;
            } else {
                let mut chunks = openai::Chunks::default();
                stream_post(&http, url, headers, body, &tx, key, |_, data| chunks.take(data)).await;
            }
        });
        rx
    }
}
