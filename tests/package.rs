//! The Debian package: `scripts/package` builds it (here of the debug build), it holds both binaries,
//! a desktop entry, icon, AppStream metadata and the `.mcpb` MIME type that the distribution's
//! own validators accept, depends on WebKitGTK 4.1, and the `mcp-apps-host` it installs runs
//! the demo to its tool results (under Xvfb), unpacked into a root of its own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const ID: &str = "io.github.mcp_apps_host.McpAppsHost";

fn run(cmd: &mut Command) -> Output {
    let out = cmd.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Builds the package with the script people use; its path.
fn build() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The debug build the suite made already: a release build would double CI's time, and the
    // package is the same but for the compiler's profile.
    let out =
        run(Command::new(root.join("scripts/package")).args(["--print-path", "--profile", "dev"]).current_dir(root));
    let text = stdout(&out);
    let path = PathBuf::from(text.lines().last().expect("the script prints the package's path"));
    let path = if path.is_absolute() { path } else { root.join(path) };
    assert!(path.is_file(), "{} is not there", path.display());
    assert!(path.parent().is_some_and(|p| p.ends_with("debian")), "{}", path.display());
    path
}

#[test]
fn the_debian_package_installs_a_valid_desktop_app_that_runs_the_demo() {
    let deb = build();
    let size = std::fs::metadata(&deb).unwrap().len();
    eprintln!("package: {} ({} KiB)", deb.display(), size / 1024);

    let field = |name: &str| stdout(&run(Command::new("dpkg-deb").arg("-f").arg(&deb).arg(name))).trim().to_owned();
    assert_eq!(field("Package"), "mcp-apps-host");
    let depends = field("Depends");
    assert!(
        depends.split(',').any(|d| d.trim().starts_with("libwebkit2gtk-4.1-0")),
        "Depends names WebKitGTK 4.1: {depends}"
    );

    let root = tempfile::tempdir().unwrap();
    run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(root.path()));
    let at = |p: &str| root.path().join(p);
    for file in [
        "usr/bin/mcp-apps-host".to_owned(),
        "usr/bin/mcp-apps-host-server".to_owned(),
        format!("usr/share/applications/{ID}.desktop"),
        format!("usr/share/metainfo/{ID}.metainfo.xml"),
        format!("usr/share/icons/hicolor/scalable/apps/{ID}.svg"),
        format!("usr/share/mime/packages/{ID}.xml"),
    ] {
        assert!(at(&file).is_file(), "the package installs {file}");
    }

    // The distribution's validators (desktop-file-utils, appstream).
    let desktop = at(&format!("usr/share/applications/{ID}.desktop"));
    let out = run(Command::new("desktop-file-validate").arg(&desktop));
    assert!(!stdout(&out).contains("error"), "{}", stdout(&out));
    let out = run(Command::new("appstreamcli")
        .args(["validate", "--no-net"])
        .arg(at(&format!("usr/share/metainfo/{ID}.metainfo.xml"))));
    eprintln!("appstreamcli: {}", stdout(&out).trim());
    let entry = std::fs::read_to_string(&desktop).unwrap();
    assert!(entry.lines().any(|l| l.starts_with("Exec=mcp-apps-host ") && l.ends_with(" %u")), "{entry}");
    let mime_types = entry.lines().find_map(|l| l.strip_prefix("MimeType=")).unwrap_or_default();
    for t in ["x-scheme-handler/mcp-apps-host", "application/x-mcpb"] {
        assert!(mime_types.split(';').any(|m| m == t), "the desktop entry handles {t}: {entry}");
    }
    assert!(entry.contains(&format!("Icon={ID}")), "{entry}");

    // The MIME type file compiles, and *.mcpb is application/x-mcpb.
    run(Command::new("update-mime-database").arg(at("usr/share/mime")));
    let globs = std::fs::read_to_string(at("usr/share/mime/globs2")).unwrap();
    assert!(globs.lines().any(|l| l.ends_with(":application/x-mcpb:*.mcpb")), "{globs}");

    // The installed server binary serves the demo server on stdio.
    let mut server = Command::new(at("usr/bin/mcp-apps-host-server"))
        .arg("demo")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"package-test","version":"1"}}}"#;
    std::io::Write::write_all(server.stdin.as_mut().unwrap(), format!("{init}\n").as_bytes()).unwrap();
    drop(server.stdin.take());
    let out = server.wait_with_output().unwrap();
    let first: Value = serde_json::from_str(stdout(&out).lines().next().unwrap_or("null")).unwrap();
    assert_eq!(first["id"], 1, "{first}");
    assert!(first["result"]["serverInfo"]["name"].is_string(), "{first}");

    // The installed app runs the demo to its tool results.
    assert!(std::env::var_os("DISPLAY").is_some(), "run under a display (scripts/test uses xvfb-run)");
    let home = tempfile::tempdir().unwrap();
    let trace = home.path().join("trace.jsonl");
    run(Command::new(at("usr/bin/mcp-apps-host"))
        .args(["demo", "--exit-after", "result", "--timeout", "120", "--trace"])
        .arg(&trace)
        .current_dir(home.path())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_CACHE_HOME", home.path().join("cache")));
    let results: Vec<Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["dir"] == "host->view" && r["msg"]["method"] == "ui/notifications/tool-result")
        .collect();
    assert_eq!(results.len(), 2, "the weather and counter Views got their results: {results:?}");
}

/// `cargo package` (and so `cargo install` from the package) takes what the build needs: the
/// embedded web assets, the web process extension, build.rs, the desktop files; never what npm
/// and pip install for the tests, nor build output.
#[test]
fn the_crate_package_holds_what_the_build_needs_and_no_installed_dependencies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out =
        run(Command::new(env!("CARGO")).args(["package", "--list", "--offline", "--allow-dirty"]).current_dir(root));
    let list = stdout(&out);
    let files: Vec<&str> = list.lines().collect();
    for needed in [
        "build.rs",
        "webext/collect.c",
        "sandbox-proxy/proxy.js",
        "sandbox-proxy/proxy.html",
        "assets/shell.js",
        "assets/shell/page.js",
        "assets/demo/weather.html",
        "assets/probe/view.html",
        "src/bin/mcp-apps-host-server.rs",
        "LICENSE-MIT",
        "LICENSE-APACHE",
    ] {
        assert!(files.contains(&needed), "the crate package lacks {needed}:\n{list}");
    }
    assert!(files.iter().any(|f| f.starts_with("assets/linux/") && f.ends_with(".desktop")), "{list}");
    for f in &files {
        assert!(
            !f.contains("node_modules/") && !f.contains(".venv/") && !f.starts_with("target/"),
            "the crate package holds {f}"
        );
    }
}
