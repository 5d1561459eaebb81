//! Install links, the one shape a web page can hand this host:
//!
//! ```text
//! mcp-apps-host://install?config=<base64url of a JSON object>
//! {"name": "weather", "command": "npx", "args": ["-y", "weather-mcp@1.2.0"], "env": {"API_KEY": ""}}
//! {"name": "tickets", "url": "https://mcp.example.com/mcp", "type": "http", "headers": {"Authorization": ""}}
//! ```
//!
//! `name` is required; `command` (with `args`, `env`) or `url` (with `type` `http` or `sse`,
//! `headers`). An `env` or `headers` value left empty is a secret setting asked at install (a
//! page cannot know the person's key). Base64url with or without padding. Anything else is
//! refused: a link comes from a web page, so it gets no more than this shape.

use base64::Engine as _;

use super::{check_name, Plan, Setting, Target, Template};

/// The scheme of install links.
pub(crate) const SCHEME: &str = "mcp-apps-host";

const SHAPE: &str = "mcp-apps-host://install?config=<base64url of {\"name\", \"command\", \"args\", \"env\"} or \
                     {\"name\", \"url\", \"type\", \"headers\"}>";

/// Reads an install link into a [`Plan`].
pub(crate) fn plan(link: &str) -> Result<Plan, String> {
    let bad = |why: &str| format!("not an install link this host takes ({why}); the shape is {SHAPE}");
    if link.len() > 64 * 1024 {
        return Err(bad("longer than 64 KiB"));
    }
    let url = url::Url::parse(link).map_err(|e| bad(&e.to_string()))?;
    if url.scheme() != SCHEME || url.host_str() != Some("install") || !matches!(url.path(), "" | "/") {
        return Err(bad("it must start with mcp-apps-host://install?"));
    }
    if url.fragment().is_some() || !url.username().is_empty() || url.port().is_some() {
        return Err(bad("it has parts the shape does not"));
    }
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    let config = match pairs.as_slice() {
        [(key, value)] if key == "config" => value,
        _ => return Err(bad("its query must be config=... and nothing else")),
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(config.trim_end_matches('='))
        .map_err(|e| bad(&format!("config is not base64url: {e}")))?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| bad(&format!("config is not JSON: {e}")))?;
    let serde_json::Value::Object(fields) = value else { return Err(bad("config is not a JSON object")) };
    let string = |key: &str| -> Result<Option<String>, String> {
        match fields.get(key) {
            None => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(bad(&format!("\"{key}\" is not a string"))),
        }
    };
    let map = |key: &str| -> Result<Vec<(String, String)>, String> {
        match fields.get(key) {
            None => Ok(Vec::new()),
            Some(serde_json::Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    serde_json::Value::String(s) => Ok((k.clone(), s.clone())),
                    _ => Err(bad(&format!("\"{key}\".{k} is not a string"))),
                })
                .collect(),
            Some(_) => Err(bad(&format!("\"{key}\" is not an object of strings"))),
        }
    };
    let name = string("name")?.ok_or_else(|| bad("config has no \"name\""))?;
    check_name(&name).map_err(|e| bad(&e))?;
    let mut settings = Vec::new();
    let mut value_of = |key: &str, value: String| {
        if value.is_empty() {
            settings.push(Setting {
                key: key.to_owned(),
                title: String::new(),
                description: String::new(),
                required: true,
                secret: true,
                default: None,
                choices: Vec::new(),
                number: None,
                multiple: false,
                path: None,
            });
            Template::var(key)
        } else {
            Template::lit(value)
        }
    };
    let allowed: &[&str] = match (fields.get("command"), fields.get("url")) {
        (Some(_), None) => &["name", "command", "args", "env"],
        (None, Some(_)) => &["name", "url", "type", "headers"],
        _ => return Err(bad("config needs either \"command\" or \"url\"")),
    };
    if let Some(key) = fields.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad(&format!("config has {key:?}, which the shape does not allow here")));
    }
    let target = if let Some(command) = string("command")? {
        if command.is_empty() {
            return Err(bad("\"command\" is empty"));
        }
        let args = match fields.get("args") {
            None => Vec::new(),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .map(|a| a.as_str().map(|s| vec![Template::lit(s)]).ok_or_else(|| bad("\"args\" holds a non-string")))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(bad("\"args\" is not an array")),
        };
        let env = map("env")?.into_iter().map(|(k, v)| (k.clone(), value_of(&k, v))).collect();
        Target::Stdio { command, args, env }
    } else {
        let url = string("url")?.unwrap_or_default();
        let sse = match string("type")?.as_deref() {
            None | Some("http") => false,
            Some("sse") => true,
            Some(other) => return Err(bad(&format!("type {other:?} is neither \"http\" nor \"sse\""))),
        };
        let headers = map("headers")?.into_iter().map(|(k, v)| (k.clone(), value_of(&k, v))).collect();
        Target::Remote { url: Template::lit(url), sse, headers }
    };
    Plan {
        name,
        origin: "an install link (from a web page: install only what you trust)".to_owned(),
        facts: Vec::new(),
        settings,
        target,
    }
    .bounded()
}

/// The link for `config` (what a web page puts in its `href`).
#[cfg(test)]
fn make(config: &serde_json::Value) -> String {
    let text = config.to_string();
    format!("{SCHEME}://install?config={}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;
    use crate::install::Resolved;

    #[test]
    fn a_link_round_trips_and_asks_for_empty_values() {
        let link = make(&json!({"name": "w", "command": "node", "args": ["s.mjs"], "env": {"KEY": "", "MODE": "x"}}));
        let plan = plan(&link).unwrap();
        assert_eq!(plan.settings.len(), 1);
        assert!(plan.settings[0].secret && plan.settings[0].required);
        assert!(plan.resolve(&HashMap::new()).unwrap_err().contains("--set KEY=VALUE"));
        let answers = plan.check_answers(&[("KEY".into(), "k".into())]).unwrap();
        assert_eq!(
            plan.resolve(&answers).unwrap(),
            Resolved::Stdio {
                command: "node".into(),
                args: vec!["s.mjs".into()],
                env: vec![("KEY".into(), "k".into()), ("MODE".into(), "x".into())]
            }
        );
        // Padding is accepted too.
        assert!(super::plan(&format!("{link}==")).is_ok());
    }

    #[test]
    fn links_of_another_shape_are_refused() {
        let config = |v: serde_json::Value| make(&v);
        for (link, why) in [
            ("mcp-apps-host://other?config=e30".to_owned(), "must start with"),
            ("vscode:mcp/install?%7B%7D".to_owned(), "must start with"),
            ("mcp-apps-host://install?config=e30&x=1".to_owned(), "nothing else"),
            ("mcp-apps-host://install?config=!!".to_owned(), "not base64url"),
            (config(json!(["x"])), "not a JSON object"),
            (config(json!({"command": "x"})), "no \"name\""),
            (config(json!({"name": "a b", "command": "x"})), "not a server name"),
            (config(json!({"name": "a", "command": "x", "url": "https://e.com"})), "either"),
            (config(json!({"name": "a", "command": "x", "cwd": "/"})), "\"cwd\""),
            (config(json!({"name": "a", "url": "https://e.com", "type": "ws"})), "neither"),
        ] {
            let err = plan(&link).unwrap_err();
            assert!(err.contains(why) && err.contains("the shape is"), "{link}: {err}");
        }
    }
}
