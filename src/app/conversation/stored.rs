//! Stored conversations in the window: which store, starting or reopening one, the list in
//! the picker, and a reopened one shown again (its Views from their stored input and result).

use super::*;
use crate::conversation::store::{Record, Store, Stored};

impl Controller {
    /// The conversations' store: `RunOptions::conversations`, else the user's.
    pub(super) fn store(&self) -> Option<Store> {
        self.options.places.conversations.clone().or_else(Store::user)
    }

    /// A conversation with the model: a new one, or the stored `resume` (shown again once the
    /// servers are connected). It replaces the one before, whose outputs are then ignored.
    pub(super) fn begin_conversation(&mut self, resume: Option<&str>) -> Result<(), String> {
        let model = self.options.conversation.model.clone().ok_or("no model")?.0;
        // Kept on disk (one file each, owner-only); a reopened one goes on in its file.
        let store = self.store();
        let (start, replay): (crate::conversation::Start, _) = match (resume, &store) {
            (Some(id), Some(store)) => {
                let stored = store.load(id).map_err(|e| format!("cannot reopen the conversation {id}: {e}"))?;
                (crate::conversation::Start::reopened(&stored, store.append(id).ok()), Some(stored))
            }
            (Some(_), None) => return Err("cannot reopen a conversation: no data directory".into()),
            (None, Some(store)) => {
                (crate::conversation::Start::new(Vec::new(), store.create(&model.describe()).ok()), None)
            }
            (None, None) => (crate::conversation::Start::default(), None),
        };
        let writer = &start.store;
        match &writer {
            Some(w) => tracing::info!(conversation = w.id(), "conversation with {}", model.describe()),
            None => tracing::warn!("conversation with {} (not saved: no data directory)", model.describe()),
        }
        let mut start = start;
        let set = self.servers.clone();
        start.instructions = Some(crate::conversation::InstructionsSource(Arc::new(move || set.instructions())));
        let (handle, mut out) = crate::conversation::start_with(model, self.conversation_tools(), start);
        // The modes the person set for each server (kept across runs).
        if let Some(approvals) = self.approvals() {
            for server in self.servers.servers() {
                if let Some(mode) = approvals.mode_of(&server.identity) {
                    handle.set_approval(&server.identity, mode);
                }
            }
        }
        let generation = self.conversation.chat.as_ref().map_or(1, |c| c.generation + 1);
        if let Some(tx) = self.conversation.chat_out.clone() {
            tokio::spawn(async move {
                while let Some(o) = out.recv().await {
                    if tx.send((generation, o)).is_err() {
                        return;
                    }
                }
            });
        }
        let prompted = self.conversation.chat.as_ref().is_some_and(|c| c.prompted);
        self.conversation.chat = Some(Chat {
            handle,
            generation,
            calls: HashMap::new(),
            turns: 0,
            prompted,
            listed: replay.is_some(),
            replay,
            asking: HashMap::new(),
            asking_cmds: HashMap::new(),
        });
        Ok(())
    }

    /// The stored conversations, in the tool picker.
    pub(super) fn show_conversations(&mut self) {
        let Some(store) = self.store() else { return };
        let list = store.list().unwrap_or_default();
        let open = self.conversation.chat.as_ref().and_then(|c| c.handle.id());
        let items = list
            .iter()
            .take(MAX_LISTED)
            .map(|c| {
                let title =
                    if c.title.is_empty() { "(no prompt)".to_owned() } else { consent::one_line_max(&c.title, 60) };
                // `open`: the one in the window; `said`: it holds a prompt, so it can be offered
                // to pick up at start.
                json!({"id": c.id, "title": title, "open": open.as_deref() == Some(c.id.as_str()), "said": !c.title.is_empty()})
            })
            .collect();
        self.shell_page.keep(|c| !matches!(c, ShellCommand::Conversations { .. }));
        let cmd = ShellCommand::Conversations { list: items };
        self.shell(cmd.clone());
        self.remember(cmd);
    }

    /// The person gives a stored conversation a title.
    pub(crate) fn rename_conversation(&mut self, id: &str, title: &str) {
        let Some(store) = self.store() else { return };
        if title.trim().is_empty() {
            return;
        }
        match store.rename(id, title) {
            Ok(()) => self.show_conversations(),
            Err(e) => self.status(&format!("The conversation was not renamed: {}", say(&e.to_string())), true),
        }
    }

    /// The person deletes a stored conversation (not the one open: it is still being written).
    pub(crate) fn delete_conversation(&mut self, id: &str) {
        let Some(store) = self.store() else { return };
        if self.conversation.chat.as_ref().is_some_and(|c| c.handle.id().as_deref() == Some(id)) {
            self.status("This conversation is open: open another before deleting it.", true);
            return;
        }
        match store.delete(id) {
            Ok(()) => {
                tracing::info!(conversation = id, "the person deleted a stored conversation");
                self.show_conversations();
            }
            Err(e) => self.status(&format!("The conversation was not deleted: {}", say(&e.to_string())), true),
        }
    }

    /// The person reopens a stored conversation: the open Views close, the turns of this one
    /// leave the stream, and the stored one comes back.
    pub(crate) fn reopen_conversation(&mut self, id: &str) {
        if !self.clear_conversation("reopen the conversation") {
            return;
        }
        match self.begin_conversation(Some(id)) {
            // Shown now if the servers are there (their tools say which calls had a View);
            // else once they are (`send_first_prompt`).
            Ok(()) if self.conversation.chat.as_ref().is_some_and(|c| c.prompted) => {
                if let Some(stored) = self.conversation.chat.as_mut().and_then(|c| c.replay.take()) {
                    self.replay(stored);
                }
            }
            Ok(()) => {}
            Err(e) => self.status(&e, true),
        }
    }

    /// The person starts a new conversation (Ctrl+N, or its button): the one before stays in
    /// the list, its Views close and its turns leave the stream. Without a model there is
    /// nothing to start: Model settings opens.
    pub(crate) fn new_conversation(&mut self) {
        if self.options.conversation.model.is_none() {
            self.open_model_settings();
            return;
        }
        let said = self.conversation.chat.as_ref().is_some_and(|c| c.listed);
        if !said && self.views.iter().all(|(_, v)| !v.phase.is_open()) {
            // Nothing said yet: this one is new already.
            self.status("This conversation is new: type your message below.", false);
            return;
        }
        if !self.clear_conversation("start a new conversation") {
            return;
        }
        match self.begin_conversation(None) {
            Ok(()) => {
                self.status("A new conversation: type your message below.", false);
                self.show_conversations();
            }
            Err(e) => self.status(&e, true),
        }
    }

    /// Empties the window for another conversation (its Views close, its turns leave the
    /// stream); false, with the reason said, while the model is still answering.
    fn clear_conversation(&mut self, doing: &str) -> bool {
        if self.conversation.chat.as_ref().is_some_and(|c| c.turns > 0) {
            self.status(&format!("The model is still answering; {doing} once it is done."), true);
            return false;
        }
        let open: Vec<ViewId> =
            self.views.iter().filter(|(_, v)| v.phase.is_open()).map(|(id, _)| id.clone()).collect();
        for view in open {
            if let Some(v) = self.views.get(&view) {
                self.spawn_teardown(v.handle.clone());
            }
        }
        self.shell_page.keep(|c| {
            !matches!(c, ShellCommand::Chat { .. } | ShellCommand::ChatText { .. } | ShellCommand::ChatEnd { .. })
        });
        self.shell(ShellCommand::ChatClear);
        true
    }

    /// A reopened conversation is shown again: its turns, and its Views from the stored input
    /// and result (no tool is called again).
    pub(super) fn replay(&mut self, stored: Stored) {
        self.trace.record(None, Direction::Diagnostic, &json!({"kind": "conversation-reopened", "id": stored.id}));
        for record in stored.records {
            match record {
                Record::Item { item: crate::model::ChatItem::User { text, from_app } } => {
                    let text = match &from_app {
                        Some(app) => text.strip_prefix(&format!("[from the App {app}] ")).unwrap_or(&text).to_owned(),
                        None => text,
                    };
                    self.chat_card(ShellCommand::Chat {
                        role: "user".into(),
                        from: from_app,
                        text: consent::block(&text),
                    });
                }
                Record::Item { item: crate::model::ChatItem::Assistant { text, .. } } if !text.is_empty() => {
                    self.chat_card(ShellCommand::ChatText { text: consent::block(&text) });
                    self.chat_card(ShellCommand::ChatEnd { error: None });
                }
                Record::Call { server, tool, arguments, result: Some(result), .. } => {
                    let has_ui = self
                        .servers
                        .find_tool(Some(&server), &tool)
                        .ok()
                        .and_then(|e| e.ui.ok())
                        .and_then(|u| u.resource_uri)
                        .is_some();
                    if has_ui {
                        let id = self.views.next_id();
                        self.views.cache_result(&id, result);
                        if let Err(e) = self.open(Some(&server), &tool, arguments, Opening::Reload) {
                            self.views.uncache(&id);
                            tracing::warn!("a View of the reopened conversation cannot open: {e}");
                        }
                    } else {
                        let (text, error) = result_for_person(&result);
                        self.shell(ShellCommand::Text {
                            view: None,
                            title: tool_label(&tool),
                            text: consent::block(&text),
                            error,
                        });
                    }
                }
                _ => {}
            }
        }
    }
}
