//! The model settings page: the person picks the conversation's model and gives its API key in
//! the app, without a terminal or a file to write.
//!
//! - The key goes to the system keyring (or the owner-only file when none runs, and the page
//!   says so), as `mcp-apps-host key set` keeps it; never into the config file.
//! - The config file's `model` section gets the provider, the name and the URL, so the next
//!   start uses them (the file is changed as the servers editor changes it: checked with the
//!   loader before it replaces the old one). With servers from the command line there is no
//!   file: the choice holds for this run.
//! - The page names the one origin the key goes to, as the person types the URL. Saving is the
//!   person's yes to that origin: it is remembered as the terminal's question remembers it
//!   (`model::key_policy::EndpointApprovals`), so a config file cannot later move the key
//!   elsewhere without asking, and the person's own choice does not ask again.
//! - The conversation goes on with the new model at once; with no model before, one starts.

use super::*;
use crate::install::config_file;
use crate::model::key_policy::{key_shaped, origin_of, EndpointApprovals};
use crate::model::{ApiKey, ModelSpec, Provider};
use crate::secrets::{self, Secret};
use crate::server::config::{load_config, LoadOptions};

/// The providers whose key the host keeps.
const KEYED: [Provider; 2] = [Provider::OpenAi, Provider::Anthropic];

/// A model the page saved, ready to use.
pub(crate) struct Saved {
    model: Arc<dyn crate::model::Model>,
    /// Where the typed key went, when one was typed.
    kept: Option<String>,
    /// Why the choice was not written to a file, if it was not.
    unwritten: Option<String>,
}

impl std::fmt::Debug for Saved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Saved({})", self.model.describe())
    }
}

impl Controller {
    /// The person opens the page: what the config file says, which keys are kept, and where
    /// secrets go, read off the loop (the keyring may take its time).
    pub(super) fn open_model_settings(&mut self) {
        let config = self.options.launch.config.clone();
        let (section, error) = match config.as_deref().filter(|p| p.exists()) {
            Some(path) => match load_config(path, &LoadOptions::new()) {
                Ok(load) => (load.model, None),
                Err(e) => (None, Some(format!("the config file cannot be read, so it cannot be changed: {e}"))),
            },
            None => (None, None),
        };
        let (provider, name) = match section.as_ref().and_then(|m| m.name.split_once(':')) {
            Some((provider, name)) => (provider.to_owned(), name.to_owned()),
            None => ("openai".to_owned(), String::new()),
        };
        let url = section.as_ref().and_then(|m| m.url.clone()).unwrap_or_default();
        let current = self.options.conversation.model.as_ref().map(|m| consent::one_line_max(&m.0.describe(), 200));
        let endpoints: Map<String, Value> = [Provider::OpenAi, Provider::Anthropic, Provider::Ollama]
            .into_iter()
            .filter_map(|p| {
                let spec = ModelSpec::parse(&format!("{}:model", p.as_str()), None).ok()?;
                Some((p.as_str().to_owned(), json!(origin_of(&spec.base_url))))
            })
            .collect();
        let environment: Map<String, Value> = KEYED
            .into_iter()
            .filter_map(|p| {
                let variable = ModelSpec::parse(&format!("{}:model", p.as_str()), None).ok()?.key_variable()?;
                let set = std::env::var_os(variable).is_some_and(|v| !v.is_empty());
                set.then(|| (p.as_str().to_owned(), json!(variable)))
            })
            .collect();
        let mut settings = json!({
            "current": current, "provider": provider, "name": consent::one_line_max(&name, 200),
            "url": consent::one_line_max(&url, 500), "endpoints": endpoints, "environment": environment,
            "config": config.as_ref().map(|p| consent::one_line(&p.display().to_string())),
            "error": error.map(|e| consent::one_line_max(&e, 1000)),
        });
        let asks = self.questions.asks();
        tokio::spawn(async move {
            let mut kept = Map::new();
            for p in KEYED {
                let found = secrets::lookup(&Secret::model_key(p.as_str())).await.ok().flatten().is_some();
                kept.insert(p.as_str().to_owned(), json!(found));
            }
            let place = match secrets::status().await {
                Ok(()) => "Keys are kept in the system keyring (Secret Service).".to_owned(),
                Err(why) => format!(
                    "No system keyring answers ({}): keys are kept in owner-only files in {}.",
                    consent::one_line_max(&why, 300),
                    secrets::secrets_dir()
                        .map_or_else(|| "(no data directory)".to_owned(), |d| d.display().to_string())
                ),
            };
            settings["kept"] = Value::Object(kept);
            settings["place"] = json!(place);
            let _ = asks.send(Ask::ModelSettings(settings));
        });
    }

    /// The person saves the page: checked here (nothing is kept or written when something is
    /// wrong), the config file written, then the key kept and the model made off the loop.
    pub(super) fn save_model(&mut self, provider: &str, name: &str, url: &str, typed: &str) {
        let Some(provider) =
            [Provider::OpenAi, Provider::Anthropic, Provider::Ollama].into_iter().find(|p| p.as_str() == provider)
        else {
            return self.model_settings_failed("Choose OpenAI, Anthropic or Ollama.".into());
        };
        let name = name.trim();
        if name.is_empty() || name.len() > 200 || name.chars().any(char::is_control) {
            return self
                .model_settings_failed("Give the model's name, as the provider writes it (gpt-4.1-mini).".into());
        }
        let url = Some(url.trim()).filter(|u| !u.is_empty());
        let written_name = format!("{}:{name}", provider.as_str());
        let spec = match ModelSpec::parse(&written_name, url) {
            Ok(spec) => spec,
            Err(e) => return self.model_settings_failed(e.to_string()),
        };
        let typed = typed.trim().to_owned();
        if !typed.is_empty() && spec.key_variable().is_none() {
            return self.model_settings_failed("Ollama takes no key: leave the key empty.".into());
        }
        if !typed.is_empty() && !key_shaped(&typed) {
            return self.model_settings_failed(
                "That is not a key: one line of letters, digits and . _ ~ + / = - (at most 4,096). Nothing was kept."
                    .into(),
            );
        }
        let unwritten = match self.options.launch.config.clone() {
            Some(path) => {
                if let Err(e) = config_file::set_model(&path, &written_name, url, !typed.is_empty()) {
                    return self.model_settings_failed(e);
                }
                None
            }
            None => Some(
                "These servers came from the command line, so there is no config file: the model holds for this run."
                    .to_owned(),
            ),
        };
        // The person named this endpoint here: a key from the environment or the keyring may go
        // to it from now on, as if it were named on the command line.
        if let (Some(variable), Some(_)) = (spec.key_variable(), url) {
            let origin = origin_of(&spec.base_url);
            let own =
                ModelSpec::parse(&format!("{}:{name}", provider.as_str()), None).ok().map(|s| origin_of(&s.base_url));
            if own.as_deref() != Some(origin.as_str()) {
                if let Some(approvals) = EndpointApprovals::user() {
                    if let Err(e) = approvals.allow(variable, &origin) {
                        tracing::warn!("the endpoint the person chose is not remembered: {e}");
                    }
                }
            }
        }
        tracing::info!(model = %spec.describe(), "the person chose the model");
        let asks = self.questions.asks();
        tokio::spawn(async move {
            let outcome = ready_model(spec, typed, unwritten).await;
            let _ = asks.send(Ask::ModelSaved(outcome));
        });
    }

    /// The page's model is ready (or could not be made).
    pub(super) fn model_saved(&mut self, outcome: Result<Saved, String>) {
        match outcome {
            Ok(Saved { model, kept, unwritten }) => {
                self.shell(ShellCommand::ModelSettings { settings: json!({"closed": true}) });
                self.use_model(model);
                let mut said = Vec::new();
                if let Some(place) = kept {
                    said.push(format!("The key is kept in {place}."));
                }
                said.extend(unwritten);
                if !said.is_empty() {
                    let described =
                        self.options.conversation.model.as_ref().map(|m| m.0.describe()).unwrap_or_default();
                    self.status(&format!("The conversation goes on with {described}. {}", said.join(" ")), false);
                }
            }
            Err(e) => self.model_settings_failed(e),
        }
    }

    /// The person asks which models the endpoint offers (which tests the address and the key):
    /// the key typed, else the kept or environment's one, but that only to the provider's own
    /// address or one the person chose before; a key is never sent to an address only typed
    /// here unless typed with it. The answer, or why there is none, goes to the page.
    pub(super) fn list_models(&mut self, provider: &str, url: &str, typed: &str) {
        let Some(provider) =
            [Provider::OpenAi, Provider::Anthropic, Provider::Ollama].into_iter().find(|p| p.as_str() == provider)
        else {
            return self.models_listed(Err("Choose OpenAI, Anthropic or Ollama.".into()));
        };
        let url = Some(url.trim()).filter(|u| !u.is_empty());
        let mut spec = match ModelSpec::parse(&format!("{}:list", provider.as_str()), url) {
            Ok(spec) => spec,
            Err(e) => return self.models_listed(Err(e.to_string())),
        };
        let typed = typed.trim().to_owned();
        if !typed.is_empty() && !key_shaped(&typed) {
            return self.models_listed(Err(
                "That is not a key: one line of letters, digits and . _ ~ + / = - (at most 4,096).".into(),
            ));
        }
        let origin = origin_of(&spec.base_url);
        let own = ModelSpec::parse(&format!("{}:list", provider.as_str()), None).ok().map(|s| origin_of(&s.base_url));
        let kept_may_go = spec.key_variable().is_some_and(|variable| {
            own.as_deref() == Some(origin.as_str())
                || EndpointApprovals::user().is_some_and(|a| a.allows(variable, &origin))
        });
        if !kept_may_go {
            spec.api_key = None;
        }
        let keyed = spec.key_variable().is_some();
        let asks = self.questions.asks();
        tokio::spawn(async move {
            if !typed.is_empty() && keyed {
                spec.api_key = Some(ApiKey::new(typed));
            } else if spec.api_key.is_none() && kept_may_go {
                if let Ok(Some(key)) = secrets::lookup(&Secret::model_key(spec.provider.as_str())).await {
                    spec.api_key = Some(ApiKey::new(key));
                }
            }
            let listed = crate::model::listing::list_models(&spec).await.map(|names| (origin, names));
            let _ = asks.send(Ask::ModelsListed(listed));
        });
    }

    /// The endpoint's models reached the page, or why not.
    pub(super) fn models_listed(&mut self, listed: Result<(String, Vec<String>), String>) {
        let settings = match listed {
            Ok((origin, names)) => {
                let names: Vec<String> = names.iter().map(|n| consent::one_line_max(n, 200)).collect();
                json!({"models": names, "origin": consent::one_line_max(&origin, 300)})
            }
            Err(why) => {
                tracing::info!("the model list was not read: {}", say(&why));
                json!({"list_error": consent::one_line_max(&why, 600)})
            }
        };
        self.shell(ShellCommand::ModelSettings { settings });
    }

    /// The person forgets the kept key of `provider` (the page shows what is kept again).
    pub(super) fn forget_model_key(&mut self, provider: &str) {
        let Some(provider) = KEYED.into_iter().find(|p| p.as_str() == provider) else { return };
        let asks = self.questions.asks();
        let word = provider.as_str();
        tokio::spawn(async move {
            let outcome = secrets::delete(&Secret::model_key(word)).await;
            let text = match outcome {
                Ok(true) => format!("The {word} key is forgotten."),
                Ok(false) => format!("No {word} key was kept."),
                Err(e) => format!("The {word} key could not be forgotten: {e}"),
            };
            let _ = asks.send(Ask::ModelSettings(json!({"note": consent::one_line_max(&text, 400), "refresh": true})));
        });
    }

    /// Shows the page's contents (or a note, then the contents again).
    pub(super) fn show_model_settings(&mut self, settings: Value) {
        let refresh = settings["refresh"] == true;
        self.shell(ShellCommand::ModelSettings { settings });
        if refresh {
            self.open_model_settings();
        }
    }

    fn model_settings_failed(&mut self, reason: String) {
        tracing::warn!("the model settings were not saved: {}", say(&reason));
        self.shell(ShellCommand::ModelSettings { settings: json!({"error": consent::one_line_max(&reason, 1000)}) });
    }
}

/// Keeps the typed key (else reads the kept one when the environment gives none) and makes
/// the model.
async fn ready_model(mut spec: ModelSpec, typed: String, unwritten: Option<String>) -> Result<Saved, String> {
    let secret = Secret::model_key(spec.provider.as_str());
    let mut kept = None;
    if !typed.is_empty() {
        let place = secrets::store(&secret, &typed).await.map_err(|e| format!("the key could not be kept: {e}"))?;
        kept = Some(place.to_string());
        spec.api_key = Some(ApiKey::new(typed));
    } else if spec.api_key.is_none() && spec.key_variable().is_some() {
        match secrets::lookup(&secret).await {
            Ok(Some(key)) => spec.api_key = Some(ApiKey::new(key)),
            Ok(None) => {}
            Err(e) => tracing::debug!("no kept key: {e}"),
        }
        // The provider's own endpoint answers nothing without a key; another (a local server
        // speaking OpenAI's format) may need none.
        let own = ModelSpec::parse(&format!("{}:{}", spec.provider.as_str(), spec.name), None)
            .is_ok_and(|s| origin_of(&s.base_url) == origin_of(&spec.base_url));
        if spec.api_key.is_none() && own {
            return Err(format!(
                "Type your {} API key: none is kept, and {} is not set.",
                spec.provider.as_str(),
                spec.key_variable().unwrap_or_default()
            ));
        }
    }
    let model = spec.build().map_err(|e| e.to_string())?;
    Ok(Saved { model, kept, unwritten })
}
