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
use crate::install::{PathKind, Setting};

/// The mark of a field that takes a path (`directory` or `file`), for the shell's chooser.
const PATH_MARK: &str = "x-mcp-apps-host-path";

/// Installs with the person's answers (`KEY`, value); says what was done, or why not.
pub(crate) type Perform = Box<dyn FnOnce(Vec<(String, String)>) -> Result<String, String> + Send>;

/// What `open` hands the app: what will run, its settings, and how to install with answers.
pub(crate) struct InstallRequest {
    /// The server's name in the config file.
    pub name: String,
    /// What will run, whole (`Runs`, `Environment`, `Package`, `Signature`, ...), and the
    /// warnings about it.
    pub agreement: crate::install::Agreement,
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

    /// Whether a request waits in it, not yet shown.
    pub(crate) fn is_full(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }
}

/// A setting's key as words for its label: `notes_dir` and `NOTES_DIR` read "Notes dir",
/// `apiKey` "Api key" (the shell's forms do the same for a schema without titles).
fn words_of(key: &str) -> String {
    let mut words = String::new();
    let mut last: Option<char> = None;
    for c in key.chars() {
        match c {
            '_' | '-' | '.' | ' ' => {
                if !words.ends_with(' ') && !words.is_empty() {
                    words.push(' ');
                }
            }
            c if c.is_uppercase() && last.is_some_and(|l| l.is_lowercase() || l.is_ascii_digit()) => {
                words.push(' ');
                words.extend(c.to_lowercase());
            }
            c => words.extend(c.to_lowercase()),
        }
        last = Some(c);
    }
    let words = words.trim();
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => key.to_owned(),
    }
}

/// The settings as the form dialog's schema (secrets in a field that hides what is typed).
fn schema(settings: &[Setting]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for s in settings {
        let kind = if s.number.is_some() { "number" } else { "string" };
        // Labelled by its title, else by its key in words (`notes_dir` reads "Notes dir").
        let title = if s.title.is_empty() { words_of(&s.key) } else { s.title.clone() };
        let mut field = json!({ "type": kind, "title": title });
        if s.multiple {
            // Several values: one a line in the form, each its own answer.
            field = json!({ "type": "array", "items": { "type": kind }, "title": title });
        }
        // A bundle's description leads with its title, which is the label already.
        let description = s.description.strip_prefix(s.title.as_str()).filter(|_| !s.title.is_empty());
        let description = description.map_or(s.description.as_str(), |d| d.trim_start_matches(':').trim_start());
        if !description.is_empty() {
            field["description"] = json!(consent::one_line_max(description, 300));
        }
        if let Some(d) = s.default.as_ref().filter(|_| !s.secret) {
            let value = |d: &str| match (s.number.is_some(), d.parse::<f64>()) {
                (true, Ok(n)) => json!(n),
                _ => json!(d),
            };
            field["default"] = match s.multiple {
                true => Value::Array(d.split(crate::install::SEP).map(value).collect()),
                false => value(d),
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
        if let Some(kind) = s.path {
            // The shell puts a "Choose…" beside it (the host's own form only).
            let kind = match kind {
                PathKind::Directory => "directory",
                PathKind::File => "file",
            };
            field[PATH_MARK] = json!(kind);
        }
        if s.required {
            required.push(s.key.clone());
        }
        properties.insert(s.key.clone(), field);
    }
    json!({ "type": "object", "properties": properties, "required": required })
}

/// The form's answers as `(KEY, value)` pairs (empty fields left out); a setting with several
/// values gives a pair each, as `--set KEY=a --set KEY=b` does.
fn answers(content: &Map<String, Value>) -> Vec<(String, String)> {
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    content
        .iter()
        .flat_map(|(k, v)| {
            let values: Vec<String> = match v {
                Value::Array(items) => items.iter().filter_map(text).collect(),
                v => text(v).into_iter().collect(),
            };
            values.into_iter().filter(|t| !t.is_empty()).map(|t| (k.clone(), t))
        })
        .collect()
}

impl Controller {
    /// Shows the install request of the run, if it has one (once).
    pub(super) fn show_install_request(&mut self) {
        let Some(request) = self.options.launch.install.as_ref().and_then(InstallSlot::take) else { return };
        let dialog = self.questions.next_id();
        let subject: Vec<String> =
            vec![format!("{} (into {})", consent::one_line_max(&request.name, 80), request.config.display())];
        let mut message = if request.settings.is_empty() {
            "It needs no settings. Install it only if you trust where it comes from: it runs with your rights."
                .to_owned()
        } else {
            "Fill in its settings. Install it only if you trust where it comes from: it runs with your rights."
                .to_owned()
        };
        if !request.agreement.warnings.is_empty() {
            message.push_str(" Read the warnings: parts of what it runs can run other code.");
        }
        // Said before the yes: the install would be refused after it.
        let taken = crate::install::config_file::entries(&request.config)
            .is_ok_and(|entries| entries.iter().any(|e| e.name == request.name));
        if taken {
            message.push_str(&format!(
                " A server named \"{}\" is in your config file already, so this one cannot be installed under that \
                 name: remove or rename that one in the servers editor first.",
                consent::one_line_max(&request.name, 80)
            ));
        }
        self.shell(ShellCommand::Elicit {
            dialog,
            server: "mcp-apps-host".into(),
            message,
            title: "Install this server?".into(),
            subject,
            source: Some("You opened it from outside the app (a link, a bundle or a server.json)".into()),
            url: None,
            schema: Some(schema(&request.settings)),
            host: true,
            // Everything that will run, whole, in a block that wraps and scrolls: nothing of
            // what the person agrees to is cut.
            detail: Some(request.agreement.text()),
            warnings: request.agreement.warnings.clone(),
        });
        tracing::info!(server = %request.name, "asking the person whether to install it");
        self.questions.install_asked(dialog, request);
    }

    /// The install dialog's "Choose…": a native chooser opens for `field`, only while the host's
    /// own install dialog is open (no server's question gets one).
    pub(super) fn choose_path(&mut self, field: String, directory: bool) {
        if !self.questions.install_open() {
            tracing::warn!("a file chooser was asked for with no install dialog open: not opened");
            return;
        }
        let _ = self
            .ui
            .send_event(super::window::UserEvent::ChooseFile(super::window::Choice::Setting { field, directory }));
    }

    /// The chooser's answer goes into its field, if the install dialog is still open.
    pub(super) fn path_chosen(&mut self, field: String, path: String) {
        if self.questions.install_open() {
            self.shell(ShellCommand::PathChosen { field, path: consent::one_line_max(&path, 4096) });
        }
    }

    /// The person's answer to the install dialog (`true` when it was that dialog).
    pub(super) fn install_answered(&mut self, dialog: u64, action: &str, content: &Map<String, Value>) -> bool {
        let Some(request) = self.questions.install_answered(dialog) else { return false };
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
                if self.options.launch.config.is_none() {
                    self.options.launch.config = Some(config.clone());
                }
                self.apply_config(&config);
                // The status line follows the new server's start (what was written where is
                // in the log, and in the servers page).
                if self.servers.names().contains(&name) {
                    self.say_servers_of(Some(vec![name]));
                }
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
            title: String::new(),
            description: String::new(),
            required: false,
            secret: false,
            default: None,
            choices: Vec::new(),
            number: None,
            multiple: false,
            path: None,
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
        assert_eq!(s["properties"]["TOKEN"]["title"], "Token", "a key without a title is labelled in words");
        let titled = Setting {
            title: "Notes folder".into(),
            description: "Notes folder: where your notes are (a directory)".into(),
            ..setting("notes_dir")
        };
        let s = schema(&[titled, setting("notes_dir2"), setting("apiKey")]);
        assert_eq!(s["properties"]["notes_dir"]["title"], "Notes folder", "a bundle's title is the label, not its key");
        assert_eq!(s["properties"]["notes_dir"]["description"], "where your notes are (a directory)");
        assert_eq!(s["properties"]["notes_dir2"]["title"], "Notes dir2");
        assert_eq!(s["properties"]["apiKey"]["title"], "Api key");
        let content = json!({"TOKEN": "t0k", "PORT": 9000, "MODE": "", "X": null});
        let got = answers(content.as_object().unwrap());
        assert_eq!(got, vec![("PORT".to_owned(), "9000".to_owned()), ("TOKEN".to_owned(), "t0k".to_owned())]);
    }

    #[test]
    fn a_setting_with_several_values_is_a_list_and_each_value_an_answer() {
        let default = ["/home/a", "/home/b"].join(&crate::install::SEP.to_string());
        let dirs = Setting { multiple: true, required: true, default: Some(default), ..setting("dirs") };
        let s = schema(&[dirs]);
        assert_eq!(s["properties"]["dirs"]["type"], "array");
        assert_eq!(s["properties"]["dirs"]["items"], json!({"type": "string"}));
        assert_eq!(s["properties"]["dirs"]["default"], json!(["/home/a", "/home/b"]));
        let content = json!({"dirs": ["/x", "", "/y z"]});
        let got = answers(content.as_object().unwrap());
        assert_eq!(got, vec![("dirs".to_owned(), "/x".to_owned()), ("dirs".to_owned(), "/y z".to_owned())]);
    }
}
