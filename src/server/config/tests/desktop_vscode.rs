//! The desktop chat client's and VS Code's formats: verbatim resolution and their entry rules.

use super::*;

// ---------------------------------------------------------------------------------------------
// Desktop chat client

#[test]
fn desktop_client_config_resolves_verbatim() {
    let (tmp, load) = load_file(
        "claude_desktop_config.json",
        r#"{
          "globalShortcut": "Ctrl+Space",
          "mcpServers": {
            "files": {
              "command": "/Applications/My Tools/files-mcp",
              "args": ["--root", "${HOME}/docs"],
              "env": {"TOKEN": "${env:TOKEN}"},
              "cwd": "/srv/files"
            },
            "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer x"}},
            "legacy": {"url": "http://localhost:8080/sse"},
            "typed": {"url": "https://mcp.example.com/events", "type": "sse"},
            "forced-http": {"url": "https://mcp.example.com/sse", "type": "http"},
            "off": {"command": "node", "disabled": true}
          }
        }"#,
    );
    let load = load.unwrap();
    assert!(!tmp.path().join("data").exists(), "only plugins get a data directory");
    assert_eq!(load.format, ConfigFormat::DesktopClient);
    assert!(load.errors.is_empty(), "{:#?}", load.errors);
    assert_eq!(
        load.servers[0],
        ServerSpec::Stdio {
            name: "files".into(),
            program: "/Applications/My Tools/files-mcp".into(),
            args: vec!["--root".into(), "${HOME}/docs".into()],
            env: vec![("TOKEN".into(), "${env:TOKEN}".into())],
            cwd: Some(PathBuf::from("/srv/files")),
        }
    );
    assert!(matches!(&load.servers[1], ServerSpec::StreamableHttp { headers, .. } if headers.len() == 1));
    assert!(matches!(load.servers[2], ServerSpec::Sse { .. }), "a /sse path means SSE");
    assert!(matches!(load.servers[3], ServerSpec::Sse { .. }), "type sse means SSE");
    assert!(matches!(load.servers[4], ServerSpec::StreamableHttp { .. }), "an explicit type wins");
    assert_eq!(load.servers.len(), 5, "a disabled server is skipped: {:?}", load.servers);
}

#[test]
fn desktop_client_entry_rules() {
    let (_tmp, load) = load_file(
        "mcp.json",
        r#"{"mcpServers": {
            "both": {"command": "node", "url": "https://x.example.com/mcp"},
            "neither": {"args": ["x"]},
            "plain-http": {"url": "http://x.example.com/mcp"},
            "wrong-type": {"command": "node", "type": "sse"},
            "url-args": {"url": "https://x.example.com/mcp", "args": []},
            "command-headers": {"command": "node", "headers": {}},
            "unknown-type": {"url": "https://x.example.com/mcp", "type": "ws"},
            "header-dup": {"url": "https://x.example.com/mcp", "headers": {"A": "1", "a": "2"}},
            "ok": {"command": "node", "autoApprove": ["x"]}
        }}"#,
    );
    let load = load.unwrap();
    assert_eq!(load.format, ConfigFormat::DesktopClient, "mcp.json without plugin.json");
    assert_rule(&load, "both", "both \"command\" and \"url\"");
    assert_rule(&load, "neither", "needs either \"command\"");
    assert_rule(&load, "plain-http", "plain http://");
    assert_rule(&load, "wrong-type", "does not fit a server with a \"command\"");
    assert_rule(&load, "url-args", "\"args\" does not apply");
    assert_rule(&load, "command-headers", "\"headers\" does not apply");
    assert_rule(&load, "unknown-type", "unknown type \"ws\"");
    assert_rule(&load, "header-dup", "different case");
    assert_eq!(load.servers.len(), 1, "unknown client fields are ignored");
}

// ---------------------------------------------------------------------------------------------
// VS Code

#[test]
fn vscode_config_resolves_with_literal_variables() {
    let (_tmp, load) = load_file(
        "mcp.json",
        r#"{
          "inputs": [{"type": "promptString", "id": "key", "description": "API key", "password": true}],
          "servers": {
            "local": {"type": "stdio", "command": "npx", "args": ["-y", "server"], "env": {"HOME_DIR": "${env:HOME}"}, "cwd": "${workspaceFolder}"},
            "http": {"type": "http", "url": "https://x.example.com/mcp", "headers": {"X-A": "b"}},
            "events": {"type": "sse", "url": "https://x.example.com/events"},
            "inferred": {"command": "uvx", "args": ["server"]},
            "devmode": {"type": "stdio", "command": "node", "dev": {"watch": "src/**/*.ts"}}
          }
        }"#,
    );
    let load = load.unwrap();
    assert_eq!(load.format, ConfigFormat::VsCode);
    assert!(load.errors.is_empty(), "{:#?}", load.errors);
    assert_eq!(
        load.servers[0],
        ServerSpec::Stdio {
            name: "local".into(),
            program: "npx".into(),
            args: vec!["-y".into(), "server".into()],
            env: vec![("HOME_DIR".into(), "${env:HOME}".into())],
            cwd: Some(PathBuf::from("${workspaceFolder}")),
        }
    );
    assert!(matches!(load.servers[1], ServerSpec::StreamableHttp { .. }));
    assert!(matches!(load.servers[2], ServerSpec::Sse { .. }), "type sse with any path");
    assert!(matches!(load.servers[3], ServerSpec::Stdio { .. }));
    assert_eq!(load.servers.len(), 5);
}

#[test]
fn vscode_entry_rules() {
    let (_tmp, load) = load_file(
        "mcp.json",
        r#"{"servers": {
            "input": {"type": "http", "url": "https://x.example.com/mcp", "headers": {"Authorization": "Bearer ${input:key}"}},
            "env-file": {"type": "stdio", "command": "node", "envFile": "${workspaceFolder}/.env"},
            "websocket": {"type": "ws", "url": "wss://x.example.com"},
            "stdio-url": {"type": "stdio", "command": "node", "url": "https://x.example.com/mcp"},
            "http-command": {"type": "http", "url": "https://x.example.com/mcp", "command": "node"},
            "plain-http": {"type": "http", "url": "http://x.example.com/mcp"},
            "untyped": {"args": []}
        }}"#,
    );
    let load = load.unwrap();
    assert_rule(&load, "input", "input variables (${input:...}) are not supported");
    assert_rule(&load, "env-file", "\"envFile\" is not supported");
    assert_rule(&load, "websocket", "unknown type \"ws\"");
    assert_rule(&load, "stdio-url", "\"url\" does not apply to a stdio server");
    assert_rule(&load, "http-command", "\"command\" does not apply");
    assert_rule(&load, "plain-http", "plain http://");
    assert_rule(&load, "untyped", "needs \"type\"");
    assert!(load.servers.is_empty());
}

#[test]
fn vscode_top_level_is_servers_and_inputs_only() {
    let (tmp, load) = load_file("mcp.json", r#"{"servers": {}, "tasks": []}"#);
    let err = load.unwrap_err().to_string();
    assert!(err.contains("unknown top-level key \"tasks\""), "{err}");
    assert!(err.contains(&tmp.path().join("mcp.json").display().to_string()), "{err}");

    let (_tmp, load) = load_file("mcp.json", r#"{"servers": {}, "mcpServers": {}}"#);
    assert!(load.unwrap_err().to_string().contains("both \"servers\""));
}

#[test]
fn vscode_entries_may_be_disabled_as_desktop_ones() {
    let (_tmp, load) = load_file(
        "mcp.json",
        r#"{"servers": {"on": {"type": "stdio", "command": "node"}, "off": {"type": "stdio", "command": "node", "disabled": true},
            "bad": {"type": "stdio", "command": "node", "disabled": "yes"}}}"#,
    );
    let load = load.unwrap();
    assert_eq!(load.servers.iter().map(ServerSpec::name).collect::<Vec<_>>(), ["on"]);
    assert_eq!(load.errors.len(), 1, "{:?}", load.errors);
    assert!(load.errors[0].entry == "bad" && load.errors[0].rule.contains("\"disabled\" must be true or false"));
}
