//! `mcp-apps-host install` in a terminal: a registry server.json (an npm package, a remote, one
//! from the registry's API) and an install link go into a config file that the host's own loader
//! reads, and the installed stdio servers reach a tool result in a real host (under Xvfb). Every
//! refusal says what to do; secrets go to the Secret Service, else to owner-only files.
//!
//! Bundles are in `install_bundles.rs`, what is opened without a terminal in `install_in_app.rs`;
//! the helpers they share in `install_support/`.

mod common;
#[allow(dead_code)]
mod install_support;
#[allow(dead_code)]
mod keyring_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use install_support::*;
use keyring_support::{files_holding, PrivateKeyring, NO_BUS};
use mcp_apps_host::server::config::{load_config, LoadOptions};
use mcp_apps_host::server::ServerSpec;
use serde_json::json;

#[test]
fn an_npm_server_json_installs_and_its_server_reaches_a_tool_result() {
    let home = tempfile::tempdir().unwrap();
    let server_json = write_json(home.path(), "server.json", &npm_server_json("npm"));
    let config = home.path().join("config/mcp-apps-host/mcp.json");

    // The default config file, made on first install.
    let out = install(
        home.path(),
        &[server_json.to_str().unwrap(), "--yes", "--set", "GREETING_STYLE=short", "--set", "EXAMPLE_TOKEN=t0k3n"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let shown = stderr(&out);
    let runs = format!("Runs: npx -y {PACKAGE}@{} --stdio", package_version());
    assert!(shown.contains(&runs), "the command line is shown before installing:\n{shown}");
    assert!(shown.contains("EXAMPLE_TOKEN (secret)") && !shown.contains("t0k3n"), "{shown}");

    let load = load_config(&config, &LoadOptions::new()).unwrap();
    assert!(load.errors.is_empty(), "{:?}", load.errors);
    let [ServerSpec::Stdio { name, program, args, env, .. }] = load.servers.as_slice() else {
        panic!("one stdio server: {:?}", load.servers)
    };
    assert_eq!(name, "basic-vanillajs");
    assert_eq!(program, "npx");
    assert_eq!(args, &["-y".to_owned(), format!("{PACKAGE}@{}", package_version()), "--stdio".to_owned()]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    // The secret is kept outside the config (here in an owner-only file: no keyring in this test).
    assert_eq!(
        env,
        [("GREETING_STYLE", "short"), ("EXAMPLE_TOKEN", "${secret:EXAMPLE_TOKEN}"), ("EXAMPLE_LEVEL", "info")]
    );
    assert!(!std::fs::read_to_string(&config).unwrap().contains("t0k3n"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&config).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "a config that holds a secret is the owner's only");
    }

    let result = run_to_result(home.path(), &config, &common::fixtures());
    assert!(result["content"][0]["text"].as_str().is_some_and(|t| t.contains('T')), "{result}");
}

#[test]
fn an_install_link_installs_and_its_server_reaches_a_tool_result() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("mine.json");
    // The person's file, with keys of their own, in their order.
    std::fs::write(&config, r#"{"theme": "dark", "mcpServers": {}, "zoom": 1.25}"#).unwrap();
    let bin = common::fixtures().join("node_modules/.bin/mcp-server-basic-vanillajs");
    let config_json = json!({
        "name": "clock",
        "command": bin.to_str().unwrap(),
        "args": ["--stdio"],
        "env": {"CLOCK_TOKEN": "", "CLOCK_MODE": "plain"}
    });
    let link = format!(
        "mcp-apps-host://install?config={}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(config_json.to_string())
    );

    let out = install(home.path(), &[&link, "--config", config.to_str().unwrap(), "--yes"]);
    assert!(!out.status.success(), "an empty env value is a setting the link cannot fill: {}", text(&out));
    assert!(stderr(&out).contains("needs the setting CLOCK_TOKEN") && stderr(&out).contains("--set CLOCK_TOKEN=VALUE"));
    let out = install(home.path(), &[&link, "--config", config.to_str().unwrap(), "--yes", "--set", "CLOCK_TOKEN=x"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stderr(&out).contains("from a web page"), "{}", text(&out));

    let written = std::fs::read_to_string(&config).unwrap();
    let (theme, servers, zoom) = (
        written.find("\"theme\"").unwrap(),
        written.find("\"clock\"").unwrap(),
        written.find("\"zoom\": 1.25").unwrap(),
    );
    assert!(theme < servers && servers < zoom, "the file's own keys stay, in order:\n{written}");
    let load = load_config(&config, &LoadOptions::new()).unwrap();
    assert_eq!(load.servers.len(), 1, "{:?}", load.errors);
    assert_eq!(load.servers[0].name(), "clock");

    let result = run_to_result(home.path(), &config, home.path());
    assert!(result["content"][0]["text"].as_str().is_some_and(|t| t.contains('T')), "{result}");
}

#[test]
fn a_remote_installs_with_its_url_variables_and_secret_headers() {
    let home = tempfile::tempdir().unwrap();
    let server_json = write_json(
        home.path(),
        "remote.json",
        // The registry API's answer for one server, as saved from it.
        &json!({"server": {
            "name": "io.example/tickets",
            "version": "2.0.0",
            "remotes": [{
                "type": "streamable-http",
                "url": "https://{tenant}.tickets.example/mcp",
                "variables": {"tenant": {"isRequired": true, "description": "your workspace"}},
                "headers": [
                    {"name": "Authorization", "value": "Bearer {api_token}",
                     "variables": {"api_token": {"isRequired": true, "isSecret": true}}},
                    {"name": "X-Region", "default": "eu"}
                ]
            }, {"type": "sse", "url": "https://tickets.example/sse"}]
        }, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active"}}}),
    );
    let config = home.path().join("mcp.json");
    let c = config.to_str().unwrap();
    let out = install(
        home.path(),
        &[server_json.to_str().unwrap(), "--config", c, "--yes", "--set", "tenant=acme", "--set", "api_token=s3cret"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(stderr(&out).contains("https://<tenant>.tickets.example/mcp (Streamable HTTP)"), "{}", text(&out));
    assert!(!stderr(&out).contains("s3cret"));
    let load = load_config(&config, &LoadOptions::new()).unwrap();
    let [ServerSpec::StreamableHttp { name, url, headers, .. }] = load.servers.as_slice() else {
        panic!("one Streamable HTTP server: {:?} {:?}", load.servers, load.errors)
    };
    assert_eq!((name.as_str(), url.as_str()), ("tickets", "https://acme.tickets.example/mcp"));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(headers, [("Authorization", "Bearer ${secret:api_token}"), ("X-Region", "eu")]);
    assert!(!std::fs::read_to_string(&config).unwrap().contains("s3cret"), "the secret is kept outside the config");
}

#[test]
fn every_refusal_says_what_to_do_and_changes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("mcp.json");
    let c = config.to_str().unwrap();
    let before = r#"{"mcpServers": {"basic-vanillajs": {"command": "true"}}}"#;
    std::fs::write(&config, before).unwrap();
    let npm = write_json(home.path(), "npm.json", &npm_server_json("npm"));
    let oci = write_json(home.path(), "oci.json", &npm_server_json("oci"));
    let npm = npm.to_str().unwrap();

    let refused = |args: &[&str], says: &[&str]| {
        let out = install(home.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?} must fail: {}", text(&out));
        let err = stderr(&out);
        for s in says {
            assert!(err.contains(s), "{args:?}: the error says {s:?}:\n{err}");
        }
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(std::fs::read_to_string(&config).unwrap(), before, "{args:?} changed the config");
    };
    refused(&[oci.to_str().unwrap(), "--config", c, "--yes"], &["registryType \"oci\"", "npx", "uvx"]);
    refused(&[npm, "--config", c, "--yes"], &["needs the setting GREETING_STYLE", "--set GREETING_STYLE=VALUE"]);
    refused(&[npm, "--config", c, "--yes", "--set", "GREETING_STYLE=medium"], &["not a choice", "short, long"]);
    refused(&[npm, "--config", c, "--yes", "--set", "NOPE=1"], &["\"NOPE\" is not a setting", "GREETING_STYLE"]);
    refused(
        &[npm, "--config", c, "--yes", "--set", "GREETING_STYLE=short"],
        &["already has a server named \"basic-vanillajs\"", "--replace", "--name"],
    );
    refused(&[npm, "--config", c, "--set", "GREETING_STYLE=short"], &["not in a terminal", "--yes"]);
    for link in [
        "mcp-apps-host://add?config=e30",
        "mcp-apps-host://install?json=e30",
        "mcp-apps-host://install?config=not*base64",
        &format!(
            "mcp-apps-host://install?config={}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"name":"x","command":"sh","cwd":"/"}"#)
        ),
    ] {
        refused(
            &[link, "--config", c, "--yes"],
            &["not an install link this host takes", "mcp-apps-host://install?config="],
        );
    }
    refused(
        &["http://registry.example/v0/servers/x/versions/latest", "--config", c],
        &["plain http:// is allowed only"],
    );

    // With --replace and another name, the same install goes through.
    let out = install(home.path(), &[npm, "--config", c, "--yes", "--set", "GREETING_STYLE=long", "--name", "second"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = install(home.path(), &[npm, "--config", c, "--yes", "--set", "GREETING_STYLE=long", "--replace"]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("replaced"), "{}", text(&out));
    let load = load_config(&config, &LoadOptions::new()).unwrap();
    let names: Vec<&str> = load.servers.iter().map(ServerSpec::name).collect();
    assert_eq!(names, ["basic-vanillajs", "second"]);
}

/// In a terminal (a pty from util-linux `script`), `install` asks for each setting, turns the
/// echo off for a secret, takes a default on an empty answer, asks again after a value outside
/// the choices, and installs once the person says yes.
#[test]
fn in_a_terminal_it_asks_for_each_setting_and_a_secret_is_not_echoed() {
    use std::io::{Read as _, Write as _};
    use std::sync::{Arc, Mutex};
    let home = tempfile::tempdir().unwrap();
    let server_json = write_json(home.path(), "server.json", &npm_server_json("npm"));
    let config = home.path().join("mcp.json");
    let command = shell_words::join([
        env!("CARGO_BIN_EXE_mcp-apps-host"),
        "install",
        server_json.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env("DBUS_SESSION_BUS_ADDRESS", NO_BUS)
        .env("HOME", home.path())
        .env("SHELL", "/bin/sh")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux script runs");
    let seen = Arc::new(Mutex::new(String::new()));
    let mut pipe = child.stdout.take().unwrap();
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    let mut stdin = child.stdin.take().unwrap();
    let started = std::time::Instant::now();
    // Waits until the terminal shows `needle` `times` times (the child failing or a minute
    // passing first is a failure, with what the terminal showed).
    let mut answer = |needle: &str, times: usize, line: &str| {
        while seen.lock().unwrap().matches(needle).count() < times {
            assert!(started.elapsed().as_secs() < 60, "never asked {needle:?}:\n{}", seen.lock().unwrap());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
    };
    answer("how to greet [choices: short, long]: ", 1, "medium");
    answer("how to greet [choices: short, long]: ", 2, "short");
    answer("not needed by this server: ", 1, "sup3rs3cret");
    answer("EXAMPLE_LEVEL [default: info]: ", 1, "");
    answer("? [y/N] ", 1, "y");
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let shown = seen.lock().unwrap().clone();
    assert!(status.success(), "{shown}");
    assert!(shown.contains("\"medium\" is not a choice for GREETING_STYLE"), "{shown}");
    assert!(!shown.contains("sup3rs3cret"), "the secret was echoed:\n{shown}");
    assert!(shown.contains("installed basic-vanillajs"), "{shown}");
    let load = load_config(&config, &LoadOptions::new()).unwrap();
    let [ServerSpec::Stdio { env, .. }] = load.servers.as_slice() else { panic!("{:?}", load.servers) };
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(
        env,
        [("GREETING_STYLE", "short"), ("EXAMPLE_TOKEN", "${secret:EXAMPLE_TOKEN}"), ("EXAMPLE_LEVEL", "info")]
    );
}

#[test]
fn a_server_json_from_the_registry_api_installs() {
    let home = tempfile::tempdir().unwrap();
    let mut server = npm_server_json("npm");
    server.as_object_mut().unwrap().remove("$schema");
    let (base, seen) = registry_stand_in(vec![server]);
    let config = home.path().join("mcp.json");
    let c = config.to_str().unwrap();
    let url = format!("{base}/v0/servers/io.github.modelcontextprotocol%2Fbasic-vanillajs/versions/latest");
    let out = install(home.path(), &[&url, "--config", c, "--yes", "--set", "GREETING_STYLE=long"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["GET /v0/servers/io.github.modelcontextprotocol%2Fbasic-vanillajs/versions/latest HTTP/1.1"]
    );
    let load = load_config(&config, &LoadOptions::new()).unwrap();
    let [ServerSpec::Stdio { name, program, args, .. }] = load.servers.as_slice() else { panic!("{:?}", load.servers) };
    assert_eq!((name.as_str(), program.as_str()), ("basic-vanillajs", "npx"));
    assert_eq!(args[1], format!("{PACKAGE}@{}", package_version()));

    let missing = format!("{base}/v0/servers/io.example%2Fnone/versions/latest");
    let out = install(home.path(), &[&missing, "--config", c, "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stderr(&out).contains("answered 404"), "{}", text(&out));
}

/// A bundle's `sensitive` setting, installed with a Secret Service running, is in the keyring
/// (read back with libsecret's `secret-tool`), in no file under the home directory, and
/// reaches the installed server when it runs; a model key set with `key set` goes there too.
#[test]
fn secrets_go_to_the_secret_service_and_reach_the_server() {
    let home = tempfile::tempdir().unwrap();
    let keyring = PrivateKeyring::start(home.path());
    let file = clock_that_shows_its_key(home.path());
    let config = home.path().join("config/mcp-apps-host/mcp.json");
    let out = install_on_bus(
        home.path(),
        &[file.to_str().unwrap(), "--yes", "--set", &format!("api_key={SECRET}")],
        &keyring.address,
    );
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("secret api_key: kept in the system keyring (Secret Service)"), "{}", text(&out));
    assert!(stderr(&out).contains("in the system keyring (Secret Service)"), "the log says so: {}", text(&out));
    let attrs = ["application", "mcp-apps-host", "kind", "setting", "server", "clock-bundle", "setting", "api_key"];
    assert_eq!(keyring.lookup(&attrs).as_deref(), Some(SECRET), "the keyring holds it");
    assert_eq!(files_holding(home.path(), SECRET), Vec::<PathBuf>::new(), "no file holds the secret");
    assert!(std::fs::read_to_string(&config).unwrap().contains("${secret:api_key}"));

    let (result, log) = run_to_result_on_bus(home.path(), &config, home.path(), &keyring.address);
    assert!(result["content"][0]["text"].as_str().is_some_and(|t| t.contains('T')), "{result}");
    assert!(log.contains(&format!("KEY-SHA256 {}", sha256_hex(SECRET))), "the server got the secret:\n{log}");
    assert_eq!(files_holding(home.path(), SECRET), Vec::<PathBuf>::new(), "no file holds the secret after the run");

    // The model key, without writing a file by hand.
    let key = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .args(["key", "set", "--provider", "anthropic"])
        .env("DBUS_SESSION_BUS_ADDRESS", &keyring.address)
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        key.stdin.as_ref().unwrap().write_all(b"sk-ant-test-4242\n").unwrap();
    }
    let out = key.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("kept in the system keyring"), "{}", text(&out));
    let attrs = ["application", "mcp-apps-host", "kind", "model-key", "id", "anthropic"];
    assert_eq!(keyring.lookup(&attrs).as_deref(), Some("sk-ant-test-4242"));
    assert_eq!(files_holding(home.path(), "sk-ant-test-4242"), Vec::<PathBuf>::new());
}

/// With no Secret Service on the bus the secret goes to an owner-only file of the host's, the
/// output says so and why, and the server still gets it.
#[test]
fn without_a_secret_service_secrets_go_to_owner_only_files_and_it_says_so() {
    use std::os::unix::fs::PermissionsExt as _;
    let home = tempfile::tempdir().unwrap();
    let file = clock_that_shows_its_key(home.path());
    let config = home.path().join("config/mcp-apps-host/mcp.json");
    let started = std::time::Instant::now();
    let out = install(home.path(), &[file.to_str().unwrap(), "--yes", "--set", &format!("api_key={SECRET}")]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(started.elapsed().as_secs() < 30, "no D-Bus is found out quickly");
    let secrets = home.path().join("data/mcp-apps-host/secrets");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("secret api_key: kept in an owner-only file, {}", secrets.display()))
            && said.contains("(no system keyring: "),
        "{}",
        text(&out)
    );
    assert_eq!(
        files_holding(home.path(), SECRET),
        vec![std::fs::read_dir(&secrets).unwrap().next().unwrap().unwrap().path()]
    );
    let held = files_holding(home.path(), SECRET);
    assert_eq!(std::fs::metadata(&held[0]).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(&secrets).unwrap().permissions().mode() & 0o777, 0o700);
    assert!(!std::fs::read_to_string(&config).unwrap().contains(SECRET));

    let (result, log) = run_to_result_on_bus(home.path(), &config, home.path(), NO_BUS);
    assert!(result["content"][0]["text"].as_str().is_some_and(|t| t.contains('T')), "{result}");
    assert!(log.contains(&format!("KEY-SHA256 {}", sha256_hex(SECRET))), "the server got the secret:\n{log}");

    let status = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .args(["key", "status"])
        .env("DBUS_SESSION_BUS_ADDRESS", NO_BUS)
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(said.contains(&format!("secrets go to owner-only files in {}", secrets.display())), "{said}");
}

/// A `server.json` whose npm package names a private registry: it runs from that registry
/// (`npx -y --registry URL pkg@ver`, shown so), not from the public one where anyone can publish
/// a package of that name; a registry that is not https is refused saying why. Beside it, a
/// package with no registry named, or the public one, runs as before.
#[test]
fn a_package_runs_from_the_registry_its_server_json_names() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("mcp.json");
    let c = config.to_str().unwrap();
    let spec = format!("{PACKAGE}@{}", package_version());
    let with_registry = |base: Option<&str>| {
        let mut server = npm_server_json("npm");
        if let Some(base) = base {
            server["packages"][0]["registryBaseUrl"] = json!(base);
        }
        write_json(home.path(), "server.json", &server)
    };
    let args_of = |config: &Path| -> Vec<String> {
        let load = load_config(config, &LoadOptions::new()).unwrap();
        let [ServerSpec::Stdio { args, .. }] = load.servers.as_slice() else { panic!("{:?}", load.servers) };
        args.clone()
    };

    let file = with_registry(Some("https://npm.acme.example"));
    let out = install(home.path(), &[file.to_str().unwrap(), "--config", c, "--yes", "--set", "GREETING_STYLE=short"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(args_of(&config), ["-y", "--registry", "https://npm.acme.example/", &spec, "--stdio"]);
    let shown = stderr(&out);
    assert!(shown.contains(&format!("Runs: npx -y --registry https://npm.acme.example/ {spec} --stdio")), "{shown}");
    assert!(shown.contains("from the registry https://npm.acme.example/"), "{shown}");

    for (base, why) in [
        ("http://npm.acme.example", "plain http:// is allowed only for localhost"),
        ("ftp://npm.acme.example", "is not supported"),
        ("https://user:pw@npm.acme.example", "user name or password"),
    ] {
        let file = with_registry(Some(base));
        let other = home.path().join("other.json");
        let out = install(home.path(), &[file.to_str().unwrap(), "--config", other.to_str().unwrap(), "--yes"]);
        assert_eq!(out.status.code(), Some(1), "{base}: {}", text(&out));
        assert!(stderr(&out).contains(why) && stderr(&out).contains("names the registry"), "{base}: {}", text(&out));
        assert!(!other.exists(), "{base}: nothing is written");
    }

    // Controls: no registry named, and npm's public registry, run as before.
    for base in [None, Some("https://registry.npmjs.org")] {
        let file = with_registry(base);
        let out = install(
            home.path(),
            &[file.to_str().unwrap(), "--config", c, "--yes", "--replace", "--set", "GREETING_STYLE=short"],
        );
        assert!(out.status.success(), "{base:?}: {}", text(&out));
        assert_eq!(args_of(&config), ["-y", &spec, "--stdio"], "{base:?}");
    }
}
