//! Installing a server the person opened from outside (an install link from the browser, an
//! `.mcpb` bundle or a `server.json` from the file manager) when no terminal can ask: the app
//! shows what will run and the settings it needs in its own dialog (the form dialog of a
//! server's question, titled as the host's), and installs only on the person's yes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use super::shell::ShellCommand;
use super::Controller;
use crate::consent;
use crate::install::Setting;

/// Installs with the person's answers (`KEY`, value); says what was done, or why not.
pub(crate) type Perform = Box<dyn FnOnce(Vec<(String, String)>) -> Result<String, String> + Send>;

/// What `open` hands the app: what will run, its settings, and how to install with answers.
pub(crate) struct InstallRequest {
    /// The server's name in the config file.
    pub name: String,
    /// What will run, as `(label, value)` lines (`Command`, `Package`, `URL`, `Signature`, ...).
    pub summary: Vec<(String, String)>,
    pub settings: Vec<Setting>,
    /// The config file it goes into.
    pub config: PathBuf,
    /// Installs with the answers.
    pub perform: Perform,
}

/// The install request of a run, taken once the shell can show it.
#[derive(Clone, Default)]
pub(crate) struct InstallSlot(Arc<Mutex<Option<InstallRequest>>>);

impl std::fmt::Debug for InstallSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstallSlot").finish_non_exhaustive()
    }
}

impl InstallSlot {
    pub(crate) fn new(request: InstallRequest) -> Self {
        Self(Arc::new(Mutex::new(Some(request))))
    }

    fn take(&self) -> Option<InstallRequest> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The settings as the form dialog's schema (secrets in a field that hides what is typed).
fn schema(settings: &[Setting]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for s in settings {
        let mut field = json!({ "type": if s.number.is_some() { "number" } else { "string" }, "title": s.key });
        if !s.description.is_empty() {
            field["description"] = json!(consent::one_line_max(&s.description, 300));
        }
        if let Some(d) = s.default.as_ref().filter(|_| !s.secret) {
            field["default"] = match (s.number.is_some(), d.parse::<f64>()) {
                (true, Ok(n)) => json!(n),
                _ => json!(d),
            };
        }
        if !s.choices.is_empty() {
            field["enum"] = json!(s.choices);
        }
        if let Some((min, max)) = s.number {
            if let Some(min) = min {
                field["minimum"] = json!(min);
            }
            if let Some(max) = max {
                field["maximum"] = json!(max);
            }
        }
        if s.secret {
            field["format"] = json!("password");
        }
        if s.required {
            required.push(s.key.clone());
        }
        properties.insert(s.key.clone(), field);
    }
    json!({ "type": "object", "properties": properties, "required": required })
}

/// The form's answers as `(KEY, value)` pairs (empty fields left out).
fn answers(content: &Map<String, Value>) -> Vec<(String, String)> {
    content
        .iter()
        .filter_map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return None,
            };
            (!text.is_empty()).then(|| (k.clone(), text))
        })
        .collect()
}

impl Controller {
    /// Shows the install request of the run, if it has one (once).
    pub(super) fn show_install_request(&mut self) {
        let Some(request) = self.options.install.as_ref().and_then(InstallSlot::take) else { return };
        let dialog = self.next_dialog;
        self.next_dialog += 1;
        let mut subject: Vec<String> =
            vec![format!("{} (into {})", consent::one_line_max(&request.name, 80), request.config.display())];
        subject.extend(
            request.summary.iter().map(|(label, value)| format!("{label}: {}", consent::one_line_max(value, 400))),
        );
        let message = if request.settings.is_empty() {
            "It needs no settings. Install it only if you trust where it comes from: it runs with your rights."
                .to_owned()
        } else {
            "Fill in its settings. Install it only if you trust where it comes from: it runs with your rights."
                .to_owned()
        };
        self.shell(ShellCommand::Elicit {
            dialog,
            server: "mcp-apps-host".into(),
            message,
            title: "Install this server?".into(),
            subject,
            source: Some("You opened it from outside the app (a link, a bundle or a server.json)".into()),
            url: None,
            schema: Some(schema(&request.settings)),
        });
        tracing::info!(server = %request.name, "asking the person whether to install it");
        self.pending_install = Some((dialog, request));
    }

    /// The person's answer to the install dialog (`true` when it was that dialog).
    pub(super) fn install_answered(&mut self, dialog: u64, action: &str, content: &Map<String, Value>) -> bool {
        if self.pending_install.as_ref().is_none_or(|(d, _)| *d != dialog) {
            return false;
        }
        let Some((_, request)) = self.pending_install.take() else { return true };
        if action != "accept" {
            tracing::info!(server = %request.name, "was not installed (you said no)");
            self.status(&format!("{} was not installed (you said no)", request.name), false);
            return true;
        }
        let (config, name) = (request.config.clone(), request.name.clone());
        let answers = answers(content);
        // Unpacking and writing a file: a moment of the loop's thread, on the person's click.
        let perform = request.perform;
        match tokio::task::block_in_place(move || perform(answers)) {
            Ok(done) => {
                tracing::info!(server = %name, "{done}");
                self.status(&consent::one_line_max(&done, 300), false);
                if self.options.config.is_none() {
                    self.options.config = Some(config.clone());
                }
                self.apply_config(&config);
            }
            Err(e) => {
                let line = format!("{name} was not installed: {}", consent::one_line_max(&e, 300));
                tracing::warn!("{line}");
                self.status(&line, true);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(key: &str) -> Setting {
        Setting {
            key: key.into(),
            description: String::new(),
            required: false,
            secret: false,
            default: None,
            choices: Vec::new(),
            number: None,
            multiple: false,
        }
    }

    #[test]
    fn settings_become_a_form_and_its_answers_the_settings() {
        let token = Setting { secret: true, required: true, default: Some("never shown".into()), ..setting("TOKEN") };
        let port =
            Setting { number: Some((Some(1.0), Some(65535.0))), default: Some("8080".into()), ..setting("PORT") };
        let mode = Setting { choices: vec!["a".into(), "b".into()], ..setting("MODE") };
        let s = schema(&[token, port, mode]);
        assert_eq!(s["required"], json!(["TOKEN"]));
        assert_eq!(s["properties"]["TOKEN"]["format"], "password");
        assert!(s["properties"]["TOKEN"].get("default").is_none(), "a secret's default is not shown");
        assert_eq!(
            (s["properties"]["PORT"]["default"].as_f64(), s["properties"]["PORT"]["maximum"].as_f64()),
            (Some(8080.0), Some(65535.0))
        );
        assert_eq!(s["properties"]["MODE"]["enum"], json!(["a", "b"]));
        let content = json!({"TOKEN": "t0k", "PORT": 9000, "MODE": "", "X": null});
        let got = answers(content.as_object().unwrap());
        assert_eq!(got, vec![("PORT".to_owned(), "9000".to_owned()), ("TOKEN".to_owned(), "t0k".to_owned())]);
    }
}
