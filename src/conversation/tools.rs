//! Which tools the model sees, under which names, and which ask the person before they run.

use std::collections::HashMap;

use serde_json::Value;

use crate::model::ToolSpec;
use crate::server::registry::ToolEntry;

/// A model's tool names: `^[a-zA-Z0-9_-]{1,64}$` in both APIs.
const MAX_NAME: usize = 64;

/// The tools offered to the model in one request, and what their names stand for.
#[derive(Debug, Default, Clone)]
pub struct ModelTools {
    /// What the model is told.
    pub specs: Vec<ToolSpec>,
    /// Model name -> the server's tool.
    by_name: HashMap<String, ToolEntry>,
}

impl ModelTools {
    /// The tools of `entries` whose visibility includes the model (never app-only ones), each
    /// named `server__tool` so two servers' tools of one name stay apart.
    pub fn offer(entries: &[ToolEntry]) -> Self {
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
            let name = tools.unique(&model_name(&entry.server, entry.name()));
            let title = entry.tool.get("title").and_then(Value::as_str).unwrap_or_default();
            let description = entry.tool.get("description").and_then(Value::as_str).unwrap_or_default();
            let description = match (title.is_empty(), description.is_empty()) {
                (false, false) => format!("{title}: {description}"),
                (false, true) => title.to_owned(),
                _ => description.to_owned(),
            };
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

    fn unique(&self, base: &str) -> String {
        if !self.by_name.contains_key(base) {
            return base.to_owned();
        }
        (2..)
            .map(|n| {
                let suffix = format!("_{n}");
                format!("{}{suffix}", truncate(base, MAX_NAME - suffix.len()))
            })
            .find(|name| !self.by_name.contains_key(name))
            .expect("an unused name exists")
    }
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

/// Whether the person is asked before the model runs `tool`: unless its annotations say it only
/// reads (`readOnlyHint: true`) and do not say it destroys (`destructiveHint: true`). MCP's
/// defaults (a tool may write, and destructively) ask.
pub fn asks_first(tool: &Value) -> bool {
    let hint = |name: &str| tool.pointer(&format!("/annotations/{name}")).and_then(Value::as_bool);
    hint("readOnlyHint") != Some(true) || hint("destructiveHint") == Some(true)
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
        let tools = ModelTools::offer(&entries);
        let names: Vec<&str> = tools.specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a__search", "b_example__search", "a__chart"], "an app-only tool is never offered");
        assert_eq!(tools.specs[0].description, "Search: Finds.");
        assert_eq!(tools.get("b_example__search").unwrap().server, "b.example");
        assert_eq!(tools.specs[2].input_schema, json!({"type": "object"}), "a missing schema is an empty object");
        // Names the APIs accept, unique even when cleaning makes two alike.
        let twins = ModelTools::offer(&[entry("s", json!({"name": "a.b"})), entry("s", json!({"name": "a_b"}))]);
        assert_eq!(twins.specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["s__a_b", "s__a_b_2"]);
        let long = model_name(&"x".repeat(50), &"y".repeat(50));
        assert_eq!(long.len(), 64);
    }

    #[test]
    fn only_read_only_tools_run_without_asking() {
        assert!(asks_first(&json!({"name": "t"})), "MCP's defaults: it may write");
        assert!(!asks_first(&json!({"annotations": {"readOnlyHint": true}})));
        assert!(asks_first(&json!({"annotations": {"readOnlyHint": true, "destructiveHint": true}})));
        assert!(asks_first(&json!({"annotations": {"readOnlyHint": false, "destructiveHint": false}})));
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
