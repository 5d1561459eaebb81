//! Property tests (fuzzing) of the two parsers that take hostile input before any View runs: the
//! CSP builder (`_meta.ui.csp` entries come from servers) and the config loader (`mcp.json` files
//! come from plugins and users). No display needed.
//!
//! Case counts: `PROPTEST_CASES` overrides the defaults below. Failures are not persisted.

use std::path::Path;

use mcp_apps_host::protocol::ResourceCsp;
use mcp_apps_host::sandbox::build_csp;
use mcp_apps_host::server::config::{load_config, ConfigFormat, LoadOptions, AGENT_PLUGINS_MCP_SCHEMA};
use mcp_apps_host::server::ServerSpec;
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Map, Value};

fn config(default: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    Config { cases, failure_persistence: None, ..Config::default() }
}

// ---------------------------------------------------------------------------------------------
// CSP builder

/// The 12 directives, in order, with the sources this host adds on its own.
const DIRECTIVES: &[(&str, &[&str])] = &[
    ("default-src", &["'none'"]),
    ("script-src", &["'self'", "'unsafe-inline'", "'unsafe-eval'", "'wasm-unsafe-eval'", "blob:"]),
    ("style-src", &["'self'", "'unsafe-inline'"]),
    ("connect-src", &["'self'", "'none'"]),
    ("img-src", &["'self'", "data:", "blob:"]),
    ("font-src", &["'self'", "data:"]),
    ("media-src", &["'self'", "data:", "blob:"]),
    ("worker-src", &["'self'", "blob:"]),
    ("frame-src", &["'none'"]),
    ("object-src", &["'none'"]),
    ("base-uri", &["'self'"]),
    ("form-action", &["'none'"]),
];

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        prop::sample::select(
            &[
                "https",
                "http",
                "wss",
                "ws",
                "HTTPS",
                "data",
                "blob",
                "javascript",
                "mcp-sandbox",
                "mcp-host",
                "file",
                "://",
                ":",
                "/",
                "*",
                "*.",
                ".",
                "..",
                "@",
                "[",
                "]",
                "[::1]",
                ";",
                ",",
                "'",
                "\"",
                "\\",
                " ",
                "\t",
                "\n",
                "\r",
                "\u{0}",
                "\u{7f}",
                "\u{85}",
                "\u{a0}",
                "\u{3000}",
                "\u{ff1b}",
                "\u{202e}",
                "é",
                "?",
                "#",
                "%20",
                "%3B",
                "'self'",
                "'unsafe-inline'",
                "'none'",
                "script-src",
                "default-src",
                "-",
                "a",
                "example",
                "com",
                "127.0.0.1",
                "localhost",
                "8080",
                "99999",
                "0",
                "xn--nxasmq6b",
            ][..],
        )
        .prop_map(str::to_owned),
        "[a-z0-9.-]{1,10}",
        ".{1,4}",
    ]
}

/// Entries: origin-shaped (built from pieces), plainly valid, or anything at all.
fn entry() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(piece(), 1..8).prop_map(|p| p.concat()),
        2 => (
            prop::sample::select(&["https", "http", "wss", "ws"][..]),
            "(\\*\\.)?[a-z0-9-]{1,8}(\\.[a-z0-9-]{1,8}){0,2}",
            prop::option::of(prop_oneof![Just("*".to_owned()), (0u32..70000).prop_map(|p| p.to_string())]),
            prop::option::of(prop_oneof![3 => "/[a-zA-Z0-9/._~%-]{0,12}", 1 => "/.{0,6}"]),
        )
            .prop_map(|(s, h, port, path)| {
                format!("{s}://{h}{}{}", port.map(|p| format!(":{p}")).unwrap_or_default(), path.unwrap_or_default())
            }),
        1 => any::<String>(),
    ]
}

fn entries() -> impl Strategy<Value = Option<Vec<String>>> {
    prop::option::weighted(0.8, prop::collection::vec(entry(), 0..6))
}

fn declared() -> impl Strategy<Value = Option<ResourceCsp>> {
    prop::option::weighted(
        0.9,
        (entries(), entries(), entries(), entries()).prop_map(|(c, r, f, b)| {
            let mut csp = ResourceCsp::default();
            csp.connect_domains = c;
            csp.resource_domains = r;
            csp.frame_domains = f;
            csp.base_uri_domains = b;
            csp
        }),
    )
}

/// The declared entries each directive may grant.
fn inputs_for<'a>(directive: &str, csp: &'a ResourceCsp) -> &'a [String] {
    let list = match directive {
        "connect-src" => &csp.connect_domains,
        "frame-src" => &csp.frame_domains,
        "base-uri" => &csp.base_uri_domains,
        "script-src" | "style-src" | "img-src" | "font-src" | "media-src" | "worker-src" => &csp.resource_domains,
        _ => return &[],
    };
    list.as_deref().unwrap_or(&[])
}

fn check_csp(declared: Option<&ResourceCsp>) -> Result<(), TestCaseError> {
    let policy = build_csp(declared);
    let empty = ResourceCsp::default();
    let csp = declared.unwrap_or(&empty);
    let parts: Vec<&str> = policy.header.split("; ").collect();
    prop_assert_eq!(parts.len(), 12, "not 12 directives: {}", policy.header);
    for (part, (name, base)) in parts.iter().zip(DIRECTIVES) {
        let mut tokens = part.split(' ');
        prop_assert_eq!(tokens.next(), Some(*name), "directive order: {}", policy.header);
        let inputs = inputs_for(name, csp);
        for source in tokens {
            prop_assert!(!source.is_empty(), "empty source in {part:?}");
            prop_assert!(
                !source.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, ';' | ',' | '"' | '\\')),
                "separator or control character inside a source: {source:?}"
            );
            if base.contains(&source) {
                continue;
            }
            prop_assert!(!source.contains('\''), "a quoted keyword the host does not add: {source:?} in {part:?}");
            prop_assert!(inputs.iter().any(|i| i == source), "{source:?} in {name} was not declared for it");
            prop_assert!(source.contains("://") && source != "*", "not an origin: {source:?}");
        }
    }
    // What is granted was declared; what was declared is granted or rejected with a reason.
    let lists = [
        ("connectDomains", &csp.connect_domains, &policy.granted.connect_domains),
        ("resourceDomains", &csp.resource_domains, &policy.granted.resource_domains),
        ("frameDomains", &csp.frame_domains, &policy.granted.frame_domains),
        ("baseUriDomains", &csp.base_uri_domains, &policy.granted.base_uri_domains),
    ];
    for (field, input, granted) in lists {
        let input = input.as_deref().unwrap_or(&[]);
        let granted = granted.as_deref().unwrap_or(&[]);
        for g in granted {
            prop_assert!(input.contains(g), "{field}: granted {g:?} was not declared");
            prop_assert!(policy.header.contains(g.as_str()), "{field}: granted {g:?} is not in the header");
        }
        for i in input {
            let rejected = policy.rejected.iter().any(|r| r.field == field && &r.entry == i);
            prop_assert!(granted.contains(i) != rejected, "{field}: {i:?} is neither granted nor rejected (or both)");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(5000))]

    /// The brief's properties: exactly the 12 directives, no separator/quote/whitespace inside a
    /// source, only declared entries granted, every entry accounted for.
    #[test]
    fn csp_header_has_twelve_directives_and_grants_only_declared_origins(declared in declared()) {
        check_csp(declared.as_ref())?;
    }

    /// The header must survive the trip into WebKit: wry passes response headers through
    /// `HeaderValue::to_str()`, which yields "" (an EMPTY policy) for anything but visible ASCII.
    #[test]
    fn csp_header_is_visible_ascii(declared in declared()) {
        let policy = build_csp(declared.as_ref());
        prop_assert!(
            policy.header.bytes().all(|b| (0x20..0x7f).contains(&b)),
            "header is not visible ASCII: {:?}", policy.header
        );
    }
}

/// The generators are not trivial: a good share of cases grant entries, and a good share are
/// rejected (so both branches of every property above are exercised).
#[test]
fn csp_generator_covers_granted_and_rejected_entries() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut granting, mut rejecting, mut non_ascii_granted) = (0, 0, 0);
    for _ in 0..2000 {
        let declared = declared().new_tree(&mut runner).unwrap().current();
        let p = build_csp(declared.as_ref());
        let g = &p.granted;
        let all = [&g.connect_domains, &g.resource_domains, &g.frame_domains, &g.base_uri_domains];
        if all.iter().any(|l| l.as_ref().is_some_and(|l| !l.is_empty())) {
            granting += 1;
        }
        if !p.rejected.is_empty() {
            rejecting += 1;
        }
        if !p.header.is_ascii() {
            non_ascii_granted += 1;
        }
    }
    eprintln!("csp generator, 2000 cases: {granting} grant entries, {rejecting} reject some, {non_ascii_granted} non-ASCII headers");
    assert!(granting > 400 && rejecting > 400, "granting {granting}, rejecting {rejecting}");
}

/// The crash the fuzzer found, as a plain regression test.
#[test]
fn a_non_ascii_entry_never_reaches_the_header() {
    let mut csp = ResourceCsp::default();
    csp.connect_domains = Some(vec!["https://api.example.com/café".into()]);
    let policy = build_csp(Some(&csp));
    assert!(policy.header.is_ascii(), "{}", policy.header);
}

// ---------------------------------------------------------------------------------------------
// Config loader

/// Strings that matter to the loader: placeholders, path tricks, URLs, odd Unicode.
fn config_string() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(
            &[
                "node",
                "./server.js",
                "./bin/srv",
                "../escape",
                "./../../etc/passwd",
                "/bin/sh",
                "server js",
                "${PLUGIN_ROOT}",
                "${PLUGIN_ROOT}/x",
                "${PLUGIN_DATA}",
                "${PLUGIN_DATA}/../..",
                "${PLUGIN_ROOT}/../..",
                "./",
                ".",
                "./sub",
                "./sub/../..",
                "${env:HOME}",
                "${input:token}",
                "${",
                "$",
                "https://example.com/mcp",
                "http://localhost:3000/sse",
                "http://10.0.0.1/mcp",
                "ftp://x",
                "https://user:pw@example.com/",
                "https://example.com/#frag",
                "stdio",
                "streamable-http",
                "sse",
                "http",
                "",
                " ",
                "\u{feff}",
                "\u{0}",
                "é",
                "PLUGIN_ROOT",
                "PLUGIN_DATA",
                "Authorization: x",
                "Bearer ${input:t}",
            ][..],
        )
        .prop_map(str::to_owned),
        ".{0,16}",
    ]
}

fn config_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        3 => config_string().prop_map(Value::String),
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => any::<i32>().prop_map(|n| json!(n)),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        prop::sample::select(
                            &[
                                "type", "command", "args", "env", "cwd", "url", "headers", "inputs", "disabled",
                                "$schema", "x"
                            ][..]
                        )
                        .prop_map(str::to_owned),
                        ".{0,8}",
                    ],
                    inner,
                ),
                0..6,
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

/// A whole config file: one of the three formats, entries shaped like servers, or anything.
fn config_file() -> impl Strategy<Value = String> {
    let entry = prop_oneof![
        (config_string(), prop::collection::vec(config_string(), 0..4), prop::option::of(config_string())).prop_map(
            |(command, args, cwd)| {
                let mut e = json!({"type": "stdio", "command": command, "args": args});
                if let Some(c) = cwd {
                    e["cwd"] = json!(c);
                }
                e
            }
        ),
        (prop::sample::select(&["streamable-http", "sse", "http", "stdio"][..]), config_string())
            .prop_map(|(t, url)| json!({"type": t, "url": url, "headers": {"X-Test": "1"}})),
        config_json(),
    ];
    let servers = prop::collection::vec((prop_oneof![".{0,8}", Just("a".to_owned())], entry), 0..5);
    prop_oneof![
        2 => servers.clone().prop_map(|s| json!({"$schema": AGENT_PLUGINS_MCP_SCHEMA, "mcpServers": to_map(s)}).to_string()),
        2 => servers.clone().prop_map(|s| json!({"mcpServers": to_map(s), "otherSetting": true}).to_string()),
        2 => servers.prop_map(|s| json!({"servers": to_map(s), "inputs": []}).to_string()),
        1 => config_json().prop_map(|v| v.to_string()),
        1 => any::<String>(),
        1 => (1usize..3000).prop_map(|n| format!("{}{}", "{\"mcpServers\":".repeat(n), "}".repeat(n))),
        1 => Just("{\"mcpServers\":{},\"mcpServers\":{}}".to_owned()),
        1 => Just("\u{feff}{\"servers\":{}}".to_owned()),
    ]
}

fn to_map(entries: Vec<(String, Value)>) -> Map<String, Value> {
    // Duplicate names are kept by writing the JSON text ourselves elsewhere; here last wins.
    entries.into_iter().collect()
}

fn check_config(bytes: &[u8], plugin: Option<&[u8]>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("plugin");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("server.js"), "").unwrap();
    std::fs::write(root.join("bin/srv"), "").unwrap();
    if let Some(p) = plugin {
        std::fs::write(root.join("plugin.json"), p).unwrap();
    }
    let path = root.join("mcp.json");
    std::fs::write(&path, bytes).unwrap();
    let data = dir.path().join("data");
    let opts = LoadOptions::new().plugin_data_dir(&data);
    match load_config(&path, &opts) {
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(!msg.is_empty());
            prop_assert!(msg.contains("mcp.json"), "the error does not name the file: {msg}");
        }
        Ok(load) => {
            let mut names = std::collections::HashSet::new();
            for spec in &load.servers {
                prop_assert!(!spec.name().trim().is_empty());
                prop_assert!(names.insert(spec.name().to_owned()), "duplicate server {}", spec.name());
                if load.format == ConfigFormat::AgentPlugin {
                    check_plugin_confinement(spec, &root.canonicalize().unwrap(), &data.canonicalize().unwrap())?;
                }
            }
            for err in &load.errors {
                prop_assert!(!err.rule.is_empty());
            }
        }
    }
    Ok(())
}

/// An Agent Plugin's stdio server stays inside its plugin: command bare or under the root, cwd
/// under the root or the data directory.
fn check_plugin_confinement(spec: &ServerSpec, root: &Path, data: &Path) -> Result<(), TestCaseError> {
    if let ServerSpec::Stdio { program, cwd, .. } = spec {
        let bare = !program.contains('/');
        prop_assert!(bare || Path::new(program).starts_with(root), "command escapes the plugin: {program}");
        if let Some(cwd) = cwd {
            prop_assert!(cwd.starts_with(root) || cwd.starts_with(data), "cwd escapes the plugin: {}", cwd.display());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(3000))]

    /// Arbitrary bytes as mcp.json: Ok or a clean error naming the file, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic_the_config_loader(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check_config(&bytes, None)?;
    }

    /// Config-shaped files in all three formats (with a plugin.json beside them or not): never
    /// a panic, unique non-empty names, and plugin servers confined to their plugin.
    #[test]
    fn config_shaped_files_never_panic_and_stay_confined(
        file in config_file(),
        plugin in prop::option::of(prop_oneof![
            Just(json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "p"}).to_string()),
            Just(json!({"$schema": "https://agent-plugins.org/schemas/2.0.0/plugin.schema.json"}).to_string()),
            config_json().prop_map(|v| v.to_string()),
            ".{0,20}",
        ]),
    ) {
        check_config(file.as_bytes(), plugin.as_deref().map(str::as_bytes))?;
    }
}

/// The config generator reaches every format and produces servers, not only parse errors.
#[test]
fn config_generator_covers_every_format() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut plugin, mut desktop, mut vscode, mut servers, mut entry_errors, mut file_errors) = (0, 0, 0, 0, 0, 0);
    for _ in 0..600 {
        let file = config_file().new_tree(&mut runner).unwrap().current();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(&path, &file).unwrap();
        match load_config(&path, &LoadOptions::new().plugin_data_dir(dir.path().join("data"))) {
            Ok(load) => {
                match load.format {
                    ConfigFormat::AgentPlugin => plugin += 1,
                    ConfigFormat::DesktopClient => desktop += 1,
                    ConfigFormat::VsCode => vscode += 1,
                    _ => {}
                }
                servers += load.servers.len();
                entry_errors += load.errors.len();
            }
            Err(_) => file_errors += 1,
        }
    }
    eprintln!(
        "config generator, 600 files: {plugin} agent-plugin, {desktop} desktop, {vscode} vscode, \
         {servers} servers, {entry_errors} entry errors, {file_errors} file errors"
    );
    assert!(plugin > 30 && desktop > 30 && vscode > 30 && servers > 30 && entry_errors > 30 && file_errors > 30);
}
