//! Agent Plugins `mcp.json` 1.0: detection, the spec's example, closed variants, placeholders,
//! plugin-relative commands and cwd containment.

use super::super::agent_plugin::expand_placeholders;
use super::*;

const PLUGIN_MANIFEST: &str = r#"{
    "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
    "name": "weather-tools",
    "version": "1.0.0"
}"#;

/// A plugin in a temporary directory: `<base>/plugin` with `plugin.json`, an executable
/// `bin/server`, a `sub/` directory, and `<base>/outside` to escape to.
struct Plugin {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
    outside: PathBuf,
}

impl Plugin {
    fn new() -> Self {
        Self::in_dir("plugin")
    }

    fn in_dir(relative_root: &str) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join(relative_root);
        fs::create_dir_all(root.join("bin")).unwrap();
        fs::create_dir_all(root.join("sub")).unwrap();
        fs::write(root.join("plugin.json"), PLUGIN_MANIFEST).unwrap();
        fs::write(root.join("bin/server"), "#!/bin/sh\n").unwrap();
        let outside = base.join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("tool"), "#!/bin/sh\n").unwrap();
        Self { root, data: base.join("data"), outside, _tmp: tmp }
    }

    fn path(&self) -> PathBuf {
        self.root.join("mcp.json")
    }

    fn try_load(&self, mcp_json: &str) -> Result<ConfigLoad> {
        fs::write(self.path(), mcp_json).unwrap();
        load_config(&self.path(), &LoadOptions::new().plugin_data_dir(&self.data))
    }

    fn load(&self, mcp_json: &str) -> ConfigLoad {
        let load = self.try_load(mcp_json).unwrap();
        assert_eq!(load.format, ConfigFormat::AgentPlugin);
        load
    }

    fn root_str(&self) -> &str {
        self.root.to_str().unwrap()
    }

    fn data_str(&self) -> String {
        self.data.to_str().unwrap().to_owned()
    }
}

/// An Agent Plugins document with one server `entry`.
fn agent(entry: &str, server: &str) -> String {
    format!(r#"{{"$schema": "{AGENT_PLUGINS_MCP_SCHEMA}", "mcpServers": {{"{entry}": {server}}}}}"#)
}

/// The spec's example: a bundled server started from the plugin, a remote server beside it.
const SPEC_EXAMPLE: &str = r#"{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
  "mcpServers": {
    "weather": {
      "type": "stdio",
      "command": "./bin/server",
      "args": ["--config", "${PLUGIN_ROOT}/config.json"],
      "env": { "CACHE_DIR": "${PLUGIN_DATA}/cache", "LOG_LEVEL": "info" }
    },
    "forecast": {
      "type": "streamable-http",
      "url": "https://forecast.example.com/mcp",
      "headers": { "X-Client": "weather-tools" }
    },
    "alerts": { "type": "sse", "url": "https://alerts.example.com/sse" }
  }
}"#;

#[test]
fn agent_plugin_example_resolves_against_root_and_data() {
    let plugin = Plugin::new();
    assert!(!plugin.data.exists());
    let load = plugin.load(SPEC_EXAMPLE);
    assert!(load.errors.is_empty(), "{:#?}", load.errors);
    assert!(plugin.data.is_dir(), "PLUGIN_DATA must be created");
    let names: Vec<&str> = load.servers.iter().map(ServerSpec::name).collect();
    assert_eq!(names, ["weather", "forecast", "alerts"]);

    let (program, args, env, cwd) = stdio_parts(&load.servers[0]);
    assert_eq!(program, plugin.root.join("bin/server").to_str().unwrap());
    assert_eq!(args, ["--config".to_owned(), format!("{}/config.json", plugin.root_str())]);
    let data = plugin.data_str();
    assert_eq!(
        env,
        [
            ("CACHE_DIR".to_owned(), format!("{data}/cache")),
            ("LOG_LEVEL".to_owned(), "info".to_owned()),
            ("PLUGIN_ROOT".to_owned(), plugin.root_str().to_owned()),
            ("PLUGIN_DATA".to_owned(), data.clone()),
        ]
    );
    assert_eq!(cwd, Some(plugin.root.as_path()), "cwd defaults to the plugin root");

    assert_eq!(
        load.servers[1],
        ServerSpec::StreamableHttp {
            name: "forecast".into(),
            url: url::Url::parse("https://forecast.example.com/mcp").unwrap(),
            headers: vec![("X-Client".into(), "weather-tools".into())],
            oauth: None,
        }
    );
    assert_eq!(load.servers[1].identity(), "http:https://forecast.example.com/mcp");
    assert!(matches!(load.servers[2], ServerSpec::Sse { .. }));
    assert_eq!(load.servers[2].identity(), "sse:https://alerts.example.com/sse");
}

#[test]
fn agent_plugin_is_detected_by_location_without_schema() {
    let plugin = Plugin::new();
    let load = plugin.load(r#"{"mcpServers": {"s": {"type": "stdio", "command": "node server.js"}}}"#);
    assert_rule(&load, "s", "single token");
}

#[test]
fn agent_plugin_is_detected_by_schema_outside_a_plugin() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("servers.json");
    fs::write(&path, agent("s", r#"{"type": "stdio", "command": "npx -y server"}"#)).unwrap();
    let data = tmp.path().join("data");
    let load = load_config(&path, &LoadOptions::new().plugin_data_dir(&data)).unwrap();
    assert_eq!(load.format, ConfigFormat::AgentPlugin);
    assert_rule(&load, "s", "single token");
}

#[test]
fn agent_plugin_empty_servers_are_valid() {
    let plugin = Plugin::new();
    let load = plugin.load(&format!(r#"{{"$schema": "{AGENT_PLUGINS_MCP_SCHEMA}", "mcpServers": {{}}}}"#));
    assert!(load.servers.is_empty() && load.errors.is_empty(), "{load:?}");
}

#[test]
fn agent_plugin_top_level_violations_disable_the_whole_file() {
    let plugin = Plugin::new();
    let path = plugin.path().display().to_string();
    let cases = [
        (r#"{"mcpServers": {}, "servers": {}}"#.to_owned(), "unknown top-level key \"servers\""),
        (
            r#"{"$schema": "https://agent-plugins.org/schemas/1.1.0/mcp.schema.json", "mcpServers": {}}"#.to_owned(),
            "is not supported",
        ),
        (r#"{"$schema": "https://example.com/other.json", "mcpServers": {}}"#.to_owned(), "$schema must be"),
        (
            r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json"}"#.to_owned(),
            "\"mcpServers\" is required",
        ),
        (r#"{"mcpServers": []}"#.to_owned(), "must be an object"),
        (r#"{"mcpServers": {}, "mcpServers": {}}"#.to_owned(), "appears twice"),
    ];
    for (doc, expected) in cases {
        let err = plugin.try_load(&doc).unwrap_err().to_string();
        assert!(err.contains(expected), "{doc}: {err}");
        assert!(err.contains(&path), "the message must name the file: {err}");
    }
}

#[test]
fn agent_plugin_version_must_match_plugin_json() {
    let plugin = Plugin::new();
    fs::write(
        plugin.root.join("plugin.json"),
        r#"{"$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json", "name": "x", "version": "1.0.0"}"#,
    )
    .unwrap();
    let err = plugin.try_load(SPEC_EXAMPLE).unwrap_err().to_string();
    assert!(err.contains("versions must match"), "{err}");
}

#[test]
fn agent_plugin_entries_are_closed_variants_selected_by_type() {
    let plugin = Plugin::new();
    let doc = format!(
        r#"{{"mcpServers": {{
            "no-type": {{"command": "node"}},
            "bad-type": {{"type": "websocket", "url": "wss://x.example.com"}},
            "http-alias": {{"type": "http", "url": "https://x.example.com/mcp"}},
            "unknown-field": {{"type": "stdio", "command": "node", "timeout": 5}},
            "stdio-with-url": {{"type": "stdio", "command": "node", "url": "https://x.example.com"}},
            "sse-with-command": {{"type": "sse", "url": "https://x.example.com/sse", "command": "node"}},
            "http-with-env": {{"type": "streamable-http", "url": "https://x.example.com", "env": {{}}}},
            "not-object": "node server.js",
            "twice": {{"type": "stdio", "command": "node", "command": "deno"}},
            "no-command": {{"type": "stdio", "args": []}},
            "empty-command": {{"type": "stdio", "command": ""}},
            "no-url": {{"type": "sse"}},
            "ok": {{"type": "stdio", "command": "node", "args": ["{}"]}}
        }}}}"#,
        "${PLUGIN_ROOT}/server.js"
    );
    let load = plugin.load(&doc);
    assert_rule(&load, "no-type", "\"type\" is required");
    assert_rule(&load, "bad-type", "unknown type \"websocket\"");
    assert_rule(&load, "http-alias", "unknown type \"http\"");
    assert_rule(&load, "unknown-field", "unknown field \"timeout\"");
    assert_rule(&load, "stdio-with-url", "\"url\" belongs to the streamable-http and sse variants");
    assert_rule(&load, "sse-with-command", "\"command\" belongs to the stdio variant");
    assert_rule(&load, "http-with-env", "\"env\" belongs to the stdio variant");
    assert_rule(&load, "not-object", "must be an object");
    assert_rule(&load, "twice", "\"command\" appears twice");
    assert_rule(&load, "no-command", "\"command\" is required");
    assert_rule(&load, "empty-command", "must not be empty");
    assert_rule(&load, "no-url", "\"url\" is required");
    // A bad entry skips only itself.
    assert_eq!(load.servers.len(), 1);
    assert_eq!(load.servers[0].name(), "ok");
    assert_eq!(load.errors.len(), 12);
}

#[test]
fn entry_errors_name_the_server_the_file_and_the_rule() {
    let plugin = Plugin::new();
    let load = plugin.load(&agent("weather", r#"{"type": "stdio", "command": "node server.js"}"#));
    let message = assert_rule(&load, "weather", "single token");
    assert_eq!(
        message,
        format!(
            "server \"weather\" in {}: command must be a single token (no spaces); use args",
            plugin.path().display()
        )
    );
}

#[test]
fn agent_plugin_command_is_one_token_bare_or_plugin_relative() {
    let plugin = Plugin::new();
    let outside_tool = plugin.outside.join("tool");
    std::os::unix::fs::symlink(&outside_tool, plugin.root.join("bin/escape")).unwrap();
    std::os::unix::fs::symlink("server", plugin.root.join("bin/alias")).unwrap();
    let doc = format!(
        r#"{{"mcpServers": {{
            "bare": {{"type": "stdio", "command": "uvx"}},
            "relative": {{"type": "stdio", "command": "./bin/server"}},
            "inner-link": {{"type": "stdio", "command": "./bin/alias"}},
            "spaces": {{"type": "stdio", "command": "./bin/server --stdio"}},
            "tab": {{"type": "stdio", "command": "node\tx"}},
            "absolute": {{"type": "stdio", "command": "{}"}},
            "no-dot": {{"type": "stdio", "command": "bin/server"}},
            "parent": {{"type": "stdio", "command": "../outside/tool"}},
            "dot-parent": {{"type": "stdio", "command": "./../outside/tool"}},
            "symlink-out": {{"type": "stdio", "command": "./bin/escape"}},
            "missing": {{"type": "stdio", "command": "./bin/nothing"}},
            "directory": {{"type": "stdio", "command": "./sub"}},
            "placeholder": {{"type": "stdio", "command": "${{PLUGIN_ROOT}}/bin/server"}}
        }}}}"#,
        outside_tool.display()
    );
    let load = plugin.load(&doc);
    let program = |name: &str| {
        let spec = load.servers.iter().find(|s| s.name() == name).unwrap();
        stdio_parts(spec).0.to_owned()
    };
    assert_eq!(program("bare"), "uvx", "a bare name is left for the PATH lookup");
    assert_eq!(program("relative"), plugin.root.join("bin/server").to_str().unwrap());
    assert_eq!(
        program("inner-link"),
        plugin.root.join("bin/alias").to_str().unwrap(),
        "a symlink inside the plugin is fine and keeps its name"
    );
    assert_rule(&load, "spaces", "command must be a single token (no spaces); use args");
    assert_rule(&load, "tab", "single token");
    assert_rule(&load, "absolute", "must be a bare name (found on PATH) or a ./relative path");
    assert_rule(&load, "no-dot", "must be a bare name");
    assert_rule(&load, "parent", "must be a bare name");
    assert_rule(&load, "dot-parent", "escapes the plugin root");
    assert_rule(&load, "symlink-out", "resolves outside the plugin root");
    assert_rule(&load, "missing", "is not in the plugin");
    assert_rule(&load, "directory", "is not a file");
    assert_rule(&load, "placeholder", "placeholders are not expanded in command");
    assert_eq!(load.servers.len(), 3);
}

#[test]
fn agent_plugin_placeholders_expand_in_args_env_values_and_cwd_only() {
    let plugin = Plugin::new();
    fs::create_dir_all(plugin.root.join("sub/${PLUGIN_ROOT}")).unwrap();
    let load = plugin.load(&agent(
        "s",
        r#"{
            "type": "stdio",
            "command": "node",
            "args": ["${PLUGIN_ROOT}", "a=${PLUGIN_ROOT}:${PLUGIN_DATA}:${PLUGIN_ROOT}", "${HOME}", "${PLUGIN_ROOT", "$PLUGIN_ROOT", "${plugin_root}"],
            "env": {"${PLUGIN_ROOT}": "${PLUGIN_DATA}/x", "OTHER": "${env:HOME}"}
        }"#,
    ));
    let (_, args, env, _) = stdio_parts(only_server(&load));
    let (root, data) = (plugin.root_str(), plugin.data_str());
    assert_eq!(
        args,
        [
            root.to_owned(),
            format!("a={root}:{data}:{root}"),
            "${HOME}".to_owned(),
            "${PLUGIN_ROOT".to_owned(),
            "$PLUGIN_ROOT".to_owned(),
            "${plugin_root}".to_owned(),
        ]
    );
    assert_eq!(env[0], ("${PLUGIN_ROOT}".to_owned(), format!("{data}/x")), "keys are never expanded");
    assert_eq!(env[1], ("OTHER".to_owned(), "${env:HOME}".to_owned()));
}

#[test]
fn placeholder_expansion_is_one_pass_and_not_recursive() {
    // The root's own path contains "${PLUGIN_DATA}": inserting it must not trigger a second pass.
    let plugin = Plugin::in_dir("${PLUGIN_DATA}/plugin");
    assert!(plugin.root_str().contains("${PLUGIN_DATA}"));
    let load = plugin.load(&agent(
        "s",
        r#"{"type": "stdio", "command": "./bin/server", "args": ["${PLUGIN_ROOT}/x"], "cwd": "${PLUGIN_ROOT}/sub"}"#,
    ));
    let (_, args, env, cwd) = stdio_parts(only_server(&load));
    assert_eq!(args, [format!("{}/x", plugin.root_str())]);
    assert!(!args[0].contains(&plugin.data_str()), "{args:?}");
    assert_eq!(cwd, Some(plugin.root.join("sub").as_path()));
    assert_eq!(env.last().unwrap(), &("PLUGIN_DATA".to_owned(), plugin.data_str()));

    assert_eq!(
        expand_placeholders("${PLUGIN_ROOT}|${PLUGIN_DATA}|${X}|$${PLUGIN_ROOT}", "/r/${PLUGIN_DATA}", "/d"),
        "/r/${PLUGIN_DATA}|/d|${X}|$/r/${PLUGIN_DATA}"
    );
}

#[test]
fn agent_plugin_env_must_not_set_plugin_root_or_data() {
    let plugin = Plugin::new();
    let load = plugin.load(
        r#"{"mcpServers": {
            "root": {"type": "stdio", "command": "node", "env": {"PLUGIN_ROOT": "/elsewhere"}},
            "data": {"type": "stdio", "command": "node", "env": {"A": "1", "PLUGIN_DATA": "/tmp"}},
            "bad-name": {"type": "stdio", "command": "node", "env": {"A=B": "1"}},
            "not-string": {"type": "stdio", "command": "node", "env": {"PORT": 8080}},
            "args-not-strings": {"type": "stdio", "command": "node", "args": ["--port", 8080]},
            "host-sets-them": {"type": "stdio", "command": "node", "env": {"A": "1"}}
        }}"#,
    );
    assert_rule(&load, "root", "env must not set PLUGIN_ROOT");
    assert_rule(&load, "data", "env must not set PLUGIN_DATA");
    assert_rule(&load, "bad-name", "is not usable");
    assert_rule(&load, "not-string", "must be a string, found a number");
    assert_rule(&load, "args-not-strings", "\"args\" must be an array of strings");
    let (_, _, env, _) = stdio_parts(server(&load, "host-sets-them"));
    let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["A", "PLUGIN_ROOT", "PLUGIN_DATA"], "the host's two come last and win");
}

#[test]
fn agent_plugin_cwd_forms_and_containment() {
    let plugin = Plugin::new();
    fs::create_dir_all(plugin.data.join("cache")).unwrap();
    std::os::unix::fs::symlink(&plugin.outside, plugin.root.join("out")).unwrap();
    let stdio = |cwd: &str| format!(r#"{{"type": "stdio", "command": "node", "cwd": "{cwd}"}}"#);
    let entries = [
        ("dot", "./sub"),
        ("root", "${PLUGIN_ROOT}"),
        ("root-sub", "${PLUGIN_ROOT}/sub/"),
        ("data", "${PLUGIN_DATA}"),
        ("data-sub", "${PLUGIN_DATA}/cache"),
        ("bare", "sub"),
        ("absolute", "/tmp"),
        ("dot-only", "."),
        ("glued", "${PLUGIN_ROOT}sub"),
        ("other-var", "${HOME}/x"),
        ("dot-escape", "./../outside"),
        ("root-escape", "${PLUGIN_ROOT}/sub/../.."),
        ("data-escape", "${PLUGIN_DATA}/../.."),
        ("data-to-root", "${PLUGIN_DATA}/../plugin"),
        ("symlink-out", "./out"),
        ("missing", "./nothing"),
        ("file", "./bin/server"),
    ];
    let servers: Vec<String> = entries.iter().map(|(name, cwd)| format!(r#""{name}": {}"#, stdio(cwd))).collect();
    let load = plugin.load(&format!(r#"{{"mcpServers": {{{}}}}}"#, servers.join(",")));
    let cwd_of = |name: &str| {
        let spec = load
            .servers
            .iter()
            .find(|s| s.name() == name)
            .unwrap_or_else(|| panic!("{name} not loaded: {:#?}", load.errors));
        stdio_parts(spec).3.unwrap().to_owned()
    };
    assert_eq!(cwd_of("dot"), plugin.root.join("sub"));
    assert_eq!(cwd_of("root"), plugin.root);
    assert_eq!(cwd_of("root-sub"), plugin.root.join("sub"));
    assert_eq!(cwd_of("data"), plugin.data);
    assert_eq!(cwd_of("data-sub"), plugin.data.join("cache"));
    let form = "must start with ./, ${PLUGIN_ROOT} or ${PLUGIN_DATA}";
    for name in ["bare", "absolute", "dot-only", "glued", "other-var"] {
        assert_rule(&load, name, form);
    }
    assert_rule(&load, "dot-escape", "escapes the plugin root");
    assert_rule(&load, "root-escape", "escapes the plugin root");
    assert_rule(&load, "data-escape", "escapes the plugin data directory");
    assert_rule(&load, "data-to-root", "escapes the plugin data directory");
    assert_rule(&load, "symlink-out", "resolves outside the plugin root");
    assert_rule(&load, "missing", "does not exist");
    assert_rule(&load, "file", "is not a directory");
}

#[test]
fn agent_plugin_remote_urls_need_https_unless_loopback() {
    let plugin = Plugin::new();
    let load = plugin.load(
        r#"{"mcpServers": {
            "local": {"type": "streamable-http", "url": "http://localhost:3000/mcp"},
            "loop4": {"type": "sse", "url": "http://127.0.0.1:3000/sse"},
            "loop6": {"type": "streamable-http", "url": "http://[::1]/mcp"},
            "plain": {"type": "streamable-http", "url": "http://mcp.example.com/mcp"},
            "userinfo": {"type": "streamable-http", "url": "https://bob:pw123@mcp.example.com/mcp"},
            "fragment": {"type": "sse", "url": "https://mcp.example.com/sse#x"},
            "relative": {"type": "sse", "url": "/sse"},
            "ws": {"type": "streamable-http", "url": "wss://mcp.example.com/mcp"},
            "placeholder": {"type": "streamable-http", "url": "https://x.example.com/${PLUGIN_ROOT}/mcp"}
        }}"#,
    );
    let names: Vec<&str> = load.servers.iter().map(ServerSpec::name).collect();
    assert_eq!(names, ["local", "loop4", "loop6", "placeholder"]);
    let ServerSpec::StreamableHttp { url, .. } = &load.servers[3] else {
        panic!("{:?}", load.servers[3]);
    };
    assert_eq!(url.path(), "/$%7BPLUGIN_ROOT%7D/mcp", "no expansion in url");
    assert!(matches!(load.servers[1], ServerSpec::Sse { .. }));
    assert_rule(&load, "plain", "plain http:// is allowed only for localhost or a loopback IP");
    let userinfo = assert_rule(&load, "userinfo", "user name or password");
    assert!(!userinfo.contains("pw123"), "{userinfo}");
    assert_rule(&load, "fragment", "fragment");
    assert_rule(&load, "relative", "absolute");
    assert_rule(&load, "ws", "scheme `wss`");
}

#[test]
fn agent_plugin_headers_are_valid_http_fields_without_expansion() {
    let plugin = Plugin::new();
    let load = plugin.load(
        r#"{"mcpServers": {
            "ok": {"type": "streamable-http", "url": "https://x.example.com/mcp", "headers": {"X-Root": "${PLUGIN_ROOT}", "Accept-Language": "en"}},
            "case-dup": {"type": "streamable-http", "url": "https://x.example.com/mcp", "headers": {"X-Key": "a", "x-key": "b"}},
            "exact-dup": {"type": "streamable-http", "url": "https://x.example.com/mcp", "headers": {"X-Key": "a", "X-Key": "b"}},
            "bad-name": {"type": "sse", "url": "https://x.example.com/sse", "headers": {"X Key": "a"}},
            "empty-name": {"type": "sse", "url": "https://x.example.com/sse", "headers": {"": "a"}},
            "crlf": {"type": "sse", "url": "https://x.example.com/sse", "headers": {"X-Key": "a\r\nHost: evil"}},
            "padded": {"type": "sse", "url": "https://x.example.com/sse", "headers": {"X-Key": " a"}},
            "not-string": {"type": "sse", "url": "https://x.example.com/sse", "headers": {"X-Key": true}}
        }}"#,
    );
    let ServerSpec::StreamableHttp { headers, .. } = server(&load, "ok") else {
        panic!("{load:?}");
    };
    assert_eq!(headers[0], ("X-Root".to_owned(), "${PLUGIN_ROOT}".to_owned()));
    assert_rule(&load, "case-dup", "\"x-key\" repeats \"X-Key\" with different case");
    assert_rule(&load, "exact-dup", "\"X-Key\" twice");
    assert_rule(&load, "bad-name", "not a valid HTTP field name");
    assert_rule(&load, "empty-name", "header name is empty");
    assert_rule(&load, "crlf", "control character");
    assert_rule(&load, "padded", "leading or trailing whitespace");
    assert_rule(&load, "not-string", "must be a string, found a boolean");
}

#[test]
fn duplicate_server_names_fail_the_later_entry() {
    let plugin = Plugin::new();
    let load = plugin.load(
        r#"{"mcpServers": {
            "weather": {"type": "stdio", "command": "node", "args": ["first"]},
            "weather": {"type": "stdio", "command": "node", "args": ["second"]},
            "": {"type": "stdio", "command": "node"}
        }}"#,
    );
    assert_eq!(load.servers.len(), 1);
    assert_eq!(stdio_parts(&load.servers[0]).1, ["first".to_owned()]);
    let duplicate = load.errors.iter().find(|e| e.entry == "weather").unwrap();
    assert!(duplicate.rule.contains("names must be unique"), "{duplicate}");
    assert_rule(&load, "", "must not be empty");
}

#[test]
fn default_plugin_data_dir_uses_the_plugin_name() {
    let plugin = Plugin::new();
    let dir = default_plugin_data_dir(&plugin.root).expect("a user data directory");
    assert!(dir.ends_with("mcp-apps-host/plugin-data/weather-tools"), "{dir:?}");

    fs::write(plugin.root.join("plugin.json"), r#"{"name": "Not Valid!"}"#).unwrap();
    let dir = default_plugin_data_dir(&plugin.root).unwrap();
    let last = dir.file_name().unwrap().to_str().unwrap();
    assert!(last.starts_with("plugin-") && last.len() == "plugin-".len() + 8, "{dir:?}");
}
