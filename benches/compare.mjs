#!/usr/bin/env node
// compare.mjs: the native host (mcp-apps-host, WebKitGTK) measured side by side with the
// reference web host (benches/web-reference, headless Chromium), with the same MCP server and the
// same View (tests/fixtures/bench-server.mjs).
//
//   node benches/compare.mjs --runs 10 --out bench-results.json
//
// Runs are interleaved: run i measures the native host once and the reference once (the order
// alternates), so machine load hits both alike. The native figures come from the host's trace
// (Rust clock, microseconds) and /proc; the reference figures from benches/web-reference/bench.mjs
// run with --runs 1 per run. See BENCHMARKS.md for the definitions and a reading.

import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { median, pct, summary, fmt, formatTable } from "./web-reference/table.mjs";
import { REPO, BENCH_SERVER, startXvfb, coldRun, sessionRun, memoryRun, crowdRun, floorRun, serverStart, probeServer, track, killAll } from "./native/native.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REFERENCE = path.join(HERE, "web-reference");
const DEFAULT_BIN = path.join(REPO, "target/bench/release/mcp-apps-host");

function usage() {
  return `usage: node benches/compare.mjs [options]
  --runs N          interleaved runs (default 10)
  --out FILE        write the JSON results (meta, table, native and reference raw data)
  --bin PATH        the native host binary (default target/bench/release/mcp-apps-host, built
                    from the committed HEAD with CARGO_TARGET_DIR=target/bench when missing)
  --build           rebuild that binary from HEAD first
  --ping-n N        pings (default 1000)          --call-n N     tools/call (default 200)
  --flood-n N       log messages (default 10000)  --flood-size N payload chars (default 100)
  --warm-n N        warm opens per run (default 5) --views A,B,C  memory levels (default 1,10,50)
  --settle-ms N     wait before reading memory (default 1500)
  --skip LIST       comma list: native, reference, server, cold, session, floor, crowd, memory
  --crowd N         the crowd run: N Views open, then one more, a ping View (default 100; 0: none)
  --display DISPLAY use this X display instead of starting an Xvfb
  --native-env K=V  extra environment for the native host (repeatable), e.g.
                    MCP_APPS_HOST_COMPOSITING=always for a sensitivity run
  --native-arg ARG  an extra argument for the native host's run (repeatable), e.g.
                    --native-arg --live-views=0: every View stays live (none sleeps)
  --setups LIST     reference set-ups, each run in every interleaved run (default same,other):
                    same (sandbox on 127.0.0.1, in-process frames, GC before memory reads),
                    other (sandbox on 127.0.0.2: an out-of-process sandbox frame),
                    nogc (same site, no forced GC: like the native side)
  --no-gc           no reference set-up forces a garbage collection before memory is read:
                    neither side collects (the native one cannot), so memory compares like
                    with like in every set-up`;
}

function parseArgs(argv) {
  const o = { runs: 10, out: null, bin: null, build: false, pingN: 1000, callN: 200, floodN: 10000, floodSize: 100,
    warmN: 5, views: [1, 10, 50], settleMs: 1500, skip: new Set(), display: null, env: {}, setups: ["same", "other"],
    crowd: 100, noGc: false, hostArgs: [] };
  const num = (v, name) => { const n = Number(v); if (!Number.isInteger(n) || n < 0) throw new Error("bad " + name); return n; };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i];
    const v = () => { if (i + 1 >= argv.length) throw new Error("missing value for " + a); return argv[++i]; };
    switch (a) {
      case "--runs": o.runs = Math.max(1, num(v(), a)); break;
      case "--out": o.out = v(); break;
      case "--bin": o.bin = path.resolve(v()); break;
      case "--build": o.build = true; break;
      case "--no-gc": o.noGc = true; break;
      case "--ping-n": o.pingN = Math.max(2, num(v(), a)); break;
      case "--call-n": o.callN = Math.max(2, num(v(), a)); break;
      case "--flood-n": o.floodN = Math.max(2, num(v(), a)); break;
      case "--flood-size": o.floodSize = num(v(), a); break;
      case "--warm-n": o.warmN = Math.max(1, num(v(), a)); break;
      case "--views": o.views = v().split(",").map((s) => num(s, a)).filter((n) => n > 0).sort((x, y) => x - y); break;
      case "--settle-ms": o.settleMs = num(v(), a); break;
      case "--skip": for (const s of v().split(",")) o.skip.add(s.trim()); break;
      case "--display": o.display = v(); break;
      case "--crowd": o.crowd = num(v(), a); break;
      case "--setups": o.setups = v().split(",").map((s) => s.trim()).filter((s) => SETUPS[s] !== undefined);
        if (!o.setups.length) throw new Error("--setups wants same, other and/or nogc"); break;
      case "--native-arg": o.hostArgs.push(v()); break;
      case "--native-env": { const kv = v(); const eq = kv.indexOf("="); if (eq < 1) throw new Error("--native-env wants K=V"); o.env[kv.slice(0, eq)] = kv.slice(eq + 1); break; }
      case "-h": case "--help": console.log(usage()); process.exit(0); break;
      default: throw new Error("unknown option " + a + "\n" + usage());
    }
  }
  return o;
}

// Rows of the table: figure, unit, the native key, the reference key it is compared with (null:
// no like-for-like figure), and which direction is better.
const ROWS = [
  ["server.startStdioMs", "ms", "server.startStdioMs", "server.startStdioMs"],
  ["server.startProbeStdioMs", "ms", "server.startProbeStdioMs", null],
  ["server.startHttpMs", "ms", null, "server.startHttpMs"],
  ["cold.probe.initMs", "ms", "cold.probe.initMs", "cold.initMs"],
  ["cold.probe.resultMs", "ms", "cold.probe.resultMs", "cold.resultMs"],
  ["cold.probe.hostInitMs", "ms", "cold.probe.hostInitMs", null],
  ["cold.probe.processToRuntimeMs", "ms", "cold.probe.processToRuntimeMs", null],
  ["cold.probe.connectedMs", "ms", "cold.probe.connectedMs", null],
  ["cold.probe.connectedToProxyReadyMs", "ms", "cold.probe.connectedToProxyReadyMs", null],
  ["cold.probe.proxyReadyToInitMs", "ms", "cold.probe.proxyReadyToInitMs", null],
  ["cold.node.initMs", "ms", "cold.node.initMs", "cold.initMs"],
  ["cold.node.resultMs", "ms", "cold.node.resultMs", "cold.resultMs"],
  ["cold.node.hostInitMs", "ms", "cold.node.hostInitMs", null],
  ["cold.node.connectedMs", "ms", "cold.node.connectedMs", null],
  ["cold.modulesLoadedMs", "ms", null, "cold.modulesLoadedMs"],
  ["cold.mcpConnectedMs", "ms", null, "cold.mcpConnectedMs"],
  ["cold.openToInitMs", "ms", null, "cold.openToInitMs"],
  ["cold.fromNewPageInitMs", "ms", null, "cold.fromNewPageInitMs"],
  ["warm.initMs", "ms", "warm.initMs", "warm.initMs"],
  ["warm.resultMs", "ms", "warm.resultMs", "warm.resultMs"],
  ["warm.serverMs", "ms", "warm.serverMs", null],
  ["warm.proxyReadyMs", "ms", "warm.proxyReadyMs", null],
  ["warm.viewLoadMs", "ms", "warm.viewLoadMs", null],
  ["ping.medianMs", "ms", "ping.medianMs", "ping.medianMs"],
  ["ping.p99Ms", "ms", "ping.p99Ms", "ping.p99Ms"],
  ["ping.inSessionMedianMs", "ms", "ping.inSessionMedianMs", null],
  ["ping.rawMedianMs", "ms", "ping.rawMedianMs", "ping.rawMedianMs"],
  ["ping.rawP99Ms", "ms", "ping.rawP99Ms", "ping.rawP99Ms"],
  ["floor.pingMedianMs", "ms", "floor.pingMedianMs", null],
  ["floor.pingP99Ms", "ms", "floor.pingP99Ms", null],
  ["call.viewMedianMs", "ms", "call.viewMedianMs", "call.viewMedianMs"],
  ["call.viewP99Ms", "ms", "call.viewP99Ms", "call.viewP99Ms"],
  ["call.hostOverheadMedianMs", "ms", "call.hostOverheadMedianMs", "call.hostOverheadMedianMs"],
  ["call.hostOverheadP99Ms", "ms", "call.hostOverheadP99Ms", null],
  ["call.viewMinusServerLegMedianMs", "ms", "call.viewMinusServerLegMedianMs", "call.hostOverheadMedianMs"],
  ["call.serverLegMedianMs", "ms", "call.serverLegMedianMs", null],
  ["call.directMedianMs", "ms", "call.directStdioMedianMs", "call.directMedianMs"],
  ["call.directP99Ms", "ms", "call.directStdioP99Ms", "call.directP99Ms"],
  ["flood.hostMsgsPerSec", "msg/s", "flood.hostMsgsPerSec", "flood.hostMsgsPerSec", "higher"],
  ["flood.endToEndMsgsPerSec", "msg/s", "flood.endToEndMsgsPerSec", "flood.endToEndMsgsPerSec", "higher"],
  ["flood.viewSendMs", "ms", "flood.viewSendMs", "flood.viewSendMs"],
  ["flood.pingBehindFloodMs", "ms", "flood.pingBehindFloodMs", "flood.pingBehindFloodMs"],
  ["flood.hostDrainMs", "ms", "flood.hostDrainMs", null],
  ["flood.pingBeforeMedianMs", "ms", "flood.pingBeforeMedianMs", "flood.pingBeforeMedianMs"],
  ["flood.pingAfterMedianMs", "ms", "flood.pingAfterMedianMs", "flood.pingAfterMedianMs"],
  ["flood.pingAfterOverBefore", "ratio", "flood.pingAfterOverBefore", "flood.pingAfterOverBefore"],
  ["flood.lostMessages", "count", "flood.lostMessages", "flood.lostMessages"],
  ["crowd.openNextMs", "ms", "crowd.openNextMs", null],
  ["crowd.pingMedianMs", "ms", "crowd.pingMedianMs", null],
  ["crowd.pingP99Ms", "ms", "crowd.pingP99Ms", null],
  ["memory.pss0ViewsMB", "MB", "memory.pss0ViewsMB", "memory.pss0ViewsMB"],
  // memory.pss<N>ViewsMB rows for the chosen levels are inserted here.
  ["memory.perExtraViewMB", "MB", "memory.perExtraViewMB", "memory.perExtraViewMB"],
];

// The reference set-ups: extra arguments of bench.mjs.
const SETUPS = { same: [], other: ["--sandbox-ip", "127.0.0.2"], nogc: ["--no-gc"] };

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const loadavg = () => fs.readFileSync("/proc/loadavg", "utf8").trim();

function sh(cmd, args, opts = {}) {
  try { return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], ...opts }).trim(); } catch { return null; }
}

// The binary is built from the committed HEAD (git archive into a temporary folder), so the
// figures belong to one commit even while others edit the working tree; the commit is written
// next to the binary (<bin>.source) and into the results.
function ensureBinary(opts) {
  if (opts.bin && !opts.build) {
    if (!fs.existsSync(opts.bin)) throw new Error(`--bin ${opts.bin} does not exist`);
    return;
  }
  opts.bin ??= DEFAULT_BIN;
  if (!opts.build && fs.existsSync(opts.bin)) return;
  const commit = sh("git", ["rev-parse", "HEAD"], { cwd: REPO });
  const src = fs.mkdtempSync(path.join(os.tmpdir(), "mcp-apps-host-src-"));
  try {
    console.error(`building the native host from HEAD ${commit} (release, target/bench)`);
    execFileSync("sh", ["-c", `git archive HEAD | tar -x -C '${src}'`], { cwd: REPO, stdio: "inherit" });
    execFileSync("cargo", ["build", "--release"], { cwd: src, stdio: "inherit",
      env: { ...process.env, CARGO_TARGET_DIR: path.join(REPO, "target/bench") } });
    fs.writeFileSync(`${path.join(REPO, "target/bench/release/mcp-apps-host")}.source`, `${commit}\n`);
  } finally {
    fs.rmSync(src, { recursive: true, force: true });
  }
}

// One native run: all figures, with the parts that fail recorded and skipped.
async function nativeRun(opts, errors) {
  const f = {};
  const raw = {};
  const part = async (name, fn) => {
    if (opts.skip.has(name)) return;
    try { await fn(); } catch (e) { errors.push({ side: "native", part: name, error: String(e.stack || e) }); console.error(`  native ${name} failed: ${e.message}`); }
  };
  await part("server", async () => {
    const node = await serverStart(process.execPath, [BENCH_SERVER], opts.callN);
    f["server.startStdioMs"] = node.startMs;
    f["call.directStdioMedianMs"] = median(node.direct);
    f["call.directStdioP99Ms"] = pct(node.direct, 99);
    raw.directStdioMs = node.direct;
    f["server.startProbeStdioMs"] = (await serverStart(...probeServer(opts.bin))).startMs;
  });
  await part("cold", async () => {
    for (const kind of ["probe", "node"]) {
      const c = await coldRun(opts, kind === "probe" ? "probe" : "bench");
      f[`cold.${kind}.initMs`] = c.initMs;
      f[`cold.${kind}.resultMs`] = c.resultMs;
      f[`cold.${kind}.hostInitMs`] = c.hostInitMs;
      f[`cold.${kind}.processToRuntimeMs`] = c.processToRuntimeMs;
      f[`cold.${kind}.connectedMs`] = c.connectedMs;
      f[`cold.${kind}.connectedToProxyReadyMs`] = c.connectedToProxyReadyMs;
      f[`cold.${kind}.proxyReadyToInitMs`] = c.proxyReadyToInitMs;
      raw[`cold.${kind}`] = c;
    }
  });
  await part("session", async () => {
    const s = await sessionRun(opts);
    Object.assign(f, s.figures);
    raw.session = s.raw;
  });
  await part("floor", async () => {
    const fl = await floorRun(opts);
    f["floor.pingMedianMs"] = fl.medianMs;
    f["floor.pingP99Ms"] = fl.p99Ms;
  });
  await part("crowd", async () => {
    const n = opts.crowd;
    if (!n) return;
    const c = await crowdRun(opts, n);
    f["crowd.openNextMs"] = c.openMs;
    f["crowd.pingMedianMs"] = c.pingMedianMs;
    f["crowd.pingP99Ms"] = c.pingP99Ms;
    raw.crowd = c;
  });
  await part("memory", async () => {
    const levels = {};
    for (const n of [0, ...opts.views]) {
      levels[n] = await memoryRun(opts, n);
      f[`memory.pss${n}ViewsMB`] = levels[n].totalKb / 1024;
      f[`memory.asleep${n}Views`] = levels[n].asleep;
    }
    const lo = opts.views[0], hi = opts.views[opts.views.length - 1];
    if (hi > lo) f["memory.perExtraViewMB"] = (levels[hi].totalKb - levels[lo].totalKb) / 1024 / (hi - lo);
    raw.memory = levels;
  });
  return { figures: f, raw };
}

// One reference run of one set-up: bench.mjs --runs 1, its JSON read back.
async function referenceRun(opts, errors, setup) {
  const out = path.join(os.tmpdir(), `compare-reference-${process.pid}.json`);
  const args = [path.join(REFERENCE, "bench.mjs"), "--runs", "1", "--out", out,
    "--ping-n", String(opts.pingN), "--call-n", String(opts.callN), "--flood-n", String(opts.floodN),
    "--flood-size", String(opts.floodSize), "--warm-n", String(opts.warmN), "--views", opts.views.join(","),
    "--settle-ms", String(opts.settleMs), ...SETUPS[setup],
    ...(opts.noGc && !SETUPS[setup].includes("--no-gc") ? ["--no-gc"] : [])];
  const child = track(spawn(process.execPath, args, { cwd: REFERENCE, stdio: ["ignore", "pipe", "pipe"] }));
  let log = "";
  child.stdout.on("data", (d) => { log += d; });
  child.stderr.on("data", (d) => { log += d; });
  const code = await new Promise((r) => child.once("exit", r));
  if (code !== 0 || !fs.existsSync(out)) {
    errors.push({ side: "reference", setup, error: log.slice(-4000) });
    console.error(`  reference failed (exit ${code}):\n${log.split("\n").slice(-10).join("\n")}`);
    return null;
  }
  const res = JSON.parse(fs.readFileSync(out, "utf8"));
  fs.rmSync(out, { force: true });
  const figures = {};
  for (const [name, fig] of Object.entries(res.figures)) figures[name] = fig.runs[0];
  return { figures, raw: res.raw, meta: res.meta };
}

function versions(opts, refMeta) {
  let source = null;
  try { source = fs.readFileSync(`${opts.bin}.source`, "utf8").trim(); } catch { /* built by hand */ }
  const dirty = sh("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: REPO });
  return {
    host: sh(opts.bin, ["--version"]),
    hostBinary: opts.bin,
    hostBinaryBuilt: fs.statSync(opts.bin).mtime.toISOString(),
    // The commit the binary was built from (compare.mjs builds from HEAD); without that record,
    // the repository's HEAD and whether its working tree had changes.
    hostCommit: source ?? sh("git", ["rev-parse", "HEAD"], { cwd: REPO }),
    hostCommitSource: source ? "binary built from this commit by compare.mjs" : "repository HEAD at run time (binary built by hand)",
    hostTreeDirty: source ? false : dirty ? dirty.split("\n").length + " tracked files modified" : false,
    webkitgtk: sh("dpkg-query", ["-W", "-f=${Version}", "libwebkit2gtk-4.1-0"]),
    chromium: refMeta?.chromium ?? null,
    node: process.version,
    rustc: sh("rustc", ["--version"]),
    kernel: os.release(),
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    referencePackages: refMeta?.versions ?? null,
  };
}

async function main() {
  const opts = parseArgs(process.argv);
  for (const sig of ["SIGINT", "SIGTERM"]) {
    process.once(sig, () => { console.error(`\n${sig}: stopping everything this benchmark started`); killAll(); process.exit(130); });
  }
  ensureBinary(opts);
  // The reference's browser and packages (idempotent; quick once installed): without them every
  // reference run would fail, after the native side had spent its time.
  if (!opts.skip.has("reference")) execFileSync("bash", [path.join(REFERENCE, "setup.sh")], { stdio: ["ignore", 2, 2] });
  const started = new Date().toISOString();
  const loadStart = loadavg();
  const errors = [];
  const runLoad = []; // /proc/loadavg when each side of each run started
  const native = { runs: [], raw: [] };
  // One record per set-up; `reference` (the first set-up, "same" by default) keeps the old shape.
  const references = Object.fromEntries(opts.setups.map((s) => [s, { runs: [], raw: [], meta: null }]));
  const reference = references[opts.setups[0]];

  let xvfb = null;
  if (!opts.skip.has("native")) {
    if (!opts.display) {
      xvfb = await startXvfb();
      opts.display = xvfb.display;
    }
  }
  console.error(`compare: ${opts.runs} runs, host ${opts.bin}, display ${opts.display ?? "-"}, load ${loadStart}`);
  try {
    for (let run = 0; run < opts.runs; run++) {
      // The native host and each reference set-up once per run, the order rotating.
      const sides = ["native", ...opts.setups.map((s) => "reference:" + s)];
      const order = [...sides.slice(run % sides.length), ...sides.slice(0, run % sides.length)];
      for (const side of order) {
        if (opts.skip.has(side.split(":")[0])) continue;
        const t = Date.now();
        runLoad.push({ run: run + 1, side, loadavg: loadavg() });
        console.error(`run ${run + 1}/${opts.runs}: ${side} (load ${loadavg().split(" ").slice(0, 3).join(" ")})`);
        if (side === "native") {
          const r = await nativeRun(opts, errors);
          native.runs.push(r.figures);
          native.raw.push(r.raw);
        } else {
          const setup = side.split(":")[1];
          const r = await referenceRun(opts, errors, setup);
          if (r) {
            references[setup].runs.push(r.figures);
            references[setup].raw.push(r.raw);
            references[setup].meta ??= r.meta;
          }
        }
        console.error(`  ${side} took ${((Date.now() - t) / 1000).toFixed(1)} s`);
        await sleep(500);
      }
    }
  } finally {
    if (xvfb) await xvfb.stop();
  }
  const loadEnd = loadavg();

  // The table.
  const rows = [...ROWS];
  const at = rows.findIndex((r) => r[0] === "memory.perExtraViewMB");
  rows.splice(at, 0, ...opts.views.map((n) => [`memory.pss${n}ViewsMB`, "MB", `memory.pss${n}ViewsMB`, `memory.pss${n}ViewsMB`]),
    // How many of the native host's Views slept at the reading (the reference keeps all live).
    ...opts.views.map((n) => [`memory.asleep${n}Views`, "count", `memory.asleep${n}Views`, null]));
  const stat = (runs, key) => {
    if (!key) return null;
    const xs = runs.map((r) => r[key]).filter((x) => typeof x === "number" && Number.isFinite(x));
    return xs.length ? { ...summary(xs), n: xs.length, runs: xs } : null;
  };
  const table = [];
  for (const [figure, unit, nKey, rKey, better = "lower"] of rows) {
    const n = stat(native.runs, nKey);
    const bySetup = Object.fromEntries(opts.setups.map((s) => [s, stat(references[s].runs, rKey)]));
    if (!n && Object.values(bySetup).every((r) => !r)) continue;
    const ratioOf = (r) => (n && r && r.median !== 0 ? n.median / r.median : null);
    const r = bySetup[opts.setups[0]];
    table.push({ figure, unit, better, nativeKey: nKey, referenceKey: rKey, native: n, reference: r, ratio: ratioOf(r),
      setups: Object.fromEntries(opts.setups.map((s) => [s, { reference: bySetup[s], ratio: ratioOf(bySetup[s]) }])) });
  }
  const cells = (s) => (s ? [fmt(s.min), fmt(s.median), fmt(s.max)] : ["—", "—", "—"]);
  const ratioCell = (x) => (x === null ? "—" : x.toFixed(2));
  const text = formatTable(
    ["figure", "unit", "native min", "median", "max", ...opts.setups.flatMap((s) => [`${s} median`, "ratio"])],
    table.map((t) => [t.figure + (t.better === "higher" ? " (↑)" : ""), t.unit, ...cells(t.native),
      ...opts.setups.flatMap((s) => [t.setups[s].reference ? fmt(t.setups[s].reference.median) : "—", ratioCell(t.setups[s].ratio)])]),
  );
  const meta = {
    started, finished: new Date().toISOString(), loadavgStart: loadStart, loadavgEnd: loadEnd, runLoad,
    runs: { native: native.runs.length, ...Object.fromEntries(opts.setups.map((s) => [s, references[s].runs.length])) },
    options: { ...opts, skip: [...opts.skip] },
    versions: versions(opts, reference.meta),
    referenceChromiumFlags: reference.meta?.chromiumFlags ?? null,
    errors,
  };
  console.log(`mcp-apps-host (native, WebKitGTK ${meta.versions.webkitgtk}) vs web reference (Chromium ${meta.versions.chromium ?? "-"}), ` +
    `${native.runs.length} native runs, reference set-ups ${opts.setups.map((s) => `${s} ${references[s].runs.length}`).join(", ")}; ` +
    `ratio = native median / that set-up's median; (↑) higher is better; memory read ` +
    (opts.noGc || opts.setups.every((s) => s === "nogc") ? "with no forced garbage collection on either side"
      : "after a forced V8 collection on the reference side (except nogc), none on the native side"));
  console.log(text);
  console.log(`load average: start ${loadStart} | end ${loadEnd} (${meta.versions.cpus} CPUs)`);
  if (errors.length) console.log(`${errors.length} part(s) failed; see meta.errors in the JSON`);
  if (opts.out) {
    fs.writeFileSync(opts.out, JSON.stringify({ meta, table, native, reference, references }, null, 1) + "\n");
    console.error("wrote " + opts.out);
  }
}

main().catch((e) => { console.error(e && e.stack ? e.stack : e); process.exit(1); });
