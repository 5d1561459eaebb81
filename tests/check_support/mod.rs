//! Helpers of the `inspect` and `check` tests (`e2e_check.rs`, `e2e_check_self.rs`,
//! `e2e_check_profiles.rs`, `e2e_check_sessions.rs`): the binary's run and its JSON report.
//! The crate declaring it declares `common` too.
#![allow(dead_code)]

use std::process::Command;

use serde_json::Value;

use crate::common::*;

pub struct Out {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

pub fn host(args: &[&str], no_display: bool) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"));
    cmd.args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    if no_display {
        cmd.env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY");
    }
    let out = cmd.output().expect("the binary runs");
    Out {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn json_of(out: &Out) -> Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\nstderr:\n{}", out.stdout, out.stderr))
}

pub fn tool<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == name || t["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {report:#}"))
}

/// `check` of the fault server in `mode`: its output and its JSON report.
pub fn check_fault(mode: &str, extra: &[&str]) -> (Out, Value) {
    let server = node_server("fault-server.mjs", mode);
    let mut args = vec!["check", "--stdio", &server, "--json", "--timeout", "5"];
    args.extend_from_slice(extra);
    let out = host(&args, false);
    let r = json_of(&out);
    (out, r)
}

/// `@modelcontextprotocol/server-map` declares CSP metadata (tile and CesiumJS origins).
pub fn map_server() -> String {
    format!("{} --stdio", shell_words::quote(&fixtures().join("node_modules/.bin/mcp-map-server").to_string_lossy()))
}
