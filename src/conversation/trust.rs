//! Who is trusted with what in the conversation, and when the person is asked before the
//! model's call runs (the rules are in SECURITY.md, "Trust in the conversation").
//!
//! - A server's annotations are its own word. `readOnlyHint` spares a question only for data
//!   the server already has: a call to server B asks whenever the conversation holds anything
//!   that came from another server or another server's App (a tool's result, an App's model
//!   context or message) that the person has not yet let reach B in this conversation. The
//!   question names B and where the data came from.
//! - Each server has an approval mode the person sets and the host remembers
//!   ([`Approval`], stored by [`Approvals`]): ask before every call, before calls that may
//!   change something (the default), or never for the server's own tools. The mode decides only
//!   about the server's own data; data of another server asks in every mode.
//! - What the person allows "for this conversation" ([`Trust::remember`]) is kept with the
//!   conversation's run, never written down: a reopened conversation asks again.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Digest;

use super::tools::{Owner, ServerId};
use crate::server::set::ToolEntry;

/// When the person is asked before the model calls one of a server's tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Approval {
    /// Before every call.
    Always,
    /// Before a call the server does not mark read-only (`readOnlyHint: true` and no
    /// `destructiveHint: true`). MCP's defaults (a tool may write) ask.
    #[default]
    Changes,
    /// Never for the server's own data (data from elsewhere still asks).
    Never,
}

impl Approval {
    /// Every mode, with the words the person reads.
    pub const ALL: [(Approval, &'static str); 3] = [
        (Approval::Changes, "Ask before changes"),
        (Approval::Always, "Ask before every call"),
        (Approval::Never, "Never ask for this server's own data"),
    ];

    /// Its name in files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::Changes => "changes",
            Self::Never => "never",
        }
    }

    /// The mode named `s` (`always`, `changes`, `never`).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().map(|(a, _)| *a).find(|a| a.as_str() == s)
    }
}

/// Whether `tool`'s own annotations say it only reads: `readOnlyHint: true` and no
/// `destructiveHint: true`.
pub fn says_read_only(tool: &Value) -> bool {
    let hint = |name: &str| tool.pointer(&format!("/annotations/{name}")).and_then(Value::as_bool);
    hint("readOnlyHint") == Some(true) && hint("destructiveHint") != Some(true)
}

/// Why the person is asked before one call, for the dialog (the host's words; labels are the
/// servers' and go through `consent` before they are shown).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Question {
    /// The tool asked about.
    pub owner: Owner,
    /// The server that would receive the call, as the person knows it.
    pub receiver: String,
    /// Asked for the call itself (its server's mode, or its annotations): why.
    pub call: Option<CallReason>,
    /// Other servers whose data the conversation holds and that the person has not let reach
    /// the receiver yet: each with its label. The call's arguments may carry any of it.
    pub data_from: Vec<(ServerId, String)>,
}

/// Why a call asks on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallReason {
    /// The person asked to be asked before every call to this server.
    EveryCall,
    /// The server does not say the tool only reads.
    MayChange,
    /// The server says the tool may destroy data.
    MayDestroy,
}

impl Question {
    /// Whether "remember" can apply: not for a server the person wants to be asked about
    /// every time.
    pub fn can_remember(&self) -> bool {
        self.call != Some(CallReason::EveryCall)
    }
}

/// The trust of one conversation: the servers' modes, and what the person allowed for it.
#[derive(Debug, Default, Clone)]
pub struct Trust {
    /// Server identity -> its mode (absent: [`Approval::Changes`]).
    modes: HashMap<String, Approval>,
    /// Tools the person let run without asking for the rest of the conversation.
    tools: HashSet<Owner>,
    /// `(from, to)`: data of `from` may reach `to` in this conversation.
    flows: HashSet<(ServerId, ServerId)>,
}

impl Trust {
    /// Sets a server's mode (by its identity).
    pub fn set_mode(&mut self, identity: &str, mode: Approval) {
        self.modes.insert(identity.to_owned(), mode);
    }

    /// A server's mode.
    pub fn mode(&self, identity: &str) -> Approval {
        self.modes.get(identity).copied().unwrap_or_default()
    }

    /// What must be asked before the model calls `entry`, given the servers whose data the
    /// conversation holds (`seen`, with their labels); `None`: it runs without a question.
    pub fn question(&self, entry: &ToolEntry, seen: &BTreeMap<ServerId, String>) -> Option<Question> {
        let owner = Owner::of(entry);
        let hint = |name: &str| entry.tool.pointer(&format!("/annotations/{name}")).and_then(Value::as_bool);
        let call = match self.mode(&entry.identity) {
            Approval::Always => Some(CallReason::EveryCall),
            Approval::Never => None,
            Approval::Changes if self.tools.contains(&owner) => None,
            Approval::Changes if hint("destructiveHint") == Some(true) => Some(CallReason::MayDestroy),
            Approval::Changes if !says_read_only(&entry.tool) => Some(CallReason::MayChange),
            Approval::Changes => None,
        };
        let data_from: Vec<(ServerId, String)> = seen
            .iter()
            .filter(|(from, _)| {
                **from != owner.server && !self.flows.contains(&((*from).clone(), owner.server.clone()))
            })
            .map(|(from, label)| (from.clone(), label.clone()))
            .collect();
        if call.is_none() && data_from.is_empty() {
            return None;
        }
        Some(Question { receiver: entry.label.clone(), owner, call, data_from })
    }

    /// The person said yes to `question` and "for the rest of this conversation": the tool runs
    /// without a question, and the data it named may reach its server.
    pub fn remember(&mut self, question: &Question) {
        if !question.can_remember() {
            return;
        }
        if question.call.is_some() {
            self.tools.insert(question.owner.clone());
        }
        for (from, _) in &question.data_from {
            self.flows.insert((from.clone(), question.owner.server.clone()));
        }
    }
}

/// The approval modes the person set, kept across runs: one owner-only JSON file in the
/// host's data directory, `{"<hash of the server's identity>": {"mode": "never", "server":
/// "<its label when set>"}}`. A server is known by its identity (for a stdio server its command
/// line, folder, environment and executable; for a remote one its URL: see
/// `ServerSpec::identity`), never by a name a config file could give another program.
///
/// Files written by older versions hold keys of command lines alone. Those keys are ambiguous
/// (one line starts any program a folder holds), so they are left to match nothing: no
/// identity hashes to them, and nothing carries them over (a migration would have to guess
/// which program the person meant, and a wrong guess grants trust). Such a server asks as by
/// default until the person sets its mode again.
#[derive(Debug, Clone)]
pub struct Approvals {
    path: PathBuf,
}

/// One remembered mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remembered {
    /// The mode.
    pub mode: Approval,
    /// The server's label when the mode was set (for a list; never used to find it).
    pub server: String,
}

impl Approvals {
    /// The user's file (`$XDG_DATA_HOME/mcp-apps-host/approvals.json`).
    pub fn user() -> Option<Self> {
        let dirs = directories::ProjectDirs::from("", "", "mcp-apps-host")?;
        Some(Self::at(dirs.data_dir().join("approvals.json")))
    }

    /// The file at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The key of a server identity in the file.
    pub fn key(identity: &str) -> String {
        let digest = sha2::Sha256::digest(identity.as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Every remembered mode, by key (an absent or unreadable file: none, said in the log).
    pub fn load(&self) -> BTreeMap<String, Remembered> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return BTreeMap::new(),
            Err(e) => {
                tracing::warn!("cannot read {}: {e}; every server asks as by default", self.path.display());
                return BTreeMap::new();
            }
        };
        serde_json::from_str(&text).unwrap_or_else(|e| {
            tracing::warn!("{} is not an approvals file ({e}); every server asks as by default", self.path.display());
            BTreeMap::new()
        })
    }

    /// The mode remembered for `identity`.
    pub fn mode_of(&self, identity: &str) -> Option<Approval> {
        self.load().get(&Self::key(identity)).map(|r| r.mode)
    }

    /// Remembers `mode` for `identity` (the default mode removes the entry).
    pub fn set(&self, identity: &str, label: &str, mode: Approval) -> std::io::Result<()> {
        let mut all = self.load();
        let key = Self::key(identity);
        if mode == Approval::default() {
            all.remove(&key);
        } else {
            all.insert(key, Remembered { mode, server: crate::consent::one_line_max(label, 80) });
        }
        let text = serde_json::to_string_pretty(&all).map_err(std::io::Error::other)?;
        crate::private_file::write(&self.path, text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(server: &str, tool: Value) -> ToolEntry {
        let mut e = ToolEntry::new(server, tool);
        e.identity = format!("stdio:{server}");
        e.label = server.to_uppercase();
        e
    }

    fn seen(servers: &[&str]) -> BTreeMap<ServerId, String> {
        servers
            .iter()
            .map(|s| (ServerId { server: (*s).into(), identity: format!("stdio:{s}") }, s.to_uppercase()))
            .collect()
    }

    const READ_ONLY: &str = "readOnlyHint";

    #[test]
    fn a_read_only_hint_spares_a_question_only_for_the_servers_own_data() {
        let trust = Trust::default();
        let lookup = entry("b", json!({"name": "lookup", "annotations": {READ_ONLY: true}}));
        // The control: one server, its own data, a read-only tool: no question.
        assert_eq!(trust.question(&lookup, &seen(&[])), None);
        assert_eq!(trust.question(&lookup, &seen(&["b"])), None);
        // Server A's data in the conversation: the "read-only" tool of B asks, naming B and A.
        let q = trust.question(&lookup, &seen(&["a", "b"])).expect("asks");
        assert_eq!((q.receiver.as_str(), q.call), ("B", None));
        assert_eq!(q.data_from, vec![(ServerId { server: "a".into(), identity: "stdio:a".into() }, "A".into())]);
    }

    #[test]
    fn only_read_only_tools_say_they_only_read() {
        assert!(!says_read_only(&json!({"name": "t"})), "MCP's defaults: it may write");
        assert!(says_read_only(&json!({"annotations": {READ_ONLY: true}})));
        assert!(!says_read_only(&json!({"annotations": {READ_ONLY: true, "destructiveHint": true}})));
        assert!(!says_read_only(&json!({"annotations": {READ_ONLY: false, "destructiveHint": false}})));
    }

    #[test]
    fn the_servers_mode_decides_about_its_own_data_and_never_about_anothers() {
        let mut trust = Trust::default();
        let write = entry("b", json!({"name": "write"}));
        let read = entry("b", json!({"name": "read", "annotations": {READ_ONLY: true}}));
        let destroy = entry("b", json!({"name": "rm", "annotations": {READ_ONLY: true, "destructiveHint": true}}));
        assert_eq!(trust.question(&write, &seen(&[])).unwrap().call, Some(CallReason::MayChange));
        assert_eq!(trust.question(&destroy, &seen(&[])).unwrap().call, Some(CallReason::MayDestroy));
        trust.set_mode("stdio:b", Approval::Always);
        assert_eq!(trust.question(&read, &seen(&[])).unwrap().call, Some(CallReason::EveryCall));
        trust.set_mode("stdio:b", Approval::Never);
        assert_eq!(trust.question(&write, &seen(&["b"])), None, "never: the server's own data runs");
        let q = trust.question(&write, &seen(&["a", "b"])).expect("another server's data still asks");
        assert_eq!((q.call, q.data_from.len()), (None, 1));
        // The mode follows the identity, not the name: another program called `b` asks.
        let mut other = write.clone();
        other.identity = "stdio:evil".into();
        assert!(trust.question(&other, &seen(&[])).is_some());
    }

    #[test]
    fn remembered_answers_last_the_conversation_and_name_what_they_allow() {
        let mut trust = Trust::default();
        let write = entry("b", json!({"name": "write"}));
        let q = trust.question(&write, &seen(&["a"])).unwrap();
        trust.remember(&q);
        assert_eq!(trust.question(&write, &seen(&["a", "b"])), None);
        // A new source asks again, for that source only.
        let q = trust.question(&write, &seen(&["a", "c"])).unwrap();
        assert_eq!((q.call, q.data_from.iter().map(|(s, _)| s.server.as_str()).collect::<Vec<_>>()), (None, vec!["c"]));
        // The flow A -> B does not let A's data reach C.
        let c = entry("c", json!({"name": "read", "annotations": {READ_ONLY: true}}));
        assert_eq!(trust.question(&c, &seen(&["a"])).unwrap().data_from.len(), 1);
        // "Every call" is never remembered.
        trust.set_mode("stdio:b", Approval::Always);
        let q = trust.question(&write, &seen(&[])).unwrap();
        assert!(!q.can_remember());
        trust.remember(&q);
        assert!(trust.question(&write, &seen(&[])).is_some());
    }

    #[test]
    fn modes_are_kept_by_identity_in_an_owner_only_file() {
        let dir = tempfile::tempdir().unwrap();
        let approvals = Approvals::at(dir.path().join("sub/approvals.json"));
        assert_eq!(approvals.mode_of("stdio:b"), None);
        approvals.set("stdio:b", "B", Approval::Never).unwrap();
        approvals.set("stdio:c", "C", Approval::Always).unwrap();
        assert_eq!(approvals.mode_of("stdio:b"), Some(Approval::Never));
        assert_eq!(approvals.mode_of("stdio:other"), None);
        approvals.set("stdio:b", "B", Approval::Changes).unwrap();
        assert_eq!(approvals.mode_of("stdio:b"), None, "the default is not stored");
        let text = std::fs::read_to_string(approvals.path()).unwrap();
        assert!(!text.contains("stdio:c"), "the identity (a command line) is stored hashed: {text}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(approvals.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0);
        }
        std::fs::write(approvals.path(), "not json").unwrap();
        assert_eq!(approvals.mode_of("stdio:c"), None, "a broken file asks as by default");
        assert_eq!(Approval::parse("never"), Some(Approval::Never));
        assert_eq!(Approval::parse("sometimes"), None);
    }

    /// `node notes.mjs` in two folders: two programs (the second's `notes.mjs` is another
    /// file, with a destructive tool). Each entry's tools carry its spec's identity, as the
    /// server set gives them.
    fn notes_in_two_folders() -> (tempfile::TempDir, ToolEntry, ToolEntry, [crate::server::ServerSpec; 2]) {
        let dir = tempfile::tempdir().unwrap();
        let spec = |folder: &str| {
            let home = dir.path().join(folder);
            std::fs::create_dir_all(&home).unwrap();
            std::fs::write(home.join("notes.mjs"), format!("// {folder}")).unwrap();
            let crate::server::ServerSpec::Stdio { program, args, name, env, .. } =
                crate::server::ServerSpec::from_command_line("node notes.mjs").unwrap()
            else {
                unreachable!()
            };
            crate::server::ServerSpec::Stdio { name, program, args, env, cwd: Some(home) }
        };
        let specs = [spec("a"), spec("b")];
        let tool = |i: usize| {
            let mut e = ToolEntry::new(
                if i == 0 { "notes" } else { "notes (2)" },
                json!({"name": "erase",
                "annotations": {"destructiveHint": true}}),
            );
            e.identity = specs[i].identity();
            e
        };
        let (a, b) = (tool(0), tool(1));
        (dir, a, b, specs)
    }

    #[test]
    fn never_for_one_folders_program_does_not_spare_anothers_behind_the_same_command_line() {
        let (_dir, a, b, specs) = notes_in_two_folders();
        let mut trust = Trust::default();
        trust.set_mode(&a.identity, Approval::Never);
        // The control: the trusted program's destructive tool runs without a question, and so
        // it does after a restart (its identity, taken again, is the same).
        assert_eq!(trust.question(&a, &seen(&[])), None);
        assert_eq!(specs[0].identity(), a.identity, "the same entry keeps its identity");
        // The attack: the other folder's program, the same line, still asks.
        let q = trust.question(&b, &seen(&[])).expect("the other program asks");
        assert_eq!(q.call, Some(CallReason::MayDestroy));
    }

    #[test]
    fn a_remembered_never_is_kept_for_its_program_only_and_old_command_line_keys_match_nothing() {
        let (dir, a, b, specs) = notes_in_two_folders();
        let approvals = Approvals::at(dir.path().join("approvals.json"));
        approvals.set(&a.identity, "notes", Approval::Never).unwrap();
        assert_eq!(approvals.mode_of(&specs[0].identity()), Some(Approval::Never), "kept across runs");
        assert_eq!(approvals.mode_of(&b.identity), None, "not for the other folder's program");
        // A file of an older version: "never" under the command line alone. It is ambiguous, so
        // it applies to neither program (nor is it carried over).
        let old = Approvals::at(dir.path().join("old.json"));
        old.set(&specs[0].written_identity(), "notes", Approval::Never).unwrap();
        assert_eq!(old.mode_of(&specs[0].written_identity()), Some(Approval::Never), "the old key is there");
        assert_eq!(old.mode_of(&a.identity), None);
        assert_eq!(old.mode_of(&b.identity), None);
    }
}
