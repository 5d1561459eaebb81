//! The shell protocol, typed both ways. What Rust tells the shell page
//! (`window.__mcpShell.dispatch`) is one enum, [`ShellCommand`], serialized in one place
//! ([`ShellCommand::to_text`]); what the shell tells Rust is [`ShellMessage`].
//! Messages for Views do not pass the shell: each View has a webview of its own (`desktop/frames/`).
//!
//! Every text a server or View controls is already made safe for a person by the controller
//! (see [`crate::consent`]); the shell puts it into `textContent` only. The command reaches the
//! page as a JSON string literal parsed there, never as an object literal in script.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::{DisplayMode, Theme};

/// A server's resource the person attached to a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct Attachment {
    /// The server.
    pub server: String,
    /// The resource.
    pub uri: String,
}

/// A key the person typed into the shell: never shown by `Debug` (a logged message does not
/// carry it).
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub(crate) struct TypedKey(pub String);

impl std::fmt::Debug for TypedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_empty() { "TypedKey(none)" } else { "TypedKey(..)" })
    }
}

/// One command for the shell page; `op` names it (kebab-case), the rest are its fields.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[serde(tag = "op", rename_all = "kebab-case")]
pub(crate) enum ShellCommand {
    /// The status line.
    Status { text: String, error: bool },
    /// The shell's theme.
    Theme { theme: Theme },
    /// Show the developer panel (preview).
    Dev,
    /// A card with text: a plain tool's result, or an error (replacing `view`'s pending card).
    Text {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        view: Option<String>,
        title: String,
        text: String,
        error: bool,
    },
    /// A card waiting for its View, with a Cancel button.
    Pending { view: String, title: String },
    /// A View's card, with the slot its webview is placed over (`desktop/frames/`).
    Mount {
        view: String,
        /// The View's sandbox origin (said in the card's tooltip).
        origin: String,
        title: String,
        server: String,
        /// The first inline height.
        height: f64,
        /// The sleeping View whose card it takes, in place (see `hibernation.rs`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replaces: Option<String>,
    },
    /// A View sleeps: its card stays, with `text` in its slot. A restarted shell gets the card
    /// made again (`title` and `height` given).
    Asleep {
        view: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        height: Option<f64>,
        text: String,
    },
    /// An inline View's new height.
    Resize { view: String, height: f64 },
    /// Lay a View out in a display mode.
    Display { view: String, mode: DisplayMode },
    /// Remove a View's card (or its pending card).
    Unmount { view: String },
    /// A View's web process does not respond (`hung`), or responds again: the card says so and
    /// offers to wait or to stop it.
    Hung { view: String, hung: bool, text: String },
    /// The tool picker: servers with their status and tools; with `editor` (the app's servers
    /// come from a config file) the servers editor: `{config, entries: [{name, disabled, what}],
    /// error}`, every text already made safe for a person.
    Servers {
        servers: Vec<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        editor: Option<Value>,
    },
    /// The first-run welcome (no server yet), or its end (`shown` false). `config` is the file
    /// the demo server is written into.
    Welcome { shown: bool, config: String },
    /// A server's log: the last lines it wrote on stderr, made safe for a person.
    ServerLog { server: String, lines: Vec<String> },
    /// The model settings page: shown with `settings` (see `model_settings.rs`), closed with
    /// `{"closed": true}`, or told why a save failed with `{"error"}`.
    ModelSettings { settings: Value },
    /// A record of the developer panel's live log.
    Log { record: Value },
    /// The CSP a View was granted, for the developer panel.
    Csp { view: String, header: String, granted: Value, rejected: Vec<Value> },
    /// A View's diagnostic, for the developer panel.
    Diagnostic { view: String, kind: String, detail: Value },
    /// A message a View added to the conversation.
    Message { view: String, from: String, role: String, text: String },
    /// A View's latest model context (`None`: cleared).
    Context { view: String, from: String, text: Option<String> },
    /// A model is configured: the prompt box is shown.
    ChatReady { model: String },
    /// The person sent `text` with no model chosen: it goes back into the composer (Model
    /// settings opens beside it).
    NoModel { text: String },
    /// A turn of the person's (or an App's: `from`), or the model's turn starting.
    Chat {
        role: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<String>,
        text: String,
    },
    /// More of the model's answer.
    ChatText { text: String },
    /// The stored conversations (`{id, title}`), newest first.
    Conversations { list: Vec<Value> },
    /// The conversation's cards leave the stream (another one is reopened).
    ChatClear,
    /// The list of keyboard shortcuts (F1).
    Shortcuts,
    /// The test interface's `readWindow`: the shell says what the person sees.
    ReadWindow { read: u64 },
    /// The About dialog: the version, the app's license and what it is built from.
    About { version: String, license: String, components: Vec<Value> },
    /// The model's turn ended (with the error that ended it).
    ChatEnd {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The developer panel: a View's own tools (`tools`: name and description each, made safe
    /// for a person), or what a call of one came to (`text`).
    ViewTools {
        view: String,
        tools: Vec<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// What the composer offers: the servers' prompts (slash commands) and resources (to
    /// attach), every text already made safe for a person.
    Commands { prompts: Vec<Value>, resources: Vec<Value> },
    /// A yes/no consent dialog.
    Confirm {
        dialog: u64,
        title: String,
        subject: Vec<String>,
        source: String,
        detail: String,
        accept: String,
        /// A checkbox's label: yes for the rest of the session too.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remember: Option<String>,
        /// Who asks (a server's name, or the conversation): the shell takes askers in turn, so
        /// one asker's questions never wait in front of another's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        asker: Option<String>,
    },
    /// A server's question: a form, or a website to open.
    Elicit {
        dialog: u64,
        server: String,
        message: String,
        title: String,
        subject: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        schema: Option<Value>,
        /// The host's own form (the install dialog), not a server's: its folder and file
        /// settings get a native chooser.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        host: bool,
        /// The install dialog's whole command line and environment, escaped: shown in a block
        /// that wraps and scrolls, never cut.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// What in it can run other code, in words, beside it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
    },
    /// The path the person chose for a field of the install dialog.
    PathChosen { field: String, path: String },
    /// A dialog nobody waits for any more.
    Dismiss { dialog: u64 },
}

impl ShellCommand {
    /// The command as JSON text (the one place commands are serialized).
    pub(crate) fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            tracing::error!("a shell command could not be serialized: {e}");
            r#"{"op":"none"}"#.to_owned()
        })
    }

    /// The `op` of this command.
    #[cfg(test)]
    fn op(&self) -> String {
        serde_json::to_value(self).ok().and_then(|v| v["op"].as_str().map(str::to_owned)).unwrap_or_default()
    }
}

/// What the shell tells Rust.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ShellMessage {
    /// The shell page is loaded and can take commands.
    Ready,
    /// The shell's heartbeat: its web process runs (see `supervisor.rs`).
    Alive,
    /// The person answered a consent dialog.
    Answer {
        /// The dialog.
        dialog: u64,
        /// Yes or no.
        accepted: bool,
        /// The person ticked "for the rest of the session" (dialogs that offer it).
        #[serde(default)]
        remember: bool,
    },
    /// The person picked a theme.
    Theme {
        /// The theme.
        theme: crate::protocol::Theme,
    },
    /// The person called a tool from the picker.
    CallTool {
        /// The tool's server (`None`: the one server that has a tool of that name).
        #[serde(default)]
        server: Option<String>,
        /// The tool.
        tool: String,
        /// Its arguments (checked against the schema by the shell; the server checks again).
        #[serde(default)]
        arguments: serde_json::Map<String, serde_json::Value>,
    },
    /// The person answered a server's elicitation.
    ElicitAnswer {
        /// The dialog.
        dialog: u64,
        /// `accept`, `decline` or `cancel`.
        action: String,
        /// The form's values (for `accept`).
        #[serde(default)]
        content: serde_json::Map<String, serde_json::Value>,
    },
    /// The person asked to sign in to a server.
    SignIn {
        /// The server.
        server: String,
    },
    /// The person cancelled a sign-in in progress.
    CancelSignIn {
        /// The server.
        server: String,
    },
    /// The person gave up waiting for a server to start.
    CancelStart {
        /// The server.
        server: String,
    },
    /// The person asked for the demo server from the welcome: written into the config file,
    /// then started.
    AddDemo,
    /// The person adds a server in the servers editor.
    AddServer {
        /// Its name in the config file (empty: made from the command or URL).
        #[serde(default)]
        name: String,
        /// A command line (POSIX quoting) or an `https://` URL.
        line: String,
    },
    /// The person removes a server from the config file.
    RemoveServer {
        /// The server.
        server: String,
    },
    /// The person enables or disables a server (`"disabled": true` in its entry).
    EnableServer {
        /// The server.
        server: String,
        /// Enabled (else disabled).
        enabled: bool,
    },
    /// The person asks for a server's log.
    ServerLog {
        /// The server.
        server: String,
    },
    /// The install dialog's "Choose…" beside a folder or file setting: a native chooser opens
    /// (only while the host's own install dialog is open).
    ChoosePath {
        /// The form field the path goes into.
        field: String,
        /// A folder (else a file).
        directory: bool,
    },
    /// The native chooser's answer, for the install dialog's field (sent by the window, not the
    /// page).
    PathChosen {
        /// The form field.
        field: String,
        /// The path the person chose.
        path: String,
    },
    /// The person opens the model settings page.
    ModelSettings,
    /// What the window shows, for the test interface's `readWindow` that asked with `read`.
    WindowRead {
        /// The request.
        read: u64,
        /// What the shell read.
        #[serde(default)]
        window: serde_json::Value,
    },
    /// The person starts a new conversation (its button, or Ctrl+N).
    NewConversation,
    /// The person asks who made this app (the About dialog).
    About,
    /// The person saves the model settings: the conversation's model, where it is, and a key
    /// (empty: keep the stored one).
    SaveModel {
        /// `openai`, `anthropic` or `ollama`.
        provider: String,
        /// The model's name at the endpoint.
        name: String,
        /// The API's base URL (empty: the provider's own).
        #[serde(default)]
        url: String,
        /// The key the person typed.
        #[serde(default)]
        key: TypedKey,
    },
    /// The person asks which models the endpoint offers, which tests the connection too (the
    /// fields as in [`ShellMessage::SaveModel`], nothing saved).
    ListModels {
        /// `openai`, `anthropic` or `ollama`.
        provider: String,
        /// The API's base URL (empty: the provider's own).
        #[serde(default)]
        url: String,
        /// The key the person typed.
        #[serde(default)]
        key: TypedKey,
    },
    /// The person forgets the stored key of `provider`.
    ForgetModelKey {
        /// `openai` or `anthropic`.
        provider: String,
    },
    /// The person changes a server's entry in the servers editor: what it runs or reaches, and
    /// its name.
    EditServer {
        /// The server (its key in the config file).
        server: String,
        /// Its new name (empty: unchanged).
        #[serde(default)]
        name: String,
        /// A command line (POSIX quoting) or an `https://` URL.
        line: String,
    },
    /// The person imports the servers of another config file (a path typed, or chosen in the
    /// file chooser).
    ImportConfig {
        /// The file.
        path: String,
    },
    /// The person asks for the file chooser to pick a config file to import.
    ChooseImport,
    /// The person asks to read the config file again (after fixing it) and apply it.
    ReloadConfig,
    /// The person asked to restart a server now.
    Restart {
        /// The server.
        server: String,
    },
    /// The person set when the model's calls to a server ask first (`always`, `changes`,
    /// `never`: see `crate::conversation::Approval`).
    Approval {
        /// The server.
        server: String,
        /// The mode.
        mode: String,
    },
    /// The developer panel sends a notification to a View as given.
    DevSend {
        /// The View.
        view: String,
        /// `ui/notifications/tool-input` and the like.
        method: String,
        /// Its params.
        #[serde(default)]
        params: serde_json::Value,
    },
    /// The developer panel lists a View's own tools.
    DevViewTools {
        /// The View.
        view: String,
    },
    /// The developer panel calls one of a View's own tools.
    DevCallViewTool {
        /// The View.
        view: String,
        /// The tool.
        name: String,
        /// Its arguments.
        #[serde(default)]
        arguments: serde_json::Map<String, Value>,
    },
    /// The developer panel changes a View's host context.
    DevContext {
        /// The View.
        view: String,
        /// The fields to change.
        context: serde_json::Value,
    },
    /// The developer panel asks to reload every View.
    Reload,
    /// The developer panel (its button, F12 or Ctrl+Shift+I) asks for WebKit's web inspector.
    /// Honoured only in `preview`: `run` refuses it, and its webview has no developer extras.
    Inspector,
    /// The Views near sight: in it, or within its height above or below (`hibernation.rs`).
    Sight {
        /// Their ids.
        near: Vec<String>,
    },
    /// The person closed a View's card.
    Close {
        /// The View.
        view: String,
    },
    /// The person chose to wait for a View that does not respond.
    Wait {
        /// The View.
        view: String,
    },
    /// The person chose to stop a View that does not respond (and its server's other Views).
    StopApp {
        /// The View.
        view: String,
    },
    /// The person stops the model's turn under way.
    StopTurn,
    /// The person reopens a stored conversation.
    Reopen {
        /// Its id.
        id: String,
    },
    /// The person's prompt for the model.
    Prompt {
        /// What they wrote.
        text: String,
        /// Resources they attached: `{server, uri}` each.
        #[serde(default)]
        attach: Vec<Attachment>,
        /// It replaces their last prompt (they edited it): what came after goes.
        #[serde(default)]
        edit: bool,
    },
    /// The person asks for the last answer again.
    Retry,
    /// The person switches the conversation to another model of the same endpoint.
    SwitchModel {
        /// The model's name at the endpoint (`gpt-4.1`).
        name: String,
    },
    /// The person gives a stored conversation a title.
    RenameConversation {
        /// Its id.
        id: String,
        /// The title.
        title: String,
    },
    /// The person deletes a stored conversation.
    DeleteConversation {
        /// Its id.
        id: String,
    },
    /// The person ran a server's prompt (a slash command) with these arguments.
    RunPrompt {
        /// The server.
        server: String,
        /// The prompt's name.
        name: String,
        /// Its arguments (strings, as MCP prompts take them).
        #[serde(default)]
        arguments: serde_json::Map<String, Value>,
    },
    /// The person took a View out of fullscreen or picture-in-picture.
    Inline {
        /// The View.
        view: String,
    },
    /// A diagnostic from a View's proxy page (CSP violation, uncaught error, console message), on
    /// its own IPC line: never from the shell.
    #[serde(skip_deserializing)]
    Diagnostic {
        /// The View.
        view: String,
        /// `{kind, detail}` as the proxy reported it.
        data: serde_json::Value,
    },
    /// A View's proxy page dropped a message of the View (not serialisable), on its own line.
    #[serde(skip_deserializing)]
    Dropped {
        /// The View.
        view: String,
        /// Why.
        reason: String,
    },
    /// A dialog (consent or a server's question) is open, or the last one closed: while one is
    /// open the shell holds the keyboard and no View may take it (`desktop/frames/`).
    Keyboard {
        /// A dialog is open.
        dialog: bool,
    },
    /// Where the Views' slots are, in the rectangle they are clipped to (`desktop/frames/`).
    Frames {
        /// The clip rectangle: the stream, or the window in fullscreen and pip.
        clip: super::window::Rect,
        /// The slots in sight.
        slots: Vec<super::window::Slot>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn every_command() -> Vec<ShellCommand> {
        let s = || "x".to_owned();
        vec![
            ShellCommand::Status { text: s(), error: true },
            ShellCommand::Commands { prompts: vec![serde_json::json!({"name": "p"})], resources: Vec::new() },
            ShellCommand::ViewTools { view: s(), tools: Vec::new(), text: Some(s()) },
            ShellCommand::Theme { theme: Theme::Dark },
            ShellCommand::Dev,
            ShellCommand::Text { view: Some(s()), title: s(), text: s(), error: false },
            ShellCommand::Pending { view: s(), title: s() },
            ShellCommand::Mount { view: s(), origin: s(), title: s(), server: s(), height: 427.0, replaces: Some(s()) },
            ShellCommand::Asleep { view: s(), title: Some(s()), height: Some(300.0), text: s() },
            ShellCommand::Hung { view: s(), hung: true, text: s() },
            ShellCommand::Resize { view: s(), height: 300.0 },
            ShellCommand::Display { view: s(), mode: DisplayMode::Pip },
            ShellCommand::Unmount { view: s() },
            ShellCommand::Servers { servers: vec![json!({"name": "a"})], editor: Some(json!({"config": "c"})) },
            ShellCommand::Welcome { shown: true, config: s() },
            ShellCommand::ServerLog { server: s(), lines: vec![s()] },
            ShellCommand::ModelSettings { settings: json!({"closed": true}) },
            ShellCommand::Log { record: json!({"dir": "rejected"}) },
            ShellCommand::Csp { view: s(), header: s(), granted: json!({}), rejected: vec![] },
            ShellCommand::Diagnostic { view: s(), kind: s(), detail: json!(null) },
            ShellCommand::Message { view: s(), from: s(), role: "user".into(), text: s() },
            ShellCommand::Context { view: s(), from: s(), text: None },
            ShellCommand::Confirm {
                dialog: 1,
                title: s(),
                subject: vec![s()],
                source: s(),
                detail: s(),
                accept: "Open".into(),
                remember: Some(s()),
                asker: None,
            },
            ShellCommand::Elicit {
                dialog: 2,
                server: s(),
                message: s(),
                title: s(),
                subject: vec![s()],
                source: None,
                url: Some(s()),
                schema: None,
                host: true,
                detail: Some(s()),
                warnings: vec![s()],
            },
            ShellCommand::Dismiss { dialog: 2 },
            ShellCommand::PathChosen { field: s(), path: s() },
            ShellCommand::ChatReady { model: s() },
            ShellCommand::NoModel { text: s() },
            ShellCommand::Chat { role: "user".into(), from: Some(s()), text: s() },
            ShellCommand::ChatText { text: s() },
            ShellCommand::Conversations { list: vec![json!({"id": "1-abc", "title": "t"})] },
            ShellCommand::ChatClear,
            ShellCommand::Shortcuts,
            ShellCommand::ReadWindow { read: 1 },
            ShellCommand::About { version: s(), license: s(), components: vec![json!(["a", "1", "MIT"])] },
            ShellCommand::ChatEnd { error: None },
        ]
    }

    #[test]
    fn every_command_round_trips_through_its_text() {
        for cmd in every_command() {
            let text = cmd.to_text();
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(value["op"], cmd.op(), "{text}");
            let back: ShellCommand = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(back.to_text(), text);
        }
    }

    #[test]
    fn the_shell_handles_every_command_and_no_other() {
        let shell = include_str!("../../assets/shell.js");
        let table = &shell[shell.find("var handlers = {").expect("the shell's handler table")..];
        let table = &table[..table.find("};").expect("its end")];
        for cmd in every_command() {
            let op = cmd.op();
            let key = if op.contains('-') { format!("\"{op}\":") } else { format!("{op}:") };
            assert!(table.contains(&key), "the shell has no handler for {op:?}");
        }
        let ops: Vec<String> = every_command().iter().map(ShellCommand::op).collect();
        let names = table
            .lines()
            .flat_map(|l| l.split(','))
            .filter_map(|part| {
                let name = part.trim().trim_start_matches("var handlers = {").trim().split(':').next()?.trim();
                (!name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '-')).then(|| name.to_owned())
            })
            .collect::<Vec<_>>();
        for name in names {
            assert!(ops.contains(&name), "the shell handles {name:?}, which Rust never sends");
        }
    }

    #[test]
    fn shell_messages_parse() {
        let m: ShellMessage = serde_json::from_str(r#"{"kind":"stop-app","view":"v1"}"#).unwrap();
        assert_eq!(m, ShellMessage::StopApp { view: "v1".into() });
        // A View's words come on its own line only: the shell cannot speak for a View.
        assert!(serde_json::from_str::<ShellMessage>(r#"{"kind":"view","view":"v1","msg":"{}"}"#).is_err());
        assert!(serde_json::from_str::<ShellMessage>(r#"{"kind":"diagnostic","view":"v1","data":{}}"#).is_err());
        let m: ShellMessage = serde_json::from_str(r#"{"kind":"inspector"}"#).unwrap();
        assert_eq!(m, ShellMessage::Inspector);
        let m: ShellMessage = serde_json::from_str(r#"{"kind":"prompt","text":"hi"}"#).unwrap();
        assert_eq!(m, ShellMessage::Prompt { text: "hi".into(), attach: Vec::new(), edit: false });
    }
}
