//! The config tests: command lines and URLs, whole-file failures and the `model` section here,
//! each format's entry rules in its module below; the helpers every format's tests use.

use std::fs;
use std::path::{Path, PathBuf};

use super::*;

mod agent_plugin;
mod desktop_vscode;

// ---------------------------------------------------------------------------------------------
// Command lines (--stdio)

#[test]
fn parses_quoted_command_lines_without_a_shell() {
    let spec = ServerSpec::from_command_line(r#"node "my server.js" --stdio '$HOME'"#).unwrap();
    let ServerSpec::Stdio { program, args, name, cwd, .. } = &spec else {
        panic!("not stdio: {spec:?}");
    };
    assert_eq!(program, "node");
    assert_eq!(args, &["my server.js", "--stdio", "$HOME"]);
    assert_eq!(name, "my server");
    assert_eq!(cwd, &None);
    assert_eq!(spec.written_identity(), "stdio:node 'my server.js' --stdio '$HOME'");
    assert!(spec.identity().starts_with("stdio:{"), "{}", spec.identity());
}

/// `node notes.mjs` with a `cwd`, an `env` and a `PATH` of its own, for the identity tests.
fn stdio_in(cwd: &Path, env: &[(&str, &str)]) -> ServerSpec {
    let ServerSpec::Stdio { name, program, args, .. } = ServerSpec::from_command_line("node notes.mjs").unwrap() else {
        unreachable!()
    };
    let env = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    ServerSpec::Stdio { name, program, args, env, cwd: Some(cwd.to_owned()) }
}

/// A folder with an executable `node` in `bin/` (its `PATH`) and a `notes.mjs`.
fn folder_with_node(root: &Path, folder: &str) -> PathBuf {
    let home = root.join(folder);
    fs::create_dir_all(home.join("bin")).unwrap();
    fs::write(home.join("notes.mjs"), folder).unwrap();
    fs::write(home.join("bin/node"), "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(home.join("bin/node"), fs::Permissions::from_mode(0o755)).unwrap();
    }
    home
}

#[test]
fn a_stdio_identity_is_the_program_its_folder_environment_and_executable_decide() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (folder_with_node(root.path(), "a"), folder_with_node(root.path(), "b"));
    let host = Surroundings::new(root.path(), Some(a.join("bin").into_os_string()));
    let id = |spec: &ServerSpec| spec.identity_in(&host);
    let notes = stdio_in(&a, &[("FOO", "1"), ("BAR", "2")]);
    // The control: the same entry, taken again (a restart, another run), is the same server;
    // the order env entries are written in says nothing; a relative `cwd` is the same folder.
    assert_eq!(id(&notes), id(&notes.clone()));
    assert_eq!(id(&notes), id(&stdio_in(&a, &[("BAR", "2"), ("FOO", "1")])));
    assert_eq!(id(&notes), id(&stdio_in(Path::new("a"), &[("FOO", "1"), ("BAR", "2")])));
    // The same command line in another folder: another `notes.mjs`, another server.
    assert_ne!(id(&notes), id(&stdio_in(&b, &[("FOO", "1"), ("BAR", "2")])));
    // Another environment (a value, an extra variable, a later value winning): another server.
    assert_ne!(id(&notes), id(&stdio_in(&a, &[("FOO", "1"), ("BAR", "3")])));
    assert_ne!(id(&notes), id(&stdio_in(&a, &[("FOO", "1"), ("BAR", "2"), ("NODE_OPTIONS", "--import=x")])));
    assert_ne!(id(&notes), id(&stdio_in(&a, &[("FOO", "1"), ("BAR", "2"), ("FOO", "9")])));
    // Another executable behind `node` (the host's PATH, or the entry's own): another server.
    let elsewhere = Surroundings::new(root.path(), Some(b.join("bin").into_os_string()));
    assert_ne!(id(&notes), notes.identity_in(&elsewhere));
    let own_path = stdio_in(&a, &[("FOO", "1"), ("BAR", "2"), ("PATH", b.join("bin").to_str().unwrap())]);
    assert!(own_path.identity_in(&host).contains(&format!("{:?}", b.join("bin/node").canonicalize().unwrap())));
    // No `cwd`: the child starts in the host's own folder, which then counts.
    let bare = ServerSpec::from_command_line("node notes.mjs").unwrap();
    let (in_a, in_b) = (Surroundings::new(&a, None), Surroundings::new(&b, None));
    assert_ne!(bare.identity_in(&in_a), bare.identity_in(&in_b));
    assert_eq!(bare.identity_in(&in_a), stdio_in(&a, &[]).identity_in(&in_b), "cwd a is cwd a");
    // The values are not in it (they may be secrets), and it never equals an old command-line key.
    assert!(!id(&stdio_in(&a, &[("TOKEN", "hunter2")])).contains("hunter2"));
    assert_ne!(id(&notes), notes.written_identity());
}

#[test]
fn entries_that_share_a_command_line_are_told_apart_in_the_persons_words() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (folder_with_node(root.path(), "a"), folder_with_node(root.path(), "b"));
    let host = Surroundings::new(root.path(), Some(a.join("bin").into_os_string()));
    let (in_a, in_b) = (stdio_in(&a, &[]), stdio_in(&b, &[("FOO", "1")]));
    let same_names = stdio_in(&a, &[("FOO", "2")]);
    let alone = ServerSpec::from_command_line("node other.mjs").unwrap();
    let said = tell_apart(&[&in_a, &in_b, &alone], &host);
    let a_shown = a.canonicalize().unwrap().display().to_string();
    let b_shown = b.canonicalize().unwrap().display().to_string();
    assert_eq!(said[0].as_deref(), Some(format!("in {a_shown}, no env").as_str()));
    assert_eq!(said[1].as_deref(), Some(format!("in {b_shown}, env: FOO").as_str()));
    assert_eq!(said[2], None, "a command line of its own needs nothing beside it");
    // The same names with other values: said without the values.
    let said = tell_apart(&[&in_b, &same_names], &host);
    assert_eq!(said[1].as_deref(), Some(format!("in {a_shown}, env: FOO (other values)").as_str()));
    // The same program twice: nothing tells them apart (one identity).
    assert_eq!(tell_apart(&[&in_a, &in_a.clone()], &host), vec![None, None]);
}

#[test]
fn display_names_are_short_and_useful() {
    let name = |cl: &str| ServerSpec::from_command_line(cl).unwrap().name().to_owned();
    assert_eq!(name("node tests/fixtures/sdk-app-server.mjs"), "sdk-app-server");
    assert_eq!(name("npx -y @modelcontextprotocol/server-everything"), "@modelcontextprotocol/server-everything");
    assert_eq!(name("/usr/local/bin/weather-mcp --stdio"), "weather-mcp");
    assert_eq!(name("python3 -m"), "python3");
}

#[test]
fn empty_and_unbalanced_command_lines_are_errors() {
    assert!(ServerSpec::from_command_line("   ").unwrap_err().to_string().contains("empty"));
    let err = ServerSpec::from_command_line("node 'open").unwrap_err().to_string();
    assert!(err.contains("node 'open"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// URLs (--url, --header)

#[test]
fn from_url_builds_remote_specs_with_stable_identities() {
    let spec = ServerSpec::from_url(
        "https://api.example.com:8443/mcp",
        &["Authorization: Bearer abc".into(), "X-Trace:on".into()],
    )
    .unwrap();
    assert_eq!(
        spec,
        ServerSpec::StreamableHttp {
            name: "api.example.com:8443".into(),
            url: url::Url::parse("https://api.example.com:8443/mcp").unwrap(),
            headers: vec![("Authorization".into(), "Bearer abc".into()), ("X-Trace".into(), "on".into()),],
            oauth: None,
        }
    );
    assert_eq!(spec.identity(), "http:https://api.example.com:8443/mcp");
    assert_eq!(spec.name(), "api.example.com:8443");

    let sse = ServerSpec::from_url("https://example.com/sse", &[]).unwrap();
    assert!(matches!(sse, ServerSpec::Sse { .. }), "{sse:?}");
    assert_eq!(sse.identity(), "sse:https://example.com/sse");
}

#[test]
fn from_url_allows_plain_http_only_for_loopback_hosts() {
    for ok in [
        "http://localhost:3000/mcp",
        "http://LOCALHOST/mcp",
        "http://127.0.0.1:8080/mcp",
        "http://127.5.6.7/mcp",
        "http://[::1]:9000/mcp",
        "https://example.com/mcp",
    ] {
        ServerSpec::from_url(ok, &[]).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    for bad in ["http://example.com/mcp", "http://10.0.0.1/mcp", "http://localhost.example.com/mcp", "http://[::2]/mcp"]
    {
        let err = ServerSpec::from_url(bad, &[]).unwrap_err().to_string();
        assert!(err.contains("plain http:// is allowed only"), "{bad}: {err}");
    }
}

#[test]
fn from_url_rejects_relative_urls_other_schemes_userinfo_and_fragments() {
    let err = |u: &str| ServerSpec::from_url(u, &[]).unwrap_err().to_string();
    assert!(err("/mcp").contains("absolute"), "{}", err("/mcp"));
    assert!(err("ftp://example.com/").contains("scheme `ftp`"));
    assert!(err("file:///tmp/x").contains("scheme `file`"));
    assert!(err("https://example.com/mcp#top").contains("fragment"));
    let userinfo = err("https://alice:s3cret@example.com/mcp");
    assert!(userinfo.contains("user name or password"), "{userinfo}");
    assert!(!userinfo.contains("s3cret"), "the password leaked: {userinfo}");
}

#[test]
fn from_url_checks_header_lines_without_echoing_values() {
    let err = |headers: &[&str]| {
        let headers: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
        ServerSpec::from_url("https://example.com/mcp", &headers).unwrap_err().to_string()
    };
    let no_colon = err(&["Bearer hunter2"]);
    assert!(no_colon.contains("#1") && no_colon.contains("Name: value"), "{no_colon}");
    assert!(!no_colon.contains("hunter2"), "{no_colon}");

    let bad_token = err(&["X-Ok: 1", "Bad Name: 2"]);
    assert!(bad_token.contains("#2") && bad_token.contains("not a valid HTTP field name"), "{bad_token}");

    let control = err(&["X-Inject: a\r\nHost: evil"]);
    assert!(control.contains("control character"), "{control}");

    let case_dup = err(&["X-Api-Key: one", "x-api-key: two"]);
    assert!(case_dup.contains("different case"), "{case_dup}");
    assert!(!case_dup.contains("two"), "{case_dup}");

    let twice = err(&["X-A: 1", "X-A: 2"]);
    assert!(twice.contains("given twice"), "{twice}");
}

fn only_server(load: &ConfigLoad) -> &ServerSpec {
    assert!(load.errors.is_empty(), "{:#?}", load.errors);
    assert_eq!(load.servers.len(), 1, "{:#?}", load.servers);
    &load.servers[0]
}

fn server<'a>(load: &'a ConfigLoad, name: &str) -> &'a ServerSpec {
    load.servers.iter().find(|s| s.name() == name).unwrap_or_else(|| panic!("{name} not loaded: {:#?}", load.errors))
}

/// Asserts `entry` was skipped for a rule containing `expected`, and returns its message.
fn assert_rule(load: &ConfigLoad, entry: &str, expected: &str) -> String {
    assert!(load.servers.iter().all(|s| s.name() != entry), "{entry} was loaded: {:#?}", load.servers);
    let error = load
        .errors
        .iter()
        .find(|e| e.entry == entry)
        .unwrap_or_else(|| panic!("no error for {entry}: {:#?}", load.errors));
    assert!(error.rule.contains(expected), "{entry}: expected {expected:?} in {:?}", error.rule);
    error.to_string()
}

/// A stdio spec's program, args, env and cwd.
type StdioParts<'a> = (&'a str, &'a [String], &'a [(String, String)], Option<&'a Path>);

fn stdio_parts(spec: &ServerSpec) -> StdioParts<'_> {
    match spec {
        ServerSpec::Stdio { program, args, env, cwd, .. } => {
            (program.as_str(), args.as_slice(), env.as_slice(), cwd.as_deref())
        }
        other => panic!("not stdio: {other:?}"),
    }
}

fn load_file(name: &str, content: &str) -> (tempfile::TempDir, Result<ConfigLoad>) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(name);
    fs::write(&path, content).unwrap();
    let load = load_config(&path, &LoadOptions::new().plugin_data_dir(tmp.path().join("data")));
    (tmp, load)
}

// ---------------------------------------------------------------------------------------------
// Whole-file failures

#[test]
fn unreadable_non_json_and_unknown_shapes_fail_naming_the_file() {
    let missing = Path::new("/nonexistent/mcp-apps-host/mcp.json");
    let err = load_config(missing, &LoadOptions::new()).unwrap_err().to_string();
    assert!(err.contains("/nonexistent/mcp-apps-host/mcp.json") && err.contains("cannot read"), "{err}");

    for (content, expected) in [
        ("{\"mcpServers\": {", "not valid JSON"),
        ("[]", "the top level is an array"),
        (r#"{"mcp": {"servers": {}}}"#, "no \"mcpServers\" or \"servers\" object"),
        (r#"{"mcpServers": "node"}"#, "must be an object"),
    ] {
        let (tmp, load) = load_file("config.json", content);
        let err = load.unwrap_err().to_string();
        assert!(err.contains(expected), "{content}: {err}");
        assert!(err.contains(&tmp.path().join("config.json").display().to_string()), "{err}");
    }
}

#[test]
fn a_byte_order_mark_is_tolerated() {
    let (_tmp, load) = load_file("config.json", "\u{feff}{\"mcpServers\": {\"a\": {\"command\": \"node\"}}}");
    assert_eq!(load.unwrap().servers.len(), 1);
}

#[test]
fn default_config_path_is_in_the_user_config_dir() {
    let path = default_config_path().expect("a user config directory");
    assert!(path.ends_with("mcp-apps-host/mcp.json"), "{path:?}");
    assert!(path.is_absolute());
}

#[test]
fn remote_entries_may_name_a_preregistered_oauth_client() {
    let (_tmp, load) = load_file(
        "mcp.json",
        r#"{"mcpServers": {
            "public": {"url": "https://a.example.com/mcp", "oauth": {"clientId": "host-app"}},
            "confidential": {"url": "https://b.example.com/mcp", "oauth": {"clientId": "c", "clientSecret": "s3cret"}},
            "no-id": {"url": "https://c.example.com/mcp", "oauth": {"clientSecret": "s"}},
            "typo": {"url": "https://d.example.com/mcp", "oauth": {"clientID": "x"}},
            "not-object": {"url": "https://e.example.com/mcp", "oauth": "x"}
        }}"#,
    );
    let load = load.unwrap();
    let oauth = |name: &str| match server(&load, name) {
        ServerSpec::StreamableHttp { oauth, .. } => oauth.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(oauth("public").map(|c| (c.client_id, c.client_secret)), Some(("host-app".into(), None)));
    let confidential = oauth("confidential").unwrap();
    assert_eq!(confidential.client_secret.as_deref(), Some("s3cret"));
    assert!(!format!("{confidential:?}").contains("s3cret"), "the secret never shows in Debug");
    assert_rule(&load, "no-id", "\"clientId\" is required");
    assert_rule(&load, "typo", "unknown field \"clientID\"");
    assert_rule(&load, "not-object", "\"oauth\" must be an object");
}

// ---------------------------------------------------------------------------------------------
// The host's own `model` section

#[test]
fn a_model_section_names_the_model_and_never_holds_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let write = |text: &str| {
        let path = dir.path().join("mcp.json");
        fs::write(&path, text).unwrap();
        load_config(&path, &LoadOptions::new())
    };
    let servers = r#""mcpServers": {"a": {"command": "node", "args": ["a.js"]}}"#;
    let load = write(&format!(
        r#"{{{servers}, "model": {{"name": "openai:m", "url": "http://127.0.0.1:8080/v1", "keyFile": "k"}}}}"#
    ))
    .unwrap();
    let model = load.model.unwrap();
    assert_eq!((model.name.as_str(), model.url.as_deref()), ("openai:m", Some("http://127.0.0.1:8080/v1")));
    assert_eq!(model.key_file, Some(dir.path().join("k")), "relative to the config file");
    assert_eq!(write(&format!("{{{servers}}}")).unwrap().model, None);
    let err = |text: String| write(&text).unwrap_err().to_string();
    assert!(err(format!(r#"{{{servers}, "model": {{"name": "openai:m", "apiKey": "sk-1"}}}}"#))
        .contains("must not hold a key"));
    assert!(err(format!(r#"{{{servers}, "model": {{"url": "x"}}}}"#)).contains("needs \"name\""));
    assert!(err(format!(r#"{{{servers}, "model": "openai:m"}}"#)).contains("must be an object"));
    assert!(err(format!(r#"{{{servers}, "model": {{"name": "openai:m", "temperature": 1}}}}"#)).contains("unknown key"));
    let vscode = r#"{"servers": {"a": {"command": "node"}}, "model": {"name": "openai:m"}}"#;
    assert!(err(vscode.into()).contains("VS Code"));
}
