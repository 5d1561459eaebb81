//! The benchmark harness (`benches/compare.mjs`, the native side) runs once, small and quick,
//! against the debug binary, so it keeps working as the host's trace and options change. No
//! figure is asserted (the figures are in BENCHMARKS.md, from release builds): only that every
//! part ran and reported.

use std::process::Command;

use serde_json::Value;

/// The parts of a native run, by the prefix of the figures each reports.
const PARTS: &[&str] =
    &["server.", "cold.probe.", "cold.node.", "warm.", "ping.", "call.", "flood.", "floor.", "crowd.", "memory."];

#[test]
fn the_benchmark_harness_runs_every_native_part() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench.json");
    let mut cmd = Command::new("node");
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "benches/compare.mjs",
            "--runs",
            "1",
            "--skip",
            "reference",
            "--bin",
            env!("CARGO_BIN_EXE_mcp-apps-host"),
        ])
        .args(["--ping-n", "50", "--call-n", "20", "--flood-n", "500", "--warm-n", "2"])
        .args(["--views", "1,2", "--crowd", "3", "--settle-ms", "200", "--out"])
        .arg(&out);
    // The suite's display; without one the harness starts its own Xvfb.
    if let Some(display) = std::env::var_os("DISPLAY") {
        cmd.arg("--display").arg(display);
    }
    let run = cmd.output().expect("node runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "the harness failed: {stderr}");
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(results["meta"]["errors"], Value::Array(Vec::new()), "parts failed: {stderr}");
    let rows = results["table"].as_array().expect("a table of figures");
    for part in PARTS {
        let reported = rows.iter().any(|row| {
            row["figure"].as_str().is_some_and(|f| f.starts_with(part))
                && row["native"]["n"].as_u64().is_some_and(|n| n > 0)
        });
        assert!(reported, "no figure of the {part}* part: {stderr}");
    }
}
