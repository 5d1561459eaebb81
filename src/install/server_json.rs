//! The MCP registry's `server.json`: a server's `packages` (npm run by `npx`, PyPI by `uvx`) and
//! `remotes` (Streamable HTTP, SSE), with the inputs each declares: environment variables,
//! package and runtime arguments, headers and URL variables (`isRequired`, `isSecret`,
//! `default`, `choices`, and `{name}` placeholders filled from an input's `variables`). The
//! registry API's answer for one server (`{"server": {...}, "_meta": {...}}`) is read too.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{check_name, Plan, Setting, Target, Template};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ServerJson {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    packages: Vec<Package>,
    #[serde(default)]
    remotes: Vec<Transport>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Package {
    registry_type: String,
    identifier: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    registry_base_url: Option<String>,
    #[serde(default)]
    transport: Option<Transport>,
    #[serde(default)]
    runtime_arguments: Vec<Argument>,
    #[serde(default)]
    package_arguments: Vec<Argument>,
    #[serde(default)]
    environment_variables: Vec<KeyValueInput>,
}

/// A package's `transport` or one of `remotes`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Transport {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: Vec<KeyValueInput>,
    #[serde(default)]
    variables: BTreeMap<String, Input>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Input {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    is_required: bool,
    #[serde(default)]
    is_secret: bool,
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    default: Option<String>,
    #[serde(default)]
    choices: Vec<String>,
    #[serde(default)]
    variables: BTreeMap<String, Input>,
}

#[derive(Debug, Deserialize)]
struct KeyValueInput {
    name: String,
    #[serde(flatten)]
    input: Input,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Argument {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    value_hint: Option<String>,
    #[serde(flatten)]
    input: Input,
}

/// Which entry of a `server.json` to install.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pick {
    /// The first package this host can run, else the first remote.
    First,
    /// The first remote.
    Remote,
}

/// Reads a `server.json` (or the registry API's answer holding one) into a [`Plan`].
pub(crate) fn plan(text: &str, pick: Pick) -> Result<Plan, String> {
    let value: serde_json::Value =
        serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(text)).map_err(|e| format!("not JSON: {e}"))?;
    let value = match value.get("server") {
        Some(inner) if inner.is_object() && value.get("name").is_none() => inner.clone(),
        _ => value,
    };
    let server: ServerJson = serde_json::from_value(value).map_err(|e| format!("not a server.json: {e}"))?;
    let name = server.name.rsplit('/').next().unwrap_or_default().to_owned();
    let mut origin = format!("server.json {}", server.name);
    if let Some(v) = &server.version {
        origin.push_str(&format!(" {v}"));
    }
    let mut facts = Vec::new();
    if let Some(d) = server.description.as_deref().filter(|d| !d.is_empty()) {
        facts.push(("Description".to_owned(), crate::consent::one_line_max(d, 200)));
    }
    let mut settings = Settings::default();
    let target = match pick {
        Pick::First if !server.packages.is_empty() => {
            let package = &server.packages[0];
            package_target(package, &mut settings, &mut facts)?
        }
        _ => {
            let Some(remote) = server.remotes.first() else {
                return Err(if pick == Pick::Remote {
                    format!("{} lists no remote (only packages); install it without --remote", server.name)
                } else {
                    format!("{} lists no package and no remote: nothing to install", server.name)
                });
            };
            remote_target(remote, &mut settings)?
        }
    };
    if check_name(&name).is_err() {
        return Err(format!(
            "the server's name {:?} does not make a config key this installer writes; give one with --name",
            server.name
        ));
    }
    Plan { name, origin, facts, settings: settings.0, target }.bounded()
}

/// The settings collected so far; a key asked twice (the same variable in two places) is one.
#[derive(Default)]
struct Settings(Vec<Setting>);

impl Settings {
    fn add(&mut self, key: &str, input: &Input) {
        if self.0.iter().any(|s| s.key == key) {
            return;
        }
        self.0.push(Setting {
            key: key.to_owned(),
            title: String::new(),
            description: input.description.clone().unwrap_or_default(),
            required: input.is_required,
            secret: input.is_secret,
            default: input.default.clone(),
            choices: match (input.format.as_deref(), input.choices.is_empty()) {
                (Some("boolean"), true) => vec!["true".to_owned(), "false".to_owned()],
                _ => input.choices.clone(),
            },
            number: (input.format.as_deref() == Some("number")).then_some((None, None)),
            multiple: false,
            path: None,
        });
    }

    /// The value of an input named `key`: its fixed `value` (with `{variables}` as settings),
    /// else a setting of its own.
    fn template(&mut self, key: &str, input: &Input) -> Template {
        match &input.value {
            Some(value) => {
                for (var, inner) in &input.variables {
                    self.add(var, inner);
                }
                Template::parse(value, &|k| input.variables.contains_key(k))
            }
            None => {
                self.add(key, input);
                Template::var(key)
            }
        }
    }
}

fn package_target(
    package: &Package,
    settings: &mut Settings,
    facts: &mut Vec<(String, String)>,
) -> Result<Target, String> {
    if let Some(t) = package.transport.as_ref().filter(|t| t.kind != "stdio") {
        return Err(format!(
            "package {} serves over {:?}; this host runs packages over stdio only (install its remote with --remote, \
             if it lists one)",
            package.identifier, t.kind
        ));
    }
    check_word("package identifier", &package.identifier)?;
    if let Some(v) = &package.version {
        check_word("package version", v)?;
    }
    let (command, spec, what) = match package.registry_type.as_str() {
        "npm" => (
            "npx",
            package.version.as_ref().map_or(package.identifier.clone(), |v| format!("{}@{v}", package.identifier)),
            "npm",
        ),
        "pypi" => (
            "uvx",
            package.version.as_ref().map_or(package.identifier.clone(), |v| format!("{}=={v}", package.identifier)),
            "PyPI",
        ),
        other => {
            return Err(format!(
                "package {} has registryType {other:?}, which this host cannot run (it runs \"npm\" packages with npx \
                 and \"pypi\" packages with uvx)",
                package.identifier
            ))
        }
    };
    // The registry the package is named in is the one it is fetched from: a private one goes on
    // the command line (else npx or uvx would fetch a package of that name from the public one).
    let registry = match &package.registry_base_url {
        Some(base) => registry_words(&package.registry_type, &package.identifier, base)?,
        None => Vec::new(),
    };
    let mut fact = format!("{what} {spec}");
    match (&package.registry_base_url, registry.last()) {
        (Some(_), Some(used)) => fact.push_str(&format!(" from the registry {used}")),
        (Some(base), None) => fact.push_str(&format!(" from the public registry {base} ({command}'s default)")),
        (None, _) => fact.push_str(&format!(" from {command}'s default registry")),
    }
    facts.push(("Package".to_owned(), fact));
    let mut args = Vec::new();
    for a in &package.runtime_arguments {
        args.push(argument(a, settings)?);
    }
    if command == "npx" {
        args.push(vec![Template::lit("-y")]);
    }
    // After the runtime arguments, so that it is the one npx or uvx takes.
    args.extend(registry.into_iter().map(|w| vec![Template::lit(w)]));
    args.push(vec![Template::lit(spec)]);
    for a in &package.package_arguments {
        args.push(argument(a, settings)?);
    }
    let env =
        package.environment_variables.iter().map(|e| (e.name.clone(), settings.template(&e.name, &e.input))).collect();
    Ok(Target::Stdio { command: command.to_owned(), args, env })
}

/// The words that make npx or uvx fetch from the registry `base` (none for the public registry
/// they use anyway), or why a registry cannot be used: it must be an https URL (http only on
/// loopback), and its type one whose runner takes a registry.
fn registry_words(kind: &str, identifier: &str, base: &str) -> Result<Vec<String>, String> {
    let refuse = |why: String| {
        Err(format!(
            "package {identifier} names the registry {base:?}, and {why}; refused rather than fetched from another \
             registry"
        ))
    };
    let url = match crate::server::config::parse_remote_url(base) {
        Ok(url) => url,
        Err(why) => return refuse(format!("that is not a registry this host fetches from: {why}")),
    };
    if url.query().is_some() {
        return refuse("a registry's address has no query (?...)".to_owned());
    }
    let path = url.path().trim_end_matches('/');
    let host = url.host_str().unwrap_or_default();
    match kind {
        // npx's own registry, where the person's npm config does not name another.
        "npm" if url.scheme() == "https" && host == "registry.npmjs.org" && path.is_empty() => Ok(Vec::new()),
        "npm" => Ok(vec!["--registry".to_owned(), url.to_string()]),
        "pypi" if url.scheme() == "https" && host == "pypi.org" && matches!(path, "" | "/simple") => Ok(Vec::new()),
        // The registry's base, whose package index (PEP 503) is `/simple/`; `--default-index`
        // replaces PyPI for the package and all it needs (uv's name for pip's `--index-url`).
        "pypi" => {
            let index = if path.ends_with("/simple") { format!("{path}/") } else { format!("{path}/simple/") };
            let mut url = url.clone();
            url.set_path(&index);
            Ok(vec!["--default-index".to_owned(), url.to_string()])
        }
        other => refuse(format!("packages of type {other:?} cannot be fetched from a registry this host names")),
    }
}

/// `positional`: its value; `named`: its name, then its value (or only its name, for a flag
/// with neither value nor setting).
fn argument(a: &Argument, settings: &mut Settings) -> Result<Vec<Template>, String> {
    match a.kind.as_str() {
        "positional" => {
            let key = a.value_hint.clone().or_else(|| a.name.clone()).unwrap_or_else(|| "argument".to_owned());
            Ok(vec![settings.template(&key, &a.input)])
        }
        "named" => {
            let name = a.name.as_deref().filter(|n| !n.is_empty()).ok_or("a named argument has no \"name\"")?;
            let key = name.trim_start_matches('-');
            let flag_only = a.input.value.is_none()
                && a.input.default.is_none()
                && a.value_hint.is_none()
                && !a.input.is_required
                && a.input.choices.is_empty();
            if flag_only {
                return Ok(vec![Template::lit(name)]);
            }
            Ok(vec![Template::lit(name), settings.template(key, &a.input)])
        }
        other => Err(format!("argument type {other:?} is neither \"positional\" nor \"named\"")),
    }
}

fn remote_target(remote: &Transport, settings: &mut Settings) -> Result<Target, String> {
    let sse = match remote.kind.as_str() {
        "streamable-http" => false,
        "sse" => true,
        other => return Err(format!("remote type {other:?} is neither \"streamable-http\" nor \"sse\"")),
    };
    let raw = remote.url.as_deref().ok_or("a remote has no \"url\"")?;
    for (var, input) in &remote.variables {
        settings.add(var, input);
    }
    let url = Template::parse(raw, &|k| remote.variables.contains_key(k));
    let headers = remote.headers.iter().map(|h| (h.name.clone(), settings.template(&h.name, &h.input))).collect();
    Ok(Target::Remote { url, sse, headers })
}

/// A package name or version goes to npx/uvx as a word of its own: it may not look like an
/// option, nor hold whitespace or control characters.
fn check_word(what: &str, word: &str) -> Result<(), String> {
    if word.is_empty() || word.starts_with('-') || word.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{what} {word:?} is not a plain name"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::install::Resolved;

    const NPM: &str = r#"{
      "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
      "name": "io.github.example/weather",
      "description": "Weather",
      "version": "1.2.0",
      "packages": [{
        "registryType": "npm", "identifier": "@example/weather-mcp", "version": "1.2.0",
        "transport": {"type": "stdio"},
        "packageArguments": [
          {"type": "positional", "value": "--stdio"},
          {"type": "named", "name": "--units", "default": "metric", "choices": ["metric", "imperial"]},
          {"type": "named", "name": "--verbose"}
        ],
        "environmentVariables": [
          {"name": "WEATHER_API_KEY", "isRequired": true, "isSecret": true, "description": "your key"},
          {"name": "WEATHER_URL", "value": "https://{region}.example.com", "variables": {"region": {"default": "eu"}}}
        ]
      }]
    }"#;

    #[test]
    fn an_npm_package_runs_with_npx_at_its_version() {
        let plan = plan(NPM, Pick::First).unwrap();
        assert_eq!(plan.name, "weather");
        let keys: Vec<&str> = plan.settings.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, ["units", "WEATHER_API_KEY", "region"]);
        let answers = plan.check_answers(&[("WEATHER_API_KEY".into(), "k".into())]).unwrap();
        let Resolved::Stdio { command, args, env } = plan.resolve(&answers).unwrap() else { panic!() };
        assert_eq!(command, "npx");
        assert_eq!(args, ["-y", "@example/weather-mcp@1.2.0", "--stdio", "--units", "metric", "--verbose"]);
        assert_eq!(
            env,
            [("WEATHER_API_KEY".into(), "k".into()), ("WEATHER_URL".into(), "https://eu.example.com".into())]
        );
        assert!(plan.check_answers(&[("units".into(), "kelvin".into())]).is_err());
    }

    #[test]
    fn pypi_runs_with_uvx_and_other_registries_are_refused() {
        let text = NPM.replace("\"npm\"", "\"pypi\"").replace("@example/weather-mcp", "weather-mcp");
        let plan = plan(&text, Pick::First).unwrap();
        let mut a = HashMap::new();
        a.insert("WEATHER_API_KEY".to_owned(), "k".to_owned());
        let Resolved::Stdio { command, args, .. } = plan.resolve(&a).unwrap() else { panic!() };
        assert_eq!((command.as_str(), args[0].as_str()), ("uvx", "weather-mcp==1.2.0"));
        let err = super::plan(&NPM.replace("\"npm\"", "\"oci\""), Pick::First).unwrap_err();
        assert!(err.contains("registryType \"oci\"") && err.contains("npx"), "{err}");
        let err = super::plan(&NPM.replace("@example/weather-mcp", "--eval=x"), Pick::First).unwrap_err();
        assert!(err.contains("not a plain name"), "{err}");
    }

    #[test]
    fn a_remote_takes_its_url_variables_and_headers() {
        let text = r#"{"server": {"name": "io.example/tickets", "remotes": [{
            "type": "streamable-http", "url": "https://{tenant}.example.com/mcp",
            "variables": {"tenant": {"isRequired": true}},
            "headers": [{"name": "Authorization", "value": "Bearer {token}", "variables": {"token": {"isSecret": true, "isRequired": true}}}]
        }]}, "_meta": {}}"#;
        let plan = plan(text, Pick::First).unwrap();
        assert!(plan.summary().iter().any(|(_, v)| v == "https://<tenant>.example.com/mcp (Streamable HTTP)"));
        let answers = plan.check_answers(&[("tenant".into(), "acme".into()), ("token".into(), "t0k".into())]).unwrap();
        assert_eq!(
            plan.resolve(&answers).unwrap(),
            Resolved::Remote {
                url: "https://acme.example.com/mcp".into(),
                sse: false,
                headers: vec![("Authorization".into(), "Bearer t0k".into())]
            }
        );
        assert!(super::plan(text, Pick::Remote).is_ok());
        assert!(super::plan(NPM, Pick::Remote).unwrap_err().contains("no remote"));
    }

    /// The npm package of [`NPM`] with `registryBaseUrl` set.
    fn with_registry(kind: &str, base: &str) -> Result<Plan, String> {
        let text = NPM.replace(
            "\"registryType\": \"npm\",",
            &format!("\"registryType\": \"{kind}\", \"registryBaseUrl\": {base:?},"),
        );
        let text = if kind == "pypi" { text.replace("@example/weather-mcp", "weather-mcp") } else { text };
        plan(&text, Pick::First)
    }

    fn runs(plan: &Plan) -> (String, Vec<String>) {
        let mut a = HashMap::new();
        a.insert("WEATHER_API_KEY".to_owned(), "k".to_owned());
        let Resolved::Stdio { command, args, .. } = plan.resolve(&a).unwrap() else { panic!() };
        (command, args)
    }

    #[test]
    fn a_package_runs_from_the_registry_it_names() {
        let p = with_registry("npm", "https://npm.acme.example").unwrap();
        let (command, args) = runs(&p);
        assert_eq!(command, "npx");
        assert_eq!(args[..4], ["-y", "--registry", "https://npm.acme.example/", "@example/weather-mcp@1.2.0"]);
        let summary = p.summary();
        let line = |label: &str| summary.iter().find(|(l, _)| l == label).map(|(_, v)| v.clone()).unwrap();
        assert!(line("Runs").starts_with("npx -y --registry https://npm.acme.example/ @example/weather-mcp@1.2.0"));
        assert_eq!(line("Package"), "npm @example/weather-mcp@1.2.0 from the registry https://npm.acme.example/");
        assert!(p.agreement().warnings.iter().any(|w| w.contains("npx --registry")), "{:?}", p.agreement());

        let p = with_registry("pypi", "https://pypi.acme.example/base").unwrap();
        let (command, args) = runs(&p);
        assert_eq!(command, "uvx");
        assert_eq!(args[..3], ["--default-index", "https://pypi.acme.example/base/simple/", "weather-mcp==1.2.0"]);
        let (_, args) = runs(&with_registry("pypi", "http://127.0.0.1:8080/simple").unwrap());
        assert_eq!(args[..2], ["--default-index", "http://127.0.0.1:8080/simple/"]);

        // The public registries are what npx and uvx use anyway: nothing is added.
        let (_, args) = runs(&with_registry("npm", "https://registry.npmjs.org").unwrap());
        assert_eq!(args[..2], ["-y", "@example/weather-mcp@1.2.0"]);
        let (_, args) = runs(&with_registry("pypi", "https://pypi.org").unwrap());
        assert_eq!(args[0], "weather-mcp==1.2.0");
        let (_, args) = runs(&plan(NPM, Pick::First).unwrap());
        assert_eq!(args[..2], ["-y", "@example/weather-mcp@1.2.0"]);
    }

    #[test]
    fn a_registry_that_is_not_https_is_refused_saying_why() {
        for (base, why) in [
            ("http://npm.acme.example", "plain http:// is allowed only for localhost"),
            ("npm.acme.example", "absolute"),
            ("file:///srv/npm", "not supported"),
            ("https://u:p@npm.acme.example", "user name or password"),
            ("https://npm.acme.example/?x=1", "no query"),
        ] {
            let err = with_registry("npm", base).unwrap_err();
            assert!(err.contains(why) && err.contains("names the registry"), "{base}: {err}");
        }
        assert!(registry_words("oci", "x", "https://ghcr.io")
            .unwrap_err()
            .contains("cannot be fetched from a registry"));
    }

    #[test]
    fn a_command_line_too_big_to_show_is_refused() {
        let long = NPM.replace("\"--stdio\"", &format!("{:?}", "x".repeat(70 * 1024)));
        let err = plan(&long, Pick::First).unwrap_err();
        assert!(err.contains("more than the 64 KiB"), "{err}");
        assert!(plan(&NPM.replace("\"--stdio\"", &format!("{:?}", "x".repeat(60 * 1024))), Pick::First).is_ok());
    }
}
