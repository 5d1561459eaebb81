//! `mcp-apps-host install` of MCP Bundles (`.mcpb`): unpacked into the data directory and
//! reaching a tool result, zip paths that escape refused, signatures (the official `mcpb` tool's,
//! one under a CA) verified and a bundle changed after signing refused.

mod common;
#[allow(dead_code)]
mod install_support;
#[allow(dead_code)]
mod keyring_support;

use std::process::Command;

use install_support::*;
use keyring_support::NO_BUS;
use mcp_apps_host::server::config::{load_config, LoadOptions};
use mcp_apps_host::server::ServerSpec;
use serde_json::{json, Value};

#[test]
fn an_mcpb_bundle_unpacks_into_the_data_directory_and_reaches_a_tool_result() {
    let home = tempfile::tempdir().unwrap();
    let file = bundle(home.path(), "clock.mcpb", &clock_manifest(), &[]);
    let config = home.path().join("mcp.json");
    let c = config.to_str().unwrap();
    let bundles = home.path().join("data/mcp-apps-host/bundles");

    let out = install(home.path(), &[file.to_str().unwrap(), "--config", c, "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stderr(&out).contains("needs the setting api_key"), "{}", text(&out));
    assert!(!bundles.join("clock-bundle").exists() && !config.exists(), "nothing unpacked or written");
    let out = install(home.path(), &[file.to_str().unwrap(), "--config", c, "--yes", "--set", "refresh=90"]);
    assert!(stderr(&out).contains("refresh must be a number from 1 to 60"), "{}", text(&out));

    let out = install(home.path(), &[file.to_str().unwrap(), "--config", c, "--yes", "--set", "api_key=k3y"]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = stderr(&out);
    assert!(shown.contains("Signature: none: the bundle is unsigned"), "an unsigned bundle is said to be:\n{shown}");
    assert!(shown.contains("api_key (required, secret)") && !shown.contains("k3y"), "{shown}");
    let dir = bundles.join("clock-bundle");
    assert!(dir.join("server/index.js").is_file() && dir.join("manifest.json").is_file());

    let load = load_config(&config, &LoadOptions::new()).unwrap();
    let [ServerSpec::Stdio { name, program, args, env, .. }] = load.servers.as_slice() else {
        panic!("one stdio server: {:?} {:?}", load.servers, load.errors)
    };
    assert_eq!((name.as_str(), program.as_str()), ("clock-bundle", "node"));
    assert_eq!(args, &[dir.join("server/index.js").to_str().unwrap().to_owned(), "--stdio".to_owned()]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let home_dir = home.path().to_str().unwrap();
    for pair in [
        ("CLOCK_API_KEY", "${secret:api_key}"),
        ("CLOCK_HOME", home_dir),
        ("CLOCK_REFRESH", "5"),
        ("CLOCK_PLATFORM", "linux"),
    ] {
        assert!(env.contains(&pair), "{pair:?} in {env:?}");
    }

    let out = install(home.path(), &[file.to_str().unwrap(), "--config", c, "--yes", "--set", "api_key=k"]);
    assert!(stderr(&out).contains("installed already") && stderr(&out).contains("--replace"), "{}", text(&out));

    // A config file the loader refuses: nothing stays unpacked, and a replaced bundle comes back.
    let broken = home.path().join("broken.json");
    std::fs::write(&broken, "{\"mcpServers\": {} // mine\n}").unwrap();
    let b = broken.to_str().unwrap();
    for extra in [&["--replace"][..], &["--name", "other-clock"][..]] {
        let mut args = vec![file.to_str().unwrap(), "--config", b, "--yes", "--set", "api_key=k"];
        args.extend_from_slice(extra);
        let out = install(home.path(), &args);
        // (Refused for its comment before the loader reads it: rewriting it would drop them.)
        assert!(
            stderr(&out).contains("has comments, which rewriting it as JSON would drop"),
            "{extra:?}: {}",
            text(&out)
        );
    }
    assert!(dir.join("server/index.js").is_file(), "the replaced bundle is back");
    let left: Vec<String> =
        std::fs::read_dir(&bundles).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, ["clock-bundle"], "nothing else stays in {}", bundles.display());

    let result = run_to_result(home.path(), &config, home.path());
    assert!(result["content"][0]["text"].as_str().is_some_and(|t| t.contains('T')), "{result}");
}

#[test]
fn a_bundle_whose_zip_paths_escape_is_refused_before_anything_is_written() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("mcp.json");
    let bundles = home.path().join("data/mcp-apps-host/bundles");
    for (i, evil) in ["../escaped.txt", "server/../../escaped.txt", "/tmp/escaped-abs.txt"].into_iter().enumerate() {
        let file = bundle(home.path(), &format!("evil{i}.mcpb"), &clock_manifest(), &[(evil, b"gotcha")]);
        let out = install(
            home.path(),
            &[file.to_str().unwrap(), "--config", config.to_str().unwrap(), "--yes", "--set", "api_key=k"],
        );
        assert_eq!(out.status.code(), Some(1), "{evil}: {}", text(&out));
        assert!(stderr(&out).contains("outside its directory"), "{evil}: {}", text(&out));
        assert!(!bundles.join("clock-bundle").exists() && !bundles.join("escaped.txt").exists());
        assert!(!home.path().join("data/mcp-apps-host/escaped.txt").exists() && !config.exists());
    }
    let not_zip = home.path().join("plain.mcpb");
    std::fs::write(&not_zip, "{}").unwrap();
    let out = install(home.path(), &[not_zip.to_str().unwrap(), "--config", config.to_str().unwrap(), "--yes"]);
    assert!(stderr(&out).contains("not a zip archive"), "{}", text(&out));
}

#[test]
fn bundles_packed_and_signed_by_the_official_mcpb_tool_install() {
    let home = tempfile::tempdir().unwrap();
    let unsigned = packed_clock(home.path());
    let signed = home.path().join("signed.mcpb");
    std::fs::copy(&unsigned, &signed).unwrap();
    mcpb(&["sign", "--self-signed", "signed.mcpb"], home.path());

    let config = home.path().join("mcp.json");
    let c = config.to_str().unwrap();
    let out = install(home.path(), &[unsigned.to_str().unwrap(), "--config", c, "--yes", "--set", "api_key=k"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stderr(&out).contains("Signature: none: the bundle is unsigned"), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("(bundle unsigned)"), "{}", text(&out));
    let args = [signed.to_str().unwrap(), "--config", c, "--yes", "--set", "api_key=k", "--name", "signed-clock"];
    let out = install(home.path(), &args);
    assert!(out.status.success(), "{}", text(&out));
    let consent = format!(
        "Signature: signed by {MCPB_SELF_SIGNED}, verified; the certificate is self-signed and not trusted by this \
         system's certificate store"
    );
    assert!(stderr(&out).contains(&consent), "the consent names the signer:\n{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("(bundle signed by {MCPB_SELF_SIGNED} (self-signed")),
        "{}",
        text(&out)
    );

    let load = load_config(&config, &LoadOptions::new()).unwrap();
    let names: Vec<&str> = load.servers.iter().map(ServerSpec::name).collect();
    assert_eq!(names, ["clock-bundle", "signed-clock"], "{:?}", load.errors);
    let bundles = home.path().join("data/mcp-apps-host/bundles");
    assert!(bundles.join("signed-clock/server/index.js").is_file());
    let only_signed = home.path().join("only-signed.json");
    std::fs::write(
        &only_signed,
        serde_json::to_string(&json!({"mcpServers": {"signed-clock": serde_json::from_str::<Value>(
            &std::fs::read_to_string(&config).unwrap()).unwrap()["mcpServers"]["signed-clock"]}}))
        .unwrap(),
    )
    .unwrap();
    let result = run_to_result(home.path(), &only_signed, home.path());
    assert!(result["content"][0]["text"].as_str().is_some_and(|t| t.contains('T')), "{result}");
}

/// A bundle changed after `mcpb sign` (one byte of its zip, or of its signature) is refused
/// with what happened, and nothing is unpacked or written.
#[test]
fn a_bundle_changed_after_it_was_signed_is_refused_and_nothing_is_installed() {
    let home = tempfile::tempdir().unwrap();
    let signed = packed_clock(home.path());
    mcpb(&["sign", "--self-signed", "clock.mcpb"], home.path());
    let bytes = std::fs::read(&signed).unwrap();
    let config = home.path().join("mcp.json");
    let bundles = home.path().join("data/mcp-apps-host/bundles");

    // The first entry's modification time in its local header: the zip stays a good zip with
    // the same files, so only the signature can tell.
    let mut zip_byte = bytes.clone();
    assert_eq!(&zip_byte[..4], b"PK\x03\x04");
    zip_byte[10] ^= 0x01;
    // The last byte of the RSA signature, just before the block's end marker.
    let mut sig_byte = bytes.clone();
    let at = sig_byte.len() - "MCPB_SIG_END".len() - 1;
    sig_byte[at] ^= 0x01;
    for (name, changed, says) in [
        ("zip-changed.mcpb", zip_byte, "the zip's SHA-256 is not the one that was signed"),
        ("signature-changed.mcpb", sig_byte, "the signature does not match the signer's key"),
    ] {
        let file = home.path().join(name);
        std::fs::write(&file, changed).unwrap();
        let out = install(
            home.path(),
            &[file.to_str().unwrap(), "--config", config.to_str().unwrap(), "--yes", "--set", "api_key=k"],
        );
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
        let err = stderr(&out);
        for s in ["signature does not verify", says, "changed after it was signed", "nothing was installed"] {
            assert!(err.contains(s), "{name}: the error says {s:?}:\n{err}");
        }
        assert!(!err.contains("panicked"), "{err}");
        assert!(!config.exists() && !bundles.join("clock-bundle").exists(), "{name}: something was installed");
    }
    // The same bundle unchanged installs.
    let out = install(
        home.path(),
        &[signed.to_str().unwrap(), "--config", config.to_str().unwrap(), "--yes", "--set", "api_key=k"],
    );
    assert!(out.status.success(), "{}", text(&out));
}

/// A bundle signed with a certificate from a CA: trusted when the system's store holds the CA
/// (`SSL_CERT_FILE`, which the store honours), named as untrusted when it does not.
#[test]
fn a_bundle_signed_under_a_ca_is_trusted_only_when_the_system_trusts_the_ca() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path();
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl").args(args).current_dir(dir).output().expect("openssl runs");
        assert!(out.status.success(), "openssl {args:?}: {}", text(&out));
    };
    std::fs::write(
        dir.join("ca.cnf"),
        "[ca]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n\
         [leaf]\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=codeSigning\n",
    )
    .unwrap();
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "30",
        "-subj",
        "/CN=Test Publisher CA/O=Test CA Org",
        "-extensions",
        "ca",
        "-config",
        "ca.cnf",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "key.pem",
        "-out",
        "leaf.csr",
        "-subj",
        "/CN=Clock Publisher/O=Clock Inc",
    ]);
    openssl(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "cert.pem",
        "-days",
        "30",
        "-extfile",
        "ca.cnf",
        "-extensions",
        "leaf",
    ]);
    let file = packed_clock(dir);
    mcpb(&["sign", "clock.mcpb", "--cert", "cert.pem", "--key", "key.pem"], dir);

    let config = dir.join("mcp.json");
    let args = [file.to_str().unwrap(), "--config", config.to_str().unwrap(), "--yes", "--set", "api_key=k"];
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .arg("install")
        .args(args)
        .env("DBUS_SESSION_BUS_ADDRESS", NO_BUS)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("SSL_CERT_FILE", dir.join("ca.pem"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stderr(&out).contains(
            "Signature: signed by \"Clock Publisher\" (Clock Inc), verified; its certificate is from \
             \"Test Publisher CA\" (Test CA Org), which this system's certificate store trusts for code signing"
        ),
        "{}",
        text(&out)
    );
    let out = install(dir, &[&args[..], &["--replace"]].concat());
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stderr(&out).contains(
            "signed by \"Clock Publisher\" (Clock Inc), verified; the certificate (issued by \"Test Publisher CA\" \
             (Test CA Org)) is not trusted by this system's certificate store"
        ),
        "{}",
        text(&out)
    );
}
