//! Which tools the model sees, and under which names.
//!
//! A model-facing name stands for one server's tool for the whole conversation ([`Names`]): it
//! is given the first time the tool is offered and never handed to another owner, whatever
//! servers come, go, restart or change their lists. Two servers of one label, labels that look
//! alike or clean to the same ASCII, and names cut at 64 characters get a numbered name of
//! their own; a change of owner is impossible, not detected.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::ToolSpec;
use crate::server::set::ToolEntry;

/// A model's tool names: `^[a-zA-Z0-9_-]{1,64}$` in both APIs.
const MAX_NAME: usize = 64;
/// The host's own tools are named `host__…` (`FIND_TOOLS`): no server's or App's tool is.
const HOST_PREFIX: &str = "host__";
/// What goes before the label of a server whose tools would be named like the host's.
const RENAMED_PREFIX: &str = "server_";

/// Whether `name` is in the host's own namespace (`host__…`, in any case: a model does not
/// tell `Host__find_tools` from the host's `host__find_tools`).
pub(crate) fn is_reserved(name: &str) -> bool {
    name.get(..HOST_PREFIX.len()).is_some_and(|p| p.eq_ignore_ascii_case(HOST_PREFIX))
}

/// A server as a party to the conversation: its name in the server set and its stable identity
/// (its command line or URL). Another program under the same name is another server.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ServerId {
    /// Its name in the server set.
    pub server: String,
    /// Its identity (`ServerSpec::identity`).
    pub identity: String,
}

impl ServerId {
    /// The server of `entry`.
    pub fn of(entry: &ToolEntry) -> Self {
        Self { server: entry.server.clone(), identity: entry.identity.clone() }
    }
}

/// What a model-facing name stands for: one tool of one server, or of one View (an App's own
/// tool).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Owner {
    /// The server.
    #[serde(flatten)]
    pub server: ServerId,
    /// The tool's name on it.
    pub tool: String,
    /// The View that offers it, for an App's own tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
}

impl Owner {
    /// The owner of `entry`'s name.
    pub fn of(entry: &ToolEntry) -> Self {
        Self { server: ServerId::of(entry), tool: entry.name().to_owned(), view: entry.app_view.clone() }
    }
}

/// What a model-facing name is made from: the server's label, or for an App's own tool
/// `app_<view>` (the description says which App).
fn name_base(entry: &ToolEntry) -> String {
    match &entry.app_view {
        Some(view) => format!("app_{view}"),
        None => entry.label.clone(),
    }
}

/// The model-facing names of one conversation: each stands for one owner, for good.
#[derive(Debug, Default, Clone)]
pub struct Names {
    by_name: HashMap<String, Owner>,
    by_owner: HashMap<Owner, String>,
}

impl Names {
    /// `owner`'s name: the one it was given, or a new one from the server's `label` that no
    /// other owner ever had (and whether it is new, to be kept with the conversation).
    pub fn name_for(&mut self, owner: &Owner, label: &str) -> (String, bool) {
        if let Some(name) = self.by_owner.get(owner) {
            return (name.clone(), false);
        }
        let mut base = model_name(label, &owner.tool);
        if is_reserved(&base) {
            // A server called `host` (in any case) keeps working, under a prefix that cannot be
            // the host's; its description still names it as it is named.
            base = model_name(&format!("{RENAMED_PREFIX}{label}"), &owner.tool);
        }
        let name = if self.by_name.contains_key(&base) {
            (2..)
                .map(|n| {
                    let suffix = format!("_{n}");
                    format!("{}{suffix}", truncate(&base, MAX_NAME - suffix.len()))
                })
                .find(|name| !self.by_name.contains_key(name))
                .expect("an unused name exists")
        } else {
            base
        };
        self.by_name.insert(name.clone(), owner.clone());
        self.by_owner.insert(owner.clone(), name.clone());
        (name, true)
    }

    /// A name given earlier (a reopened conversation's); false if it or its owner has another,
    /// or it is one of the host's (an older version could give those to a server).
    pub fn restore(&mut self, name: &str, owner: Owner) -> bool {
        if is_reserved(name) || self.by_name.contains_key(name) || self.by_owner.contains_key(&owner) {
            return false;
        }
        self.by_name.insert(name.to_owned(), owner.clone());
        self.by_owner.insert(owner, name.to_owned());
        true
    }

    /// Who `name` stands for.
    pub fn owner(&self, name: &str) -> Option<&Owner> {
        self.by_name.get(name)
    }
}

/// The tools offered to the model in one request, and what their names stand for.
#[derive(Debug, Default, Clone)]
pub struct ModelTools {
    /// What the model is told.
    pub specs: Vec<ToolSpec>,
    /// Model name -> the server's tool.
    by_name: HashMap<String, ToolEntry>,
    /// Names given for the first time in this offer, with their owners.
    pub new_names: Vec<(String, Owner)>,
}

impl ModelTools {
    /// The tools of `entries` whose visibility includes the model (never app-only ones), each
    /// under its name in `names` (see [`Names`]). Each description starts with the host's marker
    /// of the server it belongs to, then the server's own words as a JSON string.
    pub fn offer(entries: &[ToolEntry], names: &mut Names) -> Self {
        let mut tools = Self::default();
        for entry in entries {
            let visible = match &entry.ui {
                Ok(ui) => ui.visibility.model,
                Err(e) => {
                    tracing::warn!(tool = entry.name(), server = %entry.server, "not offered to the model: {e}");
                    false
                }
            };
            if !visible || entry.name().is_empty() {
                continue;
            }
            let owner = Owner::of(entry);
            let (name, new) = names.name_for(&owner, &name_base(entry));
            if tools.by_name.contains_key(&name) {
                // The same tool listed twice by its server: offered once.
                continue;
            }
            if new {
                tools.new_names.push((name.clone(), owner));
            }
            let title = entry.tool.get("title").and_then(Value::as_str).unwrap_or_default();
            let description = entry.tool.get("description").and_then(Value::as_str).unwrap_or_default();
            let description = match (title.is_empty(), description.is_empty()) {
                (false, false) => format!("{title}: {description}"),
                (false, true) => title.to_owned(),
                _ => description.to_owned(),
            };
            // The server's or App's words go as a JSON string after the host's marker: a copy
            // of the marker inside them cannot read as a second one (see `words`).
            let description = super::words::tool_description(&entry.label, entry.app_view.as_deref(), &description);
            let input_schema = entry
                .tool
                .get("inputSchema")
                .filter(|s| s.is_object())
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"type": "object"}));
            tools.specs.push(ToolSpec { name: name.clone(), description, input_schema });
            tools.by_name.insert(name, entry.clone());
        }
        tools
    }

    /// The server's tool behind a model name.
    pub fn get(&self, name: &str) -> Option<&ToolEntry> {
        self.by_name.get(name)
    }

    /// Keeps in the offer only the tools `keep` says (every tool still answers to its name: the
    /// model may call one it found), then adds `extra` (the host's own tools, which win any
    /// name: a request never offers two tools of one name).
    pub fn narrow(&mut self, keep: impl Fn(&str, &ToolEntry) -> bool, extra: Vec<ToolSpec>) {
        for host in &extra {
            debug_assert!(is_reserved(&host.name), "the host's tool {:?} is outside its namespace", host.name);
            // Never there ([`Names`] gives no server a reserved name); kept so that a name
            // stands for one tool whatever changes elsewhere.
            self.by_name.remove(&host.name);
        }
        let by_name = &self.by_name;
        self.specs.retain(|s| by_name.get(&s.name).is_some_and(|e| keep(&s.name, e)));
        self.specs.extend(extra);
        debug_assert!(unique(&self.specs), "two tools of one name in one request");
    }

    /// Every model-visible tool: its name and its entry.
    pub fn all(&self) -> impl Iterator<Item = (&String, &ToolEntry)> {
        self.by_name.iter()
    }
}

/// Whether every tool in `specs` has a name of its own.
pub(crate) fn unique(specs: &[ToolSpec]) -> bool {
    let mut seen = std::collections::HashSet::new();
    specs.iter().all(|s| seen.insert(s.name.as_str()))
}

/// The tools that best match `query`, best first: each query word found in a tool's name,
/// title or description counts (in its name twice). At most `limit`.
pub fn search<'a>(tools: impl Iterator<Item = (&'a String, &'a ToolEntry)>, query: &str, limit: usize) -> Vec<String> {
    let words: Vec<String> =
        query.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 1).map(str::to_owned).collect();
    let mut scored: Vec<(usize, &String)> = tools
        .filter_map(|(name, entry)| {
            let text = |k: &str| entry.tool.get(k).and_then(Value::as_str).unwrap_or_default().to_lowercase();
            let (lower_name, about) = (
                name.to_lowercase(),
                format!("{} {} {}", text("title"), text("description"), entry.label.to_lowercase()),
            );
            let score: usize = words
                .iter()
                .map(|w| 2 * usize::from(lower_name.contains(w.as_str())) + usize::from(about.contains(w.as_str())))
                .sum();
            (score > 0).then_some((score, name))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(limit).map(|(_, n)| n.clone()).collect()
}

/// `server__tool`, with every character the APIs refuse replaced by `_`, at most 64 long.
pub fn model_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
    };
    truncate(&format!("{}__{}", clean(server), clean(tool)), MAX_NAME).to_owned()
}

fn truncate(s: &str, n: usize) -> &str {
    // ASCII only (see `model_name`): any byte is a boundary.
    &s[..s.len().min(n)]
}

/// Why `structured` does not match the tool's `outputSchema`, if it has one and it does not.
pub fn output_mismatch(tool: &Value, structured: Option<&Value>) -> Option<String> {
    let schema = tool.get("outputSchema").filter(|s| s.is_object())?;
    let Some(structured) = structured else {
        return Some("the tool declares an outputSchema but its result has no structuredContent".into());
    };
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => return Some(format!("the tool's outputSchema is invalid: {e}")),
    };
    let errors: Vec<String> = validator.iter_errors(structured).take(3).map(|e| e.to_string()).collect();
    (!errors.is_empty()).then(|| format!("the result does not match the tool's outputSchema: {}", errors.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(server: &str, tool: Value) -> ToolEntry {
        ToolEntry::new(server, tool)
    }

    fn labelled(server: &str, label: &str, identity: &str, tool: Value) -> ToolEntry {
        let mut e = ToolEntry::new(server, tool);
        e.label = label.to_owned();
        e.identity = identity.to_owned();
        e
    }

    fn offered(entries: &[ToolEntry], names: &mut Names) -> Vec<String> {
        ModelTools::offer(entries, names).specs.into_iter().map(|s| s.name).collect()
    }

    #[test]
    fn the_model_sees_model_visible_tools_only_under_names_kept_apart_per_server() {
        let entries = vec![
            entry(
                "a",
                json!({"name": "search", "title": "Search", "description": "Finds.", "inputSchema": {"type": "object"}}),
            ),
            entry("b.example", json!({"name": "search", "inputSchema": {"type": "object", "properties": {"q": {}}}})),
            entry("a", json!({"name": "refresh", "_meta": {"ui": {"visibility": ["app"]}}})),
            entry("a", json!({"name": "chart", "_meta": {"ui": {"resourceUri": "ui://a/c", "visibility": ["model"]}}})),
        ];
        let tools = ModelTools::offer(&entries, &mut Names::default());
        let names: Vec<&str> = tools.specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a__search", "b_example__search", "a__chart"], "an app-only tool is never offered");
        assert_eq!(tools.specs[0].description, r#"[A tool of the server "a"] "Search: Finds.""#);
        assert_eq!(tools.get("b_example__search").unwrap().server, "b.example");
        assert_eq!(tools.specs[2].input_schema, json!({"type": "object"}), "a missing schema is an empty object");
        // Names the APIs accept, unique even when cleaning makes two alike.
        let twins =
            offered(&[entry("s", json!({"name": "a.b"})), entry("s", json!({"name": "a_b"}))], &mut Names::default());
        assert_eq!(twins, ["s__a_b", "s__a_b_2"]);
        let long = model_name(&"x".repeat(50), &"y".repeat(50));
        assert_eq!(long.len(), 64);
    }

    #[test]
    fn a_name_never_changes_owner_whatever_the_lists_do() {
        let mut names = Names::default();
        let a = labelled("index", "index", "stdio:node a/index.mjs", json!({"name": "lookup"}));
        let b = labelled("index (2)", "index (2)", "stdio:node b/index.mjs", json!({"name": "lookup"}));
        // Both servers first: each its own name.
        assert_eq!(offered(&[a.clone(), b.clone()], &mut names), ["index__lookup", "index__2___lookup"]);
        // A's list changes (its tool goes): B keeps its name, and A's name is never B's.
        assert_eq!(offered(std::slice::from_ref(&b), &mut names), ["index__2___lookup"]);
        let tools = ModelTools::offer(std::slice::from_ref(&b), &mut names);
        assert!(tools.get("index__lookup").is_none(), "A's name stands for nothing while A is gone");
        // B alone first, in a conversation where A comes later: A never takes B's name.
        let mut names = Names::default();
        let b_as_index = labelled("index", "index", "stdio:node b/index.mjs", json!({"name": "lookup"}));
        assert_eq!(offered(std::slice::from_ref(&b_as_index), &mut names), ["index__lookup"]);
        // The server set of a later run calls another program `index`: another owner, another name.
        let a_as_index = labelled("index", "index", "stdio:node a/index.mjs", json!({"name": "lookup"}));
        assert_eq!(
            offered(&[a_as_index.clone(), b_as_index.clone()], &mut names),
            ["index__lookup_2", "index__lookup"]
        );
        assert_eq!(names.owner("index__lookup").unwrap().server.identity, "stdio:node b/index.mjs");
        // Order of the lists does not matter once names are given.
        assert_eq!(offered(&[b_as_index, a_as_index], &mut names), ["index__lookup", "index__lookup_2"]);
    }

    #[test]
    fn look_alike_and_long_names_get_names_of_their_own() {
        let mut names = Names::default();
        let files = labelled("files", "files", "stdio:files", json!({"name": "read"}));
        let cyrillic = labelled("f\u{456}les", "f\u{456}les", "stdio:evil", json!({"name": "read"}));
        let fxles = labelled("f_les", "f_les", "stdio:other", json!({"name": "read"}));
        assert_eq!(offered(&[files, cyrillic, fxles], &mut names), ["files__read", "f_les__read", "f_les__read_2"]);
        let long = "x".repeat(70);
        let one = labelled(&format!("{long}1"), &format!("{long}1"), "stdio:1", json!({"name": "t"}));
        let two = labelled(&format!("{long}2"), &format!("{long}2"), "stdio:2", json!({"name": "t"}));
        let got = offered(&[one, two], &mut names);
        assert_eq!(got[0], "x".repeat(64));
        assert_eq!(got[1], format!("{}_2", "x".repeat(62)));
        assert!(got.iter().all(|n| n.len() <= 64));
        // A name given earlier is restored for its owner only.
        let mut fresh = Names::default();
        let owner = names.owner("f_les__read").unwrap().clone();
        assert!(fresh.restore("f_les__read", owner.clone()));
        assert!(!fresh.restore("f_les__read", Owner { tool: "other".into(), ..owner }));
    }

    #[test]
    fn the_servers_own_name_names_its_tools_when_the_host_made_the_name_up() {
        let mut names = Names::default();
        let e = labelled("index", "Time Server", "stdio:node index.js", json!({"name": "get-time"}));
        let tools = ModelTools::offer(&[e], &mut names);
        assert_eq!(tools.specs[0].name, "Time_Server__get-time");
        assert!(tools.specs[0].description.starts_with("[A tool of the server \"Time Server\"]"));
        assert_eq!(tools.new_names.len(), 1);
    }

    #[test]
    fn a_server_named_like_the_host_gets_a_name_outside_the_hosts() {
        let mut names = Names::default();
        let host = labelled("host", "host", "stdio:host", json!({"name": "find_tools"}));
        let upper = labelled("HOST", "HOST", "stdio:upper", json!({"name": "find_tools"}));
        let twin = labelled("server_host", "server_host", "stdio:twin", json!({"name": "find_tools"}));
        let got = offered(&[host, upper, twin], &mut names);
        assert_eq!(got, ["server_host__find_tools", "server_HOST__find_tools", "server_host__find_tools_2"]);
        assert!(got.iter().all(|n| !is_reserved(n)));
        // The honest control: a server whose name only starts like the host's keeps its name.
        let hosted = labelled("hosted", "hosted", "stdio:hosted", json!({"name": "find_tools"}));
        assert_eq!(offered(&[hosted], &mut names), ["hosted__find_tools"]);
        // A reopened conversation of an older version gave a server the host's name: not again.
        let owner = names.owner("server_host__find_tools").unwrap().clone();
        assert!(!Names::default().restore("host__find_tools", owner.clone()));
        assert!(!Names::default().restore("Host__Find_tools", owner.clone()));
        assert!(Names::default().restore("server_host__find_tools", owner));
    }

    #[test]
    fn the_hosts_own_tools_win_their_names_in_every_request() {
        let mut names = Names::default();
        // Whatever gives a server the host's name (here: restored from a hand-edited file, bypassing
        // `restore`'s check), the request offers one tool of that name, the host's.
        let entry = labelled("s", "s", "stdio:s", json!({"name": "find_tools"}));
        names.by_name.insert("host__find_tools".into(), Owner::of(&entry));
        names.by_owner.insert(Owner::of(&entry), "host__find_tools".into());
        let mut tools = ModelTools::offer(&[entry], &mut names);
        let host = ToolSpec { name: "host__find_tools".into(), description: String::new(), input_schema: json!({}) };
        tools.narrow(|_, _| true, vec![host]);
        assert!(unique(&tools.specs));
        assert_eq!(tools.specs.len(), 1);
        assert!(tools.get("host__find_tools").is_none(), "the name is the host's, not the server's");
    }

    #[test]
    fn a_result_that_does_not_match_the_output_schema_is_flagged() {
        let tool =
            json!({"outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}});
        assert_eq!(output_mismatch(&tool, Some(&json!({"n": 3}))), None);
        assert!(output_mismatch(&tool, Some(&json!({"n": "three"}))).unwrap().contains("does not match"));
        assert!(output_mismatch(&tool, None).unwrap().contains("no structuredContent"));
        assert_eq!(output_mismatch(&json!({}), Some(&json!(1))), None, "no schema, nothing to check");
    }
}
