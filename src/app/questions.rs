//! The questions put to the person and waiting for an answer: consent dialogs of Views,
//! servers' elicitations, and the install dialog for a server opened from outside.

use super::*;

/// The open questions, and where new ones come from.
pub(super) struct Questions {
    /// Where servers and Views ask the person (see `dialogs.rs`).
    asks: mpsc::UnboundedSender<Ask>,
    /// Open consent dialogs: their View and where the answer goes (one per View at a time).
    dialogs: HashMap<u64, (ViewId, oneshot::Sender<bool>)>,
    /// The id of the next dialog (every dialog of the shell, of any kind).
    next_dialog: u64,
    /// Open elicitation dialogs: their server and where the answer goes.
    elicits: HashMap<u64, (String, oneshot::Sender<ElicitAnswer>)>,
    /// The shell commands of open elicitation dialogs, to show them again in a restarted shell.
    elicit_cmds: HashMap<u64, ShellCommand>,
    /// The install dialog shown for a server opened from outside, and what it installs.
    install: Option<(u64, install_request::InstallRequest)>,
}

impl Questions {
    pub(super) fn new(asks: mpsc::UnboundedSender<Ask>) -> Self {
        Self {
            asks,
            dialogs: HashMap::new(),
            next_dialog: 1,
            elicits: HashMap::new(),
            elicit_cmds: HashMap::new(),
            install: None,
        }
    }

    /// A new dialog's id (every dialog of the shell, of any kind).
    pub(super) fn next_id(&mut self) -> u64 {
        let id = self.next_dialog;
        self.next_dialog += 1;
        id
    }

    /// Where servers, Views and tasks send what they ask.
    pub(super) fn asks(&self) -> mpsc::UnboundedSender<Ask> {
        self.asks.clone()
    }

    /// A yes-or-no dialog is shown for `owner` (a View's id, `server:<name>` or `chat-<call>`).
    pub(super) fn consent_asked(&mut self, dialog: u64, owner: String, reply: oneshot::Sender<bool>) {
        self.dialogs.insert(dialog, (owner, reply));
    }

    /// Whether a yes-or-no dialog of `owner` is open.
    pub(super) fn consent_open_for(&self, owner: &str) -> bool {
        self.dialogs.values().any(|(o, _)| o == owner)
    }

    /// Whose yes-or-no dialog `dialog` is, if it is open.
    pub(super) fn consent_owner(&self, dialog: u64) -> Option<String> {
        self.dialogs.get(&dialog).map(|(owner, _)| owner.clone())
    }

    /// The open yes-or-no dialogs.
    pub(super) fn consent_dialogs(&self) -> Vec<u64> {
        self.dialogs.keys().copied().collect()
    }

    /// The dialog is answered or withdrawn: where its answer goes, if it was open.
    pub(super) fn consent_closed(&mut self, dialog: u64) -> Option<oneshot::Sender<bool>> {
        self.dialogs.remove(&dialog).map(|(_, reply)| reply)
    }

    /// Every yes-or-no dialog of `owner` is answered no; returns them (to dismiss).
    pub(super) fn refuse_consents_of(&mut self, owner: &str) -> Vec<u64> {
        let orphaned: Vec<u64> = self.dialogs.iter().filter(|(_, (o, _))| o == owner).map(|(d, _)| *d).collect();
        for dialog in &orphaned {
            if let Some((_, reply)) = self.dialogs.remove(dialog) {
                let _ = reply.send(false);
            }
        }
        orphaned
    }

    /// Every yes-or-no dialog but those in `keep` is answered no (the web content restarts).
    pub(super) fn refuse_consents_except(&mut self, keep: &HashSet<u64>) {
        for (dialog, (owner, reply)) in std::mem::take(&mut self.dialogs) {
            if keep.contains(&dialog) {
                self.dialogs.insert(dialog, (owner, reply));
            } else {
                let _ = reply.send(false);
            }
        }
    }

    /// A server's question (elicitation) is shown with `cmd`.
    pub(super) fn elicitation_asked(
        &mut self,
        dialog: u64,
        server: String,
        reply: oneshot::Sender<ElicitAnswer>,
        cmd: ShellCommand,
    ) {
        self.elicits.insert(dialog, (server, reply));
        self.elicit_cmds.insert(dialog, cmd);
    }

    /// A server's question is answered or withdrawn: its server and where the answer goes.
    pub(super) fn elicitation_answered(&mut self, dialog: u64) -> Option<(String, oneshot::Sender<ElicitAnswer>)> {
        self.elicit_cmds.remove(&dialog);
        self.elicits.remove(&dialog)
    }

    /// `server` is gone: its open questions are dropped (nobody waits for them); returns them.
    pub(super) fn drop_elicitations_of(&mut self, server: &str) -> Vec<u64> {
        let orphaned: Vec<u64> = self.elicits.iter().filter(|(_, (s, _))| s == server).map(|(d, _)| *d).collect();
        for dialog in &orphaned {
            self.elicits.remove(dialog);
            self.elicit_cmds.remove(dialog);
        }
        orphaned
    }

    /// The shell commands of the open servers' questions (a restarted shell shows them again).
    pub(super) fn elicitation_cmds(&self) -> Vec<ShellCommand> {
        self.elicit_cmds.values().cloned().collect()
    }

    /// No question waits for the person (the web process may be recycled).
    pub(super) fn none_open(&self) -> bool {
        self.dialogs.is_empty() && self.elicits.is_empty()
    }

    /// The install dialog is shown for `request`.
    pub(super) fn install_asked(&mut self, dialog: u64, request: install_request::InstallRequest) {
        self.install = Some((dialog, request));
    }

    /// Whether the install dialog is open.
    pub(super) fn install_open(&self) -> bool {
        self.install.is_some()
    }

    /// `dialog` was answered: what it installs, if it is the install dialog.
    pub(super) fn install_answered(&mut self, dialog: u64) -> Option<install_request::InstallRequest> {
        if self.install.as_ref().is_none_or(|(d, _)| *d != dialog) {
            return None;
        }
        self.install.take().map(|(_, request)| request)
    }
}

impl Controller {
    pub(super) fn on_ask(&mut self, ask: Ask) {
        match ask {
            Ask::Confirm { view, prompt, reply } => {
                // A View gets one question at a time, and none once it is gone: a flood of
                // prompts (or prompts answered after the View closed) must not act for it.
                let open = self.views.get(&view).is_some_and(|v| v.phase.is_open());
                if !open || self.questions.consent_open_for(&view) {
                    let why =
                        if open { "another question of this App waits for the person" } else { "the App is closed" };
                    tracing::warn!(view = %view, "consent request not shown: {why}");
                    let _ = reply.send(Answer::NotAsked(why.into()));
                    return;
                }
                let dialog = self.questions.next_id();
                let asker = self.views.get(&view).map(|v| v.server.clone());
                // The dialog answers yes or no; a dialog that goes unanswered (its View closed,
                // the person stopped it) was not the person's no.
                let (answered, rx) = oneshot::channel::<bool>();
                tokio::spawn(async move {
                    let answer = match rx.await {
                        Ok(true) => Answer::Yes,
                        Ok(false) => Answer::No,
                        Err(_) => Answer::NotAsked("the question went away before the person answered".into()),
                    };
                    let _ = reply.send(answer);
                });
                self.questions.consent_asked(dialog, view, answered);
                self.shell(ShellCommand::Confirm {
                    dialog,
                    title: prompt.title.to_owned(),
                    subject: prompt.subject,
                    source: prompt.source,
                    detail: prompt.detail,
                    accept: prompt.accept.to_owned(),
                    remember: None,
                    asker,
                });
            }
            Ask::Turn(input) => self.chat_input(input),
            Ask::Commands(cmd) => self.keep_commands(cmd),
            Ask::ModelSettings(settings) => self.show_model_settings(settings),
            Ask::ModelsListed(listed) => self.models_listed(listed),
            Ask::ModelSaved(outcome) => self.model_saved(outcome),
            Ask::Sample { server, text, reply } => {
                let dialog = self.questions.next_id();
                self.questions.consent_asked(dialog, format!("server:{server}"), reply);
                let label = self.label(&server);
                self.shell(ShellCommand::Confirm {
                    dialog,
                    title: "Let this server ask the model?".into(),
                    subject: vec![consent::one_line_max(&label, 80)],
                    source: "The server wants the model to answer these messages (it gets the answer):".into(),
                    detail: consent::block(&text),
                    accept: "Ask the model".into(),
                    remember: None,
                    asker: Some(server.clone()),
                });
            }
            Ask::DisplayMode { view, mode, reply } => {
                let mode = self.set_display_mode(&view, mode);
                let _ = reply.send(mode);
            }
            Ask::Message { view, content, taken } => {
                tracing::info!(view = %view.view, "message from the View: {:?}", content_text(&content));
                let cmd = ShellCommand::Message {
                    view: view.view.clone(),
                    from: consent::app_label(&view.tool, &view.server),
                    role: "user".into(),
                    text: consent::block(&content_text(&content)),
                };
                self.remember(cmd.clone());
                self.shell(cmd);
                let app = consent::app_label(&view.tool, &view.server);
                let _ = taken.send(self.chat_app_message(&view.view, app, content_text(&content)));
            }
            Ask::ModelContext { view, context } => {
                let text = context.as_ref().map(|c| {
                    let blocks =
                        c.get("content").and_then(Value::as_array).map(|b| content_text(b)).unwrap_or_default();
                    match c.get("structuredContent") {
                        Some(s) => format!("{blocks}\n{s}").trim().to_owned(),
                        None => blocks,
                    }
                });
                let told =
                    self.chat_model_context(&view.view, consent::app_label(&view.tool, &view.server), text.clone());
                // The person sees what the model is told: the context as cut, and how much was.
                let text = match told {
                    Some(told) if told.cut > 0 => Some(format!(
                        "{}\n[The model gets only this much: {} more bytes were cut.]",
                        consent::block(&told.text),
                        told.cut
                    )),
                    Some(told) => Some(consent::block(&told.text)),
                    None => text.map(|t| consent::block(&conversation_bound(&t))),
                };
                // Only a View's latest model context matters.
                self.shell_page.keep(|c| !matches!(c, ShellCommand::Context { view: v, .. } if *v == view.view));
                let cmd = ShellCommand::Context {
                    view: view.view.clone(),
                    from: consent::app_label(&view.tool, &view.server),
                    text,
                };
                self.remember(cmd.clone());
                self.shell(cmd);
            }
            Ask::Elicit { request, reply, gone } => {
                let dialog = self.questions.next_id();
                // What is decided on comes first: the server asking, or the website to open.
                let server = consent::one_line_max(&request.server, 80);
                let message = consent::block(&request.message);
                let (cmd, url) = match &request.kind {
                    ElicitationKind::Form { schema } => (
                        ShellCommand::Elicit {
                            dialog,
                            server: server.clone(),
                            message,
                            title: "A server asks you a question".into(),
                            subject: vec![server],
                            source: None,
                            url: None,
                            schema: Some(schema.clone()),
                            host: false,
                            detail: None,
                            warnings: Vec::new(),
                        },
                        None,
                    ),
                    ElicitationKind::Url { url, .. } => match LinkSubject::parse(url) {
                        Ok((parsed, subject)) => (
                            ShellCommand::Elicit {
                                dialog,
                                server: server.clone(),
                                message,
                                title: "A server asks you to open this website".into(),
                                subject: vec![subject.host],
                                source: Some(format!("Asked by the server {server}")),
                                url: Some(subject.address),
                                schema: None,
                                host: false,
                                detail: None,
                                warnings: Vec::new(),
                            },
                            Some(parsed.to_string()),
                        ),
                        Err(reason) => {
                            tracing::warn!(server = %request.server, "URL elicitation declined: {reason}");
                            let _ = reply.send(ElicitAnswer::Decline);
                            return;
                        }
                    },
                };
                // URL elicitation: the URL opens only once the person accepts; then the server hears.
                let reply = match url {
                    Some(url) => {
                        let (tx, rx) = oneshot::channel::<ElicitAnswer>();
                        let opener = self.options.opener.clone();
                        tokio::spawn(async move {
                            let answer = rx.await.unwrap_or(ElicitAnswer::Cancel);
                            if matches!(answer, ElicitAnswer::Accept(_)) {
                                if let Err(e) = open_url(opener.as_deref(), &url) {
                                    tracing::warn!("could not open {url}: {e}");
                                }
                            }
                            let _ = reply.send(answer);
                        });
                        tx
                    }
                    None => reply,
                };
                self.questions.elicitation_asked(dialog, request.server.clone(), reply, cmd.clone());
                let asks = self.questions.asks();
                tokio::spawn(async move {
                    let _ = gone.await;
                    let _ = asks.send(Ask::DismissElicit { dialog });
                });
                self.shell(cmd);
            }
            Ask::DismissElicit { dialog } => {
                if self.questions.elicitation_answered(dialog).is_some() {
                    tracing::info!(dialog, "elicitation withdrawn before it was answered");
                }
                self.shell(ShellCommand::Dismiss { dialog });
            }
        }
    }

    /// The person's yes or no to a consent dialog.
    pub(super) fn consent_answered(&mut self, dialog: u64, accepted: bool, remember: bool) {
        if let Some(reply) = self.questions.consent_closed(dialog) {
            tracing::info!(dialog, accepted, remember, "consent answered");
            self.chat_consent_answered(dialog, accepted && remember);
            let _ = reply.send(accepted);
        } else {
            tracing::debug!(dialog, "an answer to a dialog nobody waits for");
        }
    }

    /// The person's answer to a server's question (or to the install dialog).
    pub(super) fn elicit_answered(&mut self, dialog: u64, action: String, content: Map<String, Value>) {
        if self.install_answered(dialog, &action, &content) {
            return;
        }
        let Some((server, reply)) = self.questions.elicitation_answered(dialog) else { return };
        let answer = match action.as_str() {
            "accept" => ElicitAnswer::Accept(content),
            "decline" => ElicitAnswer::Decline,
            _ => ElicitAnswer::Cancel,
        };
        tracing::info!(server = %server, dialog, action = answer.action(), "elicitation answered in the app");
        let _ = reply.send(answer);
    }
}

/// An App's context as the model would get it (the conversation's bound), for the panel when
/// no conversation runs.
fn conversation_bound(text: &str) -> String {
    let (text, cut) = crate::conversation::bound_context(text);
    if cut == 0 {
        return text;
    }
    format!("{text}\n[cut: {cut} more bytes]")
}
