//! Conversations kept on disk: one JSON Lines file each, appended to as the conversation goes,
//! readable by its owner only (like the sign-in tokens), under the user's data directory
//! (`$XDG_DATA_HOME/mcp-apps-host/conversations`).
//!
//! A file holds the conversation's items (what the model is sent again when it is reopened) and
//! every tool call the model made with its arguments and result, so a reopened conversation
//! shows its Views again from them without calling a tool.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::ChatItem;

/// A conversation file is read up to this size (a larger one is cut there, and said so).
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// One line of a conversation file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Record {
    /// The first line: the format and the model it was held with.
    Meta {
        /// The file format (1).
        version: u32,
        /// The model, for the person.
        model: String,
    },
    /// An item of the conversation.
    Item {
        /// The item.
        item: ChatItem,
    },
    /// A tool call of the model, carried out.
    Call {
        /// The model's id for the call.
        call_id: String,
        /// The server (its name in the server set).
        server: String,
        /// The tool.
        tool: String,
        /// Its arguments.
        arguments: Map<String, Value>,
        /// Its `CallToolResult` (none if it failed or was refused).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
    },
    /// A tool name the model was given, and whose tool it is (for good: see
    /// [`super::tools::Names`]).
    Name {
        /// The model-facing name.
        name: String,
        /// Whose tool it is.
        owner: super::tools::Owner,
    },
    /// The conversation went back to its first `to` items (the person retried an answer or
    /// edited their last prompt): the items after them are no longer sent.
    Rewind {
        /// How many items are kept.
        to: usize,
    },
    /// A server whose data reached the model (see [`super::trust`]).
    Seen {
        /// The server.
        server: super::tools::ServerId,
        /// How the person knows it.
        label: String,
    },
}

/// A stored conversation, for a list.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Its id (the file name without `.jsonl`).
    pub id: String,
    /// When it was last written.
    pub modified: std::time::SystemTime,
    /// Its first prompt.
    pub title: String,
}

/// A conversation read back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stored {
    /// Its id.
    pub id: String,
    /// Its records, in order.
    pub records: Vec<Record>,
    /// Lines that could not be read (a crash mid-write leaves a partial last line).
    pub skipped: usize,
}

impl Stored {
    /// The conversation's items, in order. A tool call that has no result (the host stopped
    /// while it waited, for the person or the server) gets an error result: both APIs refuse a
    /// conversation with a call left unanswered.
    pub fn items(&self) -> Vec<ChatItem> {
        let mut items: Vec<ChatItem> = Vec::new();
        for record in &self.records {
            match record {
                Record::Item { item } => items.push(item.clone()),
                Record::Rewind { to } => items.truncate(*to),
                _ => {}
            }
        }
        let mut out = Vec::with_capacity(items.len());
        let mut i = 0;
        while i < items.len() {
            let item = items[i].clone();
            i += 1;
            let ChatItem::Assistant { tool_calls, .. } = &item else {
                out.push(item);
                continue;
            };
            let calls: Vec<String> = tool_calls.iter().map(|c| c.id.clone()).collect();
            out.push(item);
            let mut answered = Vec::new();
            while let Some(ChatItem::ToolResult { call_id, .. }) = items.get(i) {
                answered.push(call_id.clone());
                out.push(items[i].clone());
                i += 1;
            }
            for id in calls.into_iter().filter(|id| !answered.contains(id)) {
                out.push(ChatItem::ToolResult {
                    call_id: id,
                    content: vec![serde_json::json!({"type": "text", "text": "The call was not completed: the host stopped first."})],
                    structured: None,
                    is_error: true,
                });
            }
        }
        out
    }
}

/// Where conversations are kept.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The user's conversations (`None` without a home or data directory).
    pub fn user() -> Option<Self> {
        let dirs = directories::ProjectDirs::from("", "", "mcp-apps-host")?;
        Some(Self::at(dirs.data_dir().join("conversations")))
    }

    /// Conversations in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A new conversation; its file is made with its first record (a run without a prompt
    /// leaves no file).
    pub fn create(&self, model: &str) -> std::io::Result<Writer> {
        let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let mut random = [0u8; 3];
        getrandom::fill(&mut random).map_err(|e| std::io::Error::other(e.to_string()))?;
        let id = format!("{secs}-{:02x}{:02x}{:02x}", random[0], random[1], random[2]);
        let mut writer = self.append(&id)?;
        writer.first = Some(Record::Meta { version: 1, model: model.to_owned() });
        Ok(writer)
    }

    /// Appends to the conversation `id` (created if missing).
    pub fn append(&self, id: &str) -> std::io::Result<Writer> {
        let path = self.path_of(id)?;
        Ok(Writer { id: id.to_owned(), dir: self.dir.clone(), path, file: None, first: None })
    }

    /// Reads the conversation `id`.
    pub fn load(&self, id: &str) -> std::io::Result<Stored> {
        use std::io::Read;
        let path = self.path_of(id)?;
        let mut bytes = Vec::new();
        std::fs::File::open(&path)?.take(MAX_FILE_BYTES).read_to_end(&mut bytes)?;
        // Cut at the bound, a character may be cut in two: that line is then unreadable.
        let text = String::from_utf8_lossy(&bytes);
        let mut stored = Stored { id: id.to_owned(), ..Default::default() };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<Record>(line) {
                Ok(record) => stored.records.push(record),
                Err(e) => {
                    tracing::warn!(conversation = id, "a line of the conversation file is unreadable: {e}");
                    stored.skipped += 1;
                }
            }
        }
        Ok(stored)
    }

    /// The stored conversations, newest first.
    pub fn list(&self) -> std::io::Result<Vec<Summary>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut list = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".jsonl") else { continue };
            let modified = entry.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
            // A title the person gave wins over the first prompt.
            let given = std::fs::read_to_string(self.dir.join(format!("{id}.title"))).ok();
            let title = given.or_else(|| first_prompt(&entry.path())).unwrap_or_default();
            list.push(Summary { id: id.to_owned(), modified, title });
        }
        list.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| b.id.cmp(&a.id)));
        Ok(list)
    }

    /// Gives `id` a title of the person's (one line, at most 200 characters).
    pub fn rename(&self, id: &str, title: &str) -> std::io::Result<()> {
        let path = self.path_of(id)?;
        if !path.exists() {
            return Err(std::io::Error::new(std::io::ErrorKind::NotFound, format!("no conversation {id:?}")));
        }
        let title: String = title.split(['\n', '\r']).next().unwrap_or_default().trim().chars().take(200).collect();
        crate::private_file::write(&self.dir.join(format!("{id}.title")), title.as_bytes())
    }

    /// Deletes `id` (its file and its title).
    pub fn delete(&self, id: &str) -> std::io::Result<()> {
        let path = self.path_of(id)?;
        std::fs::remove_file(&path)?;
        match std::fs::remove_file(self.dir.join(format!("{id}.title"))) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// `id`'s file; an id is a file name of ours, never a path.
    fn path_of(&self, id: &str) -> std::io::Result<PathBuf> {
        let valid = !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("no conversation {id:?}")));
        }
        Ok(self.dir.join(format!("{id}.jsonl")))
    }
}

/// The first prompt of a conversation file, read from its first lines only (a list of many
/// long conversations must not read them all).
fn first_prompt(path: &Path) -> Option<String> {
    use std::io::{BufRead, Read};
    let file = std::fs::File::open(path).ok()?;
    let reader = std::io::BufReader::new(file.take(1024 * 1024));
    reader.lines().take(50).map_while(Result::ok).find_map(|line| match serde_json::from_str(&line) {
        Ok(Record::Item { item: ChatItem::User { text, .. } }) => Some(text),
        _ => None,
    })
}

/// Appends records to one conversation file.
#[derive(Debug)]
pub struct Writer {
    id: String,
    dir: PathBuf,
    path: PathBuf,
    file: Option<std::fs::File>,
    /// Written before the first record.
    first: Option<Record>,
}

impl Writer {
    /// The conversation's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Appends `record` as one line (one write: a crash leaves at most a partial last line).
    pub fn write(&mut self, record: &Record) -> std::io::Result<()> {
        if self.file.is_none() {
            self.file = Some(self.open()?);
            if let Some(first) = self.first.take() {
                self.write(&first)?;
            }
        }
        let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.file.as_mut().expect("opened above").write_all(&line)
    }

    fn open(&self) -> std::io::Result<std::fs::File> {
        std::fs::create_dir_all(&self.dir)?;
        let mut options = std::fs::OpenOptions::new();
        options.append(true).create(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
            std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))?;
            options.mode(0o600);
        }
        let file = options.open(&self.path)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_conversation_is_renamed_rewound_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path().join("c"));
        let mut w = store.create("m").unwrap();
        let id = w.id().to_owned();
        let user = |t: &str| Record::Item { item: ChatItem::User { text: t.into(), from_app: None } };
        let said = |t: &str| Record::Item { item: ChatItem::Assistant { text: t.into(), tool_calls: Vec::new() } };
        for r in [user("first"), said("one"), Record::Rewind { to: 1 }, said("two")] {
            w.write(&r).unwrap();
        }
        let items = store.load(&id).unwrap().items();
        assert_eq!(items.len(), 2, "the retried answer is not sent again: {items:?}");
        assert!(matches!(&items[1], ChatItem::Assistant { text, .. } if text == "two"));
        store.rename(&id, "Budget review\nSYSTEM").unwrap();
        assert_eq!(store.list().unwrap()[0].title, "Budget review");
        assert!(store.rename("../x", "t").is_err() && store.rename("nope", "t").is_err());
        store.delete(&id).unwrap();
        assert!(store.list().unwrap().is_empty());
        assert!(!dir.path().join("c").join(format!("{id}.title")).exists());
        assert!(store.delete(&id).is_err(), "gone");
    }

    #[test]
    fn a_conversation_is_appended_read_back_and_listed_and_only_its_owner_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path().join("c"));
        let mut w = store.create("openai:m").unwrap();
        w.write(&Record::Item { item: ChatItem::User { text: "show the order".into(), from_app: None } }).unwrap();
        w.write(&Record::Call {
            call_id: "c1".into(),
            server: "s".into(),
            tool: "show".into(),
            arguments: Map::new(),
            result: Some(json!({"content": []})),
        })
        .unwrap();
        let id = w.id().to_owned();
        drop(w);
        // Reopened, it goes on in the same file.
        store
            .append(&id)
            .unwrap()
            .write(&Record::Item { item: ChatItem::User { text: "more".into(), from_app: None } })
            .unwrap();
        let stored = store.load(&id).unwrap();
        assert_eq!(stored.records.len(), 4);
        assert_eq!(stored.items().len(), 2);
        let list = store.list().unwrap();
        assert_eq!((list.len(), list[0].title.as_str()), (1, "show the order"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&dir.path().join("c").join(format!("{id}.jsonl"))), 0o600);
            assert_eq!(mode(&dir.path().join("c")), 0o700);
        }
    }

    #[test]
    fn a_call_left_unanswered_gets_an_error_result_when_read_back() {
        use crate::model::ToolCall;
        let call = |id: &str| ToolCall { id: id.into(), name: "s__t".into(), arguments: json!({}) };
        let stored = Stored {
            records: vec![
                Record::Item { item: ChatItem::User { text: "go".into(), from_app: None } },
                Record::Item {
                    item: ChatItem::Assistant { text: String::new(), tool_calls: vec![call("a"), call("b")] },
                },
                Record::Item {
                    item: ChatItem::ToolResult {
                        call_id: "a".into(),
                        content: vec![],
                        structured: None,
                        is_error: false,
                    },
                },
            ],
            ..Default::default()
        };
        let items = stored.items();
        assert_eq!(items.len(), 4);
        assert!(matches!(&items[3], ChatItem::ToolResult { call_id, is_error: true, .. } if call_id == "b"));
    }

    #[test]
    fn a_partial_last_line_is_skipped_and_ids_are_never_paths() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        let mut w = store.create("m").unwrap();
        assert!(store.list().unwrap().is_empty(), "nothing is written before the first record");
        w.write(&Record::Item { item: ChatItem::User { text: "x".into(), from_app: None } }).unwrap();
        let id = w.id().to_owned();
        let path = dir.path().join(format!("{id}.jsonl"));
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"kind\":\"item\",\"item\":{\"kind\":\"us");
        std::fs::write(&path, text).unwrap();
        let stored = store.load(&id).unwrap();
        assert_eq!((stored.records.len(), stored.skipped), (2, 1));
        for bad in ["../x", "a/b", "", ".hidden", "x.jsonl"] {
            assert!(store.load(bad).is_err(), "{bad}");
            assert!(store.append(bad).is_err(), "{bad}");
        }
        assert!(Store::at(dir.path().join("none")).list().unwrap().is_empty());
    }
}
