//! The config file's edits: what each keeps, what each refuses.

use super::*;

fn stdio() -> Resolved {
    Resolved::Stdio { command: "node".into(), args: vec!["s.mjs".into()], env: vec![("K".into(), "v".into())] }
}

#[test]
fn an_edit_keeps_the_entrys_other_keys_and_place_and_a_rename_cannot_take_a_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let original = r#"{"zTheme": "dark", "mcpServers": {"a": {"command": "x", "args": ["--v"], "env": {"K": "v"}, "autoApprove": ["t"]}, "b": {"url": "https://example.com/mcp", "headers": {"H": "1"}}, "c": {"command": "y", "disabled": true}}, "aOther": 1}"#;
    std::fs::write(&path, original).unwrap();
    let line = Resolved::Stdio { command: "node".into(), args: vec!["s.mjs".into(), "--w".into()], env: Vec::new() };
    edit_server(&path, "a", "a", &line).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let order: Vec<usize> =
        ["zTheme", "\"a\"", "\"node\"", "s.mjs", "\"K\"", "autoApprove", "\"b\"", "\"c\"", "aOther"]
            .iter()
            .map(|k| text.find(k).unwrap_or_else(|| panic!("{k} missing:\n{text}")))
            .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(!text.contains("--v") && !text.contains("\"x\""), "{text}");

    // A rename keeps the place and the keys; a disabled entry stays disabled.
    edit_server(&path, "c", "renamed", &line).unwrap();
    let load = load_config(&path, &LoadOptions::new()).unwrap();
    assert_eq!(load.servers.iter().map(|s| s.name()).collect::<Vec<_>>(), ["a", "b"]);
    let listed: Vec<String> = entries(&path).unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(listed, ["a", "b", "renamed"]);
    assert!(entries(&path).unwrap()[2].disabled);
    let remote = Resolved::Remote { url: "https://example.org/sse".into(), sse: true, headers: Vec::new() };
    edit_server(&path, "b", "remote", &remote).unwrap();
    let load = load_config(&path, &LoadOptions::new()).unwrap();
    match &load.servers[1] {
        ServerSpec::Sse { name, url, headers, .. } => {
            assert_eq!((name.as_str(), url.as_str()), ("remote", "https://example.org/sse"));
            assert_eq!(headers, &[("H".to_owned(), "1".to_owned())]);
        }
        other => panic!("{other:?}"),
    }

    // Onto another's name, or to what would not load: refused, nothing written.
    let before = std::fs::read_to_string(&path).unwrap();
    let err = edit_server(&path, "a", "remote", &line).unwrap_err();
    assert!(err.contains("already has a server named \"remote\"") && err.contains("nothing was changed"), "{err}");
    let insecure = Resolved::Remote { url: "http://example.com/mcp".into(), sse: false, headers: Vec::new() };
    let err = edit_server(&path, "a", "a", &insecure).unwrap_err();
    assert!(err.contains("would not load") && err.contains("https"), "{err}");
    let err = edit_server(&path, "gone", "gone", &line).unwrap_err();
    assert!(err.contains("no server named \"gone\""), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);

    // A file the loader cannot read is refused, not rewritten.
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"mcpServers\": {\"a\": {\"command\": \"x\"}},}").unwrap();
    let err = edit_server(&broken, "a", "a", &line).unwrap_err();
    assert!(err.contains("not valid JSON") && err.contains("fix the file first"), "{err}");
    assert!(std::fs::read_to_string(&broken).unwrap().ends_with("},}"));
}

#[test]
fn an_import_renames_a_clash_keeps_env_and_says_what_it_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, r#"{"mcpServers": {"demo": {"command": "x"}}, "keep": true}"#).unwrap();
    let vscode = dir.path().join("vscode.json");
    let theirs = r#"{"servers": {"demo": {"type": "stdio", "command": "node", "args": ["d.mjs"], "env": {"TOKEN": "${env:TOKEN}"}}, "web": {"type": "sse", "url": "https://example.com/events", "headers": {"Authorization": "Bearer t"}}, "bad": {"type": "stdio", "command": ""}, "off": {"command": "y", "disabled": true}}, "inputs": []}"#;
    std::fs::write(&vscode, theirs).unwrap();
    let imported = import(&path, &vscode).unwrap();
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(imported.added, [pair("demo", "demo-2"), pair("web", "web")]);
    assert_eq!(imported.skipped.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["bad", "off"]);
    assert!(imported.skipped[0].1.contains("must not be empty"), "{:?}", imported.skipped);
    assert_eq!(std::fs::read_to_string(&vscode).unwrap(), theirs, "the imported file is only read");
    let load = load_config(&path, &LoadOptions::new()).unwrap();
    assert_eq!(load.servers.iter().map(|s| s.name()).collect::<Vec<_>>(), ["demo", "demo-2", "web"]);
    match &load.servers[1] {
        ServerSpec::Stdio { env, args, .. } => {
            assert_eq!(env, &[("TOKEN".to_owned(), "${env:TOKEN}".to_owned())]);
            assert_eq!(args, &["d.mjs"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(&load.servers[2], ServerSpec::Sse { headers, .. } if headers.len() == 1));
    assert!(std::fs::read_to_string(&path).unwrap().contains("\"keep\": true"));

    // A desktop client's file into a VS Code one: the entries get their type; again, the
    // next free name.
    let desktop = dir.path().join("claude_desktop_config.json");
    std::fs::write(&desktop, r#"{"mcpServers": {"demo": {"command": "node", "args": ["e.mjs"], "autoApprove": ["t"]}, "r": {"url": "https://example.com/mcp"}}, "globalShortcut": "x"}"#).unwrap();
    let mine = dir.path().join("mine.json");
    std::fs::write(&mine, r#"{"servers": {"demo": {"type": "stdio", "command": "x"}}}"#).unwrap();
    let imported = import(&mine, &desktop).unwrap();
    assert_eq!(imported.added, [pair("demo", "demo-2"), pair("r", "r")]);
    let load = load_config(&mine, &LoadOptions::new()).unwrap();
    assert_eq!(load.servers.len(), 3, "{:?}", load.errors);
    assert!(std::fs::read_to_string(&mine).unwrap().contains("autoApprove"));
    // Again: nothing, since each server is the person's already (the same command line, folder
    // and environment, or URL), and the file is not rewritten.
    let written = std::fs::read_to_string(&mine).unwrap();
    let again = import(&mine, &desktop).unwrap();
    assert!(again.added.is_empty(), "{again:?}");
    assert_eq!(
        again.skipped,
        [
            pair("demo", "the same server is in your servers as \"demo-2\""),
            pair("r", "the same server is in your servers as \"r\"")
        ]
    );
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), written);

    // A file the loader cannot read is not imported, and the person's file is untouched.
    let before = std::fs::read_to_string(&path).unwrap();
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"servers\": [1]}").unwrap();
    let err = import(&path, &broken).unwrap_err();
    assert!(err.contains("cannot import it") && err.contains("nothing was changed"), "{err}");
    let err = import(&path, &path).unwrap_err();
    assert!(err.contains("uses already"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    // Nor into a file it cannot read.
    let unreadable = dir.path().join("unreadable.json");
    std::fs::write(&unreadable, "{\"mcpServers\": {},}").unwrap();
    let err = import(&unreadable, &vscode).unwrap_err();
    assert!(err.contains("fix the file first"), "{err}");
}

/// One server twice in the imported file, or a server the person has under another name, comes
/// in once; what differs in folder or environment is another server and comes in.
#[test]
fn an_import_brings_each_server_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, r#"{"mcpServers": {"notes": {"command": "node", "args": ["n.mjs"]}}}"#).unwrap();
    let theirs = dir.path().join("claude_desktop_config.json");
    std::fs::write(
        &theirs,
        r#"{"mcpServers": {"my-notes": {"command": "node", "args": ["n.mjs"]}, "other-dir": {"command": "node", "args": ["n.mjs"], "cwd": "/srv"}, "keyed": {"command": "node", "args": ["n.mjs"], "env": {"K": "1"}}, "web": {"url": "https://example.com/mcp"}, "web-again": {"url": "https://example.com/mcp"}}}"#,
    )
    .unwrap();
    let imported = import(&path, &theirs).unwrap();
    let names: Vec<&str> = imported.added.iter().map(|(_, to)| to.as_str()).collect();
    assert_eq!(names, ["other-dir", "keyed", "web"]);
    let skipped: Vec<(&str, &str)> = imported.skipped.iter().map(|(n, why)| (n.as_str(), why.as_str())).collect();
    assert_eq!(
        skipped,
        [
            ("my-notes", "the same server is in your servers as \"notes\""),
            ("web-again", "the same server is in your servers as \"web\"")
        ]
    );
}

#[test]
fn other_keys_stay_in_order_and_a_clash_needs_replace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(
        &path,
        r#"{"zTheme": "dark", "mcpServers": {"b": {"command": "x", "autoApprove": ["t"]}}, "aOther": [1, 2.5]}"#,
    )
    .unwrap();
    let w = add_server(&path, "new", &stdio(), false).unwrap();
    assert!(!w.created && !w.replaced);
    let text = std::fs::read_to_string(&path).unwrap();
    let order: Vec<usize> = ["zTheme", "mcpServers", "\"b\"", "autoApprove", "\"new\"", "aOther", "2.5"]
        .iter()
        .map(|k| text.find(k).unwrap_or_else(|| panic!("{k} missing:\n{text}")))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    let err = add_server(&path, "b", &stdio(), false).unwrap_err();
    assert!(err.contains("already has a server named \"b\"") && err.contains("--replace"), "{err}");
    assert!(add_server(&path, "b", &stdio(), true).unwrap().replaced);
    let load = load_config(&path, &LoadOptions::new()).unwrap();
    assert_eq!(load.servers.iter().map(|s| s.name()).collect::<Vec<_>>(), ["b", "new"]);
}

#[test]
fn a_new_file_is_private_and_a_bad_one_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/mcp.json");
    let remote = Resolved::Remote { url: "https://example.com/sse".into(), sse: false, headers: Vec::new() };
    let w = add_server(&path, "r", &remote, false).unwrap();
    assert!(w.created && !w.readable_by_others);
    let load = load_config(&path, &LoadOptions::new()).unwrap();
    assert!(matches!(load.servers[0], crate::server::ServerSpec::StreamableHttp { .. }), "{:?}", load.servers);

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"mcpServers\": {}, // mine\n}").unwrap();
    let err = add_server(&bad, "r", &remote, false).unwrap_err();
    assert!(err.contains("has comments") && err.contains("nothing was changed"), "{err}");
    assert!(std::fs::read_to_string(&bad).unwrap().contains("// mine"));
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"mcpServers\": {\"a\": \"http://x//y\"},}").unwrap();
    let err = add_server(&broken, "r", &remote, false).unwrap_err();
    assert!(err.contains("not valid JSON") && err.contains("fix the file first"), "{err}");

    // The loader's own rules decide: an http URL that is not local is refused, nothing written.
    let insecure = Resolved::Remote { url: "http://example.com/mcp".into(), sse: false, headers: Vec::new() };
    let err = add_server(&path, "insecure", &insecure, false).unwrap_err();
    assert!(err.contains("would not load") && err.contains("https"), "{err}");
    assert!(!std::fs::read_to_string(&path).unwrap().contains("insecure"));
    assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "no temporary file left");
}

#[test]
fn vs_code_files_get_typed_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, r#"{"servers": {}, "inputs": []}"#).unwrap();
    add_server(&path, "s", &stdio(), false).unwrap();
    let load = load_config(&path, &LoadOptions::new()).unwrap();
    assert_eq!(load.format, ConfigFormat::VsCode);
    assert_eq!(load.servers.len(), 1);
    assert!(std::fs::read_to_string(&path).unwrap().contains("\"type\": \"stdio\""));
}

#[test]
fn the_editor_keeps_the_persons_keys_and_refuses_what_would_not_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let original = r#"{"zTheme": "dark", "mcpServers": {"a": {"command": "x", "autoApprove": ["t"], "args": ["--v"]}, "b": {"url": "https://example.com/mcp"}}, "aOther": 1}"#;
    std::fs::write(&path, original).unwrap();

    set_disabled(&path, "a", true).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let order: Vec<usize> = ["zTheme", "\"a\"", "autoApprove", "--v", "\"disabled\": true", "\"b\"", "aOther"]
        .iter()
        .map(|k| text.find(k).unwrap_or_else(|| panic!("{k} missing:\n{text}")))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    let load = load_config(&path, &LoadOptions::new()).unwrap();
    assert_eq!(load.servers.iter().map(|s| s.name()).collect::<Vec<_>>(), ["b"]);
    let listed = entries(&path).unwrap();
    assert_eq!(
        listed,
        [
            ConfigEntry { name: "a".into(), disabled: true, what: "x --v".into() },
            ConfigEntry { name: "b".into(), disabled: false, what: "https://example.com/mcp".into() },
        ]
    );

    set_disabled(&path, "a", false).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("disabled") && text.contains("autoApprove"), "{text}");
    remove_server(&path, "b").unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("\"b\"") && text.contains("zTheme") && text.contains("aOther"), "{text}");
    let err = remove_server(&path, "b").unwrap_err();
    assert!(err.contains("no server named \"b\""), "{err}");

    // A bad entry is refused before anything is written.
    let before = std::fs::read_to_string(&path).unwrap();
    let bad = Resolved::Stdio { command: String::new(), args: Vec::new(), env: Vec::new() };
    let err = add_server(&path, "empty", &bad, false).unwrap_err();
    assert!(err.contains("would not load") && err.contains("must not be empty"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);

    // VS Code's JSONC: refused by name, the file untouched.
    let jsonc = dir.path().join("vscode.json");
    let text = "{\n  // my servers\n  \"servers\": {\"a\": {\"type\": \"stdio\", \"command\": \"x\"}}\n}";
    std::fs::write(&jsonc, text).unwrap();
    for err in [set_disabled(&jsonc, "a", true).unwrap_err(), remove_server(&jsonc, "a").unwrap_err()] {
        assert!(err.contains("has comments") && err.contains("nothing was changed"), "{err}");
    }
    assert_eq!(std::fs::read_to_string(&jsonc).unwrap(), text);
    assert!(!has_comments(r#"{"url": "https://x//y/*z*/", "q": "\"//"}"#));
}

#[test]
fn the_model_section_is_written_and_the_rest_of_the_file_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(
        &path,
        r#"{"theirs": 1, "mcpServers": {"a": {"command": "node", "args": ["s.mjs"]}}, "model": {"name": "openai:old", "keyFile": "k"}}"#,
    )
    .unwrap();
    set_model(&path, "anthropic:claude-x", Some("http://127.0.0.1:9/"), false).unwrap();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        v["model"],
        serde_json::json!({"name": "anthropic:claude-x", "keyFile": "k", "url": "http://127.0.0.1:9/"})
    );
    assert_eq!(v["theirs"], 1);
    assert_eq!(v["mcpServers"]["a"]["command"], "node");
    // A key given in the app wins over the file; no URL takes the old one out.
    set_model(&path, "openai:gpt-x", None, true).unwrap();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["model"], serde_json::json!({"name": "openai:gpt-x"}));
    // No file: a new desktop-format one, owner-only.
    let new = dir.path().join("new/mcp.json");
    set_model(&new, "ollama:qwen3:8b", None, false).unwrap();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&new).unwrap()).unwrap();
    assert_eq!(v, serde_json::json!({"mcpServers": {}, "model": {"name": "ollama:qwen3:8b"}}));
}

#[test]
fn a_file_without_a_model_section_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let vscode = dir.path().join("mcp.json");
    let text = r#"{"servers": {"a": {"type": "stdio", "command": "node"}}}"#;
    std::fs::write(&vscode, text).unwrap();
    let e = set_model(&vscode, "openai:gpt-x", None, false).unwrap_err();
    assert!(e.contains("not a desktop-format config file"), "{e}");
    assert_eq!(std::fs::read_to_string(&vscode).unwrap(), text);
    let commented = dir.path().join("c.json");
    std::fs::write(&commented, "{\"mcpServers\": {} // mine\n}").unwrap();
    assert!(set_model(&commented, "openai:gpt-x", None, false).unwrap_err().contains("comments"));
}
