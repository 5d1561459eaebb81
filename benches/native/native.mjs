// native.mjs: the native host's side of the comparison (used by ../compare.mjs).
//
// Every native figure comes from the host's own trace (`run --trace`: `t_ms` is milliseconds
// since the host's runtime started, microsecond precision, taken in Rust) and from /proc. Nothing
// is timed with performance.now() inside WebKit. This file only spawns processes, reads traces
// and /proc, and does the arithmetic; the definitions are in BENCHMARKS.md.

import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { median, pct } from "../web-reference/table.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, "../..");
export const BENCH_SERVER = path.join(REPO, "tests/fixtures/bench-server.mjs");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- processes ------------------------------------------------------------------------------

function waitExit(child) {
  return new Promise((r) => {
    if (child.exitCode !== null || child.signalCode) r({ code: child.exitCode, signal: child.signalCode });
    else child.once("exit", (code, signal) => r({ code, signal }));
  });
}

// pid -> {ppid, comm, cmdline}
export function readProcs() {
  const procs = new Map();
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      const comm = stat.slice(stat.indexOf("(") + 1, close);
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      const cmdline = fs.readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0").filter(Boolean);
      procs.set(Number(d), { ppid, comm, cmdline });
    } catch { /* gone */ }
  }
  return procs;
}

// The process and all its descendants, as [pid, info] pairs; `skip(info)` prunes a subtree.
export function processTree(root, skip = () => false, procs = readProcs()) {
  const out = [];
  const queue = [root];
  while (queue.length) {
    const pid = queue.shift();
    const info = procs.get(pid);
    if (!info || skip(info)) continue;
    out.push([pid, info]);
    for (const [child, p] of procs) if (p.ppid === pid) queue.push(child);
  }
  return out;
}

// The MCP server (node bench-server.mjs, or the host's own probe server) is not part of the host.
const isServer = (p) => p.comm === "node" || p.cmdline.includes("__probe-server") || p.cmdline.includes("mcp-apps-host-server");

// PSS (kB) of the host and its descendants (WebKit processes), without the MCP server subtree.
export function hostPss(pid) {
  let totalKb = 0;
  const byProcess = {};
  const tree = processTree(pid, isServer);
  for (const [p, info] of tree) {
    let text;
    try { text = fs.readFileSync(`/proc/${p}/smaps_rollup`, "utf8"); } catch { continue; }
    const field = (name) => Number(text.match(new RegExp(`^${name}:\\s+(\\d+) kB`, "m"))?.[1] ?? 0);
    const kb = field("Pss");
    const e = (byProcess[info.comm] ??= { count: 0, pssKb: 0, pssAnonKb: 0, pssFileKb: 0, pssShmemKb: 0 });
    e.count++;
    e.pssKb += kb;
    e.pssAnonKb += field("Pss_Anon");
    e.pssFileKb += field("Pss_File");
    e.pssShmemKb += field("Pss_Shmem");
    totalKb += kb;
  }
  return { totalKb, processes: tree.length, byProcess };
}

// Children this driver started and has not stopped yet (for killAll on Ctrl-C).
const live = new Set();
export function track(child) {
  live.add(child);
  child.once("exit", () => live.delete(child));
  return child;
}

// Ctrl-C: every process this driver started, with all its descendants, by pid.
export function killAll() {
  const procs = readProcs();
  for (const child of live) {
    for (const [p] of processTree(child.pid, () => false, procs).reverse()) {
      try { process.kill(p, "SIGKILL"); } catch { /* gone */ }
    }
  }
}

// Stops a host this driver started (SIGTERM, then SIGKILL), and then every descendant it left
// behind, by pid (the tree is recorded before the host goes).
async function stopHost(child) {
  const tree = processTree(child.pid).map(([p]) => p).filter((p) => p !== child.pid);
  if (child.exitCode === null && !child.signalCode) {
    child.kill("SIGTERM");
    const t = setTimeout(() => child.kill("SIGKILL"), 3000);
    await waitExit(child);
    clearTimeout(t);
  }
  const deadline = Date.now() + 3000;
  for (;;) {
    const alive = tree.filter((p) => fs.existsSync(`/proc/${p}`) && readProcs().get(p)?.ppid !== undefined);
    if (alive.length === 0) return;
    if (Date.now() > deadline) {
      for (const p of alive) { try { process.kill(p, "SIGKILL"); } catch { /* gone */ } }
      return;
    }
    await sleep(50);
  }
}

// --- the X display -----------------------------------------------------------------------------

// An Xvfb of our own (display number chosen by Xvfb itself through -displayfd).
export async function startXvfb() {
  const child = track(spawn("Xvfb", ["-displayfd", "3", "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
    { stdio: ["ignore", "ignore", "ignore", "pipe"] }));
  const display = await new Promise((resolve, reject) => {
    let buf = "";
    child.stdio[3].setEncoding("utf8");
    child.stdio[3].on("data", (d) => { buf += d; if (buf.includes("\n")) resolve(":" + buf.trim()); });
    child.once("exit", (c) => reject(new Error("Xvfb exited with " + c)));
    child.once("error", reject);
  });
  return { display, stop: async () => { child.kill(); await waitExit(child); } };
}

// --- traces ------------------------------------------------------------------------------------

export function readTrace(file) {
  let text = "";
  try { text = fs.readFileSync(file, "utf8"); } catch { return []; }
  const out = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    try { out.push(JSON.parse(line)); } catch { /* a partial last line */ }
  }
  return out;
}

// Appends what a file gained since the last call; returns the new complete lines.
function tailer(file) {
  let offset = 0;
  let rest = "";
  return () => {
    let fd;
    try { fd = fs.openSync(file, "r"); } catch { return []; }
    try {
      const size = fs.fstatSync(fd).size;
      if (size <= offset) return [];
      const buf = Buffer.alloc(size - offset);
      fs.readSync(fd, buf, 0, buf.length, offset);
      offset = size;
      const text = rest + buf.toString("utf8");
      const lines = text.split("\n");
      rest = lines.pop();
      return lines.filter(Boolean);
    } finally {
      fs.closeSync(fd);
    }
  };
}

const method = (r) => r.msg?.method;
const isInit = (r) => r.dir === "view->host" && method(r) === "ui/notifications/initialized";
const isResult = (r) => r.dir === "host->view" && method(r) === "ui/notifications/tool-result";

// --- the host -----------------------------------------------------------------------------------

export function hostEnv(opts) {
  return { ...process.env, ...(opts.env ?? {}), DISPLAY: opts.display };
}

// Starts `mcp-apps-host run ... --trace` with its stderr in a file.
function startHost(opts, args, dir) {
  const trace = path.join(dir, "trace.jsonl");
  const errFile = path.join(dir, "stderr.txt");
  const err = fs.openSync(errFile, "w");
  const t0 = performance.now();
  const child = track(spawn(opts.bin, ["run", ...args, ...(opts.hostArgs ?? []), "--trace", trace], {
    cwd: REPO, env: hostEnv(opts), stdio: ["ignore", "ignore", err],
  }));
  fs.closeSync(err);
  const stderr = () => { try { return fs.readFileSync(errFile, "utf8"); } catch { return ""; } };
  return { child, t0, trace, stderr };
}

const benchServerCmd = () => `node ${BENCH_SERVER}`;
// The built-in probe server as the host starts it (`check --self`): the small server binary
// built beside the host, else the host's own `__probe-server` (an older build).
export function probeServer(bin) {
  const small = path.join(path.dirname(bin), "mcp-apps-host-server");
  return fs.existsSync(small) ? [small, ["probe"]] : [bin, ["__probe-server"]];
}
const probeServerCmd = (opts) => {
  const [cmd, args] = probeServer(opts.bin);
  return [cmd, ...args].join(" ");
};

function failWith(what, host, extra = "") {
  const tail = host.stderr().split("\n").slice(-15).join("\n");
  return new Error(`${what}${extra}\n--- host stderr (tail) ---\n${tail}`);
}

// (1) Cold start: a fresh host process, `--exit-after result`. The trace file is watched
// (inotify) while the host runs, so each record's arrival on our clock is known; the smallest
// (arrival - t_ms) bounds the offset between our spawn() and the host's t_ms = 0 from above,
// which turns host-internal times into times from process start.
export async function coldRun(opts, kind) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "native-cold-"));
  try {
    const [server, tool, args] = kind === "probe"
      ? [probeServerCmd(opts), "host-probe", "{}"]
      : [benchServerCmd(), "bench-view", JSON.stringify({ mode: "idle" })];
    const seen = []; // [arrival (ms since our spawn), t_ms]
    let host;
    const read = tailer(path.join(dir, "trace.jsonl"));
    const onChange = () => {
      const now = performance.now();
      for (const line of read()) {
        try { seen.push([now - host.t0, JSON.parse(line).t_ms]); } catch { /* ignore */ }
      }
    };
    const watcher = fs.watch(dir, onChange);
    host = startHost(opts, ["--stdio", server, "--tool", tool, "--args", args,
      "--exit-after", "result", "--settle-ms", "0", "--timeout", "60"], dir);
    const exit = await waitExit(host.child);
    const wallExitMs = performance.now() - host.t0;
    onChange();
    watcher.close();
    const trace = readTrace(host.trace);
    const init = trace.find(isInit);
    const result = trace.find(isResult);
    if (exit.code !== 0 || !init || !result) throw failWith(`cold run (${kind}) failed`, host, ` (exit ${exit.code})`);
    const offset = Math.min(...seen.map(([arrival, t]) => arrival - t));
    const at = (pred) => trace.find(pred)?.t_ms ?? null;
    const connected = at((r) => r.dir === "host->server");
    const proxyReady = at((r) => r.dir === "proxy->host");
    return {
      initMs: offset + init.t_ms,
      // Breakdown in host t_ms: runtime start -> server connected (initialize + tools/list done,
      // first call sent) -> proxy frame ready -> View initialized.
      connectedMs: connected,
      connectedToProxyReadyMs: proxyReady - connected,
      proxyReadyToInitMs: init.t_ms - proxyReady,
      resultMs: offset + result.t_ms,
      hostInitMs: init.t_ms,
      hostResultMs: result.t_ms,
      processToRuntimeMs: offset, // spawn() -> the host's t_ms = 0 (upper bound)
      wallExitMs,
      // The timeline, in host t_ms.
      timeline: {
        toolCall: at((r) => r.dir === "host->server" && method(r) === "tools/call"),
        resourceRead: at((r) => r.dir === "host->server" && method(r) === "resources/read"),
        resourceReadDone: at((r) => r.dir === "server->host" && method(r) === "resources/read"),
        toolCallDone: at((r) => r.dir === "server->host" && method(r) === "tools/call"),
        proxyReady: at((r) => r.dir === "proxy->host"),
        resourceSent: at((r) => r.dir === "host->proxy"),
        viewInitialize: at((r) => r.dir === "view->host" && method(r) === "ui/initialize"),
        initialized: init.t_ms,
        toolResult: result.t_ms,
      },
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// Waits until `done(records)` holds for the growing trace, reading it every `everyMs`.
async function watchTrace(host, done, limitMs, everyMs = 250) {
  const read = tailer(host.trace);
  const records = [];
  const deadline = Date.now() + limitMs;
  for (;;) {
    for (const line of read()) { try { records.push(JSON.parse(line)); } catch { /* partial */ } }
    if (done(records)) return records;
    if (host.child.exitCode !== null || host.child.signalCode) throw failWith("the host exited early", host);
    if (Date.now() > deadline) throw failWith("timed out", host, ` after ${limitMs} ms`);
    await sleep(everyMs);
  }
}

const reportOf = (r) => r.dir === "host->server" && method(r) === "tools/call" && r.msg.params?.name === "bench-report"
  ? r.msg.params.arguments?.results : undefined;

// (2)(3)(4)(6) One host, no --tool; the automation opens bench-view through the picker:
// `warmN` idle Views one after the other, then ping, call and flood, each after the previous
// closed itself. Figures from the trace.
export async function sessionRun(opts) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "native-session-"));
  const plan = [
    ...Array.from({ length: opts.warmN }, () => ({ mode: "idle" })),
    { mode: "ping", n: opts.pingN },
    { mode: "call", n: opts.callN },
    { mode: "flood", n: opts.floodN, size: opts.floodSize },
  ];
  const script = path.join(dir, "automation.js");
  fs.writeFileSync(script, `const PLAN = ${JSON.stringify(plan)};\n` + fs.readFileSync(path.join(HERE, "session.js"), "utf8"));
  const host = startHost(opts, ["--stdio", benchServerCmd(), "--automation", script, "--timeout", "900"], dir);
  try {
    await watchTrace(host, (rs) => rs.some((r) => reportOf(r)?.mode === "flood"), 600000);
    // Let the flood View finish its teardown before the host is stopped.
    await sleep(300);
  } finally {
    await stopHost(host.child);
  }
  const trace = readTrace(host.trace);
  fs.rmSync(dir, { recursive: true, force: true });
  return analyseSession(trace, opts);
}

export function analyseSession(trace, opts) {
  // Views and their modes, from the host's call of bench-view.
  const views = [];
  const modeOf = new Map();
  for (const r of trace) {
    if (r.dir === "host->server" && method(r) === "tools/call" && r.msg.params?.name === "bench-view") {
      views.push(r.view);
      modeOf.set(r.view, { mode: r.msg.params.arguments?.mode, callT: r.t_ms });
    }
  }
  const of = (view) => trace.filter((r) => r.view === view);
  const reportFor = (view) => of(view).map(reportOf).find(Boolean);
  const out = { figures: {}, raw: {} };
  const fig = (name, value) => { out.figures[name] = value; };
  const diffs = (ts) => ts.slice(1).map((t, i) => t - ts[i]);

  // (2) warm open: host->server tools/call of the View -> its initialized (and -> tool-result).
  const idle = views.filter((v) => modeOf.get(v).mode === "idle");
  const warmInit = [], warmResult = [], warmStages = [];
  for (const v of idle) {
    const rs = of(v);
    const init = rs.find(isInit), result = rs.find(isResult);
    if (!init || !result) throw new Error(`warm View ${v} did not initialize`);
    const t0 = modeOf.get(v).callT;
    warmInit.push(init.t_ms - t0);
    warmResult.push(result.t_ms - t0);
    // Where the time goes, ms after the host->server tools/call.
    const at = (pred) => (rs.find(pred)?.t_ms ?? NaN) - t0;
    // A View whose resource the host kept from the previous View's read has no read of its own
    // (the host reads it again in the background, for the next): its resource is there at 0.
    const keptResource = !rs.some((r) => r.dir === "host->server" && method(r) === "resources/read");
    warmStages.push({
      keptResource,
      resourceReadDone: keptResource ? 0 : at((r) => r.dir === "server->host" && method(r) === "resources/read"),
      toolCallDone: at((r) => r.dir === "server->host" && method(r) === "tools/call"),
      proxyReady: at((r) => r.dir === "proxy->host"),
      resourceSent: at((r) => r.dir === "host->proxy"),
      viewInitialize: at((r) => r.dir === "view->host" && method(r) === "ui/initialize"),
      initialized: init.t_ms - t0,
    });
  }
  if (idle.length !== opts.warmN) throw new Error(`expected ${opts.warmN} warm Views, saw ${idle.length}`);
  fig("warm.initMs", median(warmInit));
  fig("warm.resultMs", median(warmResult));
  // Breakdown: the server's part (tools/call ∥ resources/read), the proxy frame, the View's load.
  fig("warm.serverMs", median(warmStages.map((w) => Math.max(w.resourceReadDone, w.toolCallDone))));
  fig("warm.proxyReadyMs", median(warmStages.map((w) => w.proxyReady - w.resourceReadDone)));
  fig("warm.viewLoadMs", median(warmStages.map((w) => w.viewInitialize - w.resourceSent)));
  out.raw.warmInitMs = warmInit;
  out.raw.warmResultMs = warmResult;
  out.raw.warmStages = warmStages;

  // (3) ping: inter-arrival of consecutive View pings = one full round trip each.
  const pingView = views.find((v) => modeOf.get(v).mode === "ping");
  // The App SDK's pings have number ids; the View's raw ones (no SDK) string ids "raw-N".
  const pingsOf = (raw) => of(pingView)
    .filter((r) => r.dir === "view->host" && method(r) === "ping" && (typeof r.msg.id === "string") === raw)
    .map((r) => r.t_ms);
  const pings = pingsOf(false), rawPings = pingsOf(true);
  if (pings.length !== opts.pingN) throw new Error(`expected ${opts.pingN} pings, saw ${pings.length}`);
  if (rawPings.length !== opts.pingN) throw new Error(`expected ${opts.pingN} raw pings, saw ${rawPings.length}`);
  const rtt = diffs(pings), rawRtt = diffs(rawPings);
  fig("ping.medianMs", median(rtt));
  fig("ping.p99Ms", pct(rtt, 99));
  fig("ping.rawMedianMs", median(rawRtt));
  fig("ping.rawP99Ms", pct(rawRtt, 99));
  // The part inside the host's bridge session: request recorded -> response recorded.
  const pingReq = new Map(), inHost = [];
  for (const r of of(pingView)) {
    if (r.dir === "view->host" && method(r) === "ping") pingReq.set(r.msg.id, r.t_ms);
    else if (r.dir === "host->view" && pingReq.has(r.msg.id) && "result" in r.msg) inHost.push(r.t_ms - pingReq.get(r.msg.id));
  }
  fig("ping.inSessionMedianMs", median(inHost));
  out.raw.pingRttMs = rtt;
  out.raw.rawPingRttMs = rawRtt;

  // (4) tools/call bench-echo: per call, matched by id (View side) and arguments.i (server side).
  const callView = views.find((v) => modeOf.get(v).mode === "call");
  const rs = of(callView);
  const reqs = rs.filter((r) => r.dir === "view->host" && method(r) === "tools/call" && r.msg.params?.name === "bench-echo");
  const calls = [];
  for (const req of reqs) {
    const i = req.msg.params.arguments?.i;
    const toServer = rs.find((r) => r.dir === "host->server" && method(r) === "tools/call" && r.msg.params?.arguments?.i === i && r.msg.params?.name === "bench-echo");
    const fromServer = rs.find((r) => r.dir === "server->host" && method(r) === "tools/call" && r.msg.result?.structuredContent?.i === i);
    const resp = rs.find((r) => r.dir === "host->view" && r.msg.id === req.msg.id && "result" in r.msg);
    if (!toServer || !fromServer || !resp) throw new Error(`call ${i}: incomplete trace`);
    const inHost = resp.t_ms - req.t_ms;
    const server = fromServer.t_ms - toServer.t_ms;
    calls.push({ i, inHost, server, overhead: inHost - server });
  }
  if (calls.length !== opts.callN) throw new Error(`expected ${opts.callN} calls, saw ${calls.length}`);
  const viewTotal = diffs(reqs.map((r) => r.t_ms));
  const overhead = calls.map((c) => c.overhead);
  const serverLeg = calls.map((c) => c.server);
  fig("call.viewMedianMs", median(viewTotal));
  fig("call.viewP99Ms", pct(viewTotal, 99));
  fig("call.hostOverheadMedianMs", median(overhead));
  fig("call.hostOverheadP99Ms", pct(overhead, 99));
  fig("call.serverLegMedianMs", median(serverLeg));
  fig("call.viewMinusServerLegMedianMs", median(viewTotal) - median(serverLeg));
  out.raw.calls = calls;
  out.raw.callViewTotalMs = viewTotal;

  // (6) flood: notifications/message the host received, and pings before / after.
  const floodView = views.find((v) => modeOf.get(v).mode === "flood");
  const fr = of(floodView).filter((r) => r.dir === "view->host");
  const logs = fr.filter((r) => method(r) === "notifications/message").map((r) => r.t_ms);
  const fpings = fr.filter((r) => method(r) === "ping").map((r) => r.t_ms);
  const before = fpings.filter((t) => t < logs[0]);
  const after = fpings.filter((t) => t > logs[logs.length - 1]);
  const rep = reportFor(floodView);
  if (!rep) throw new Error("no flood report");
  const window = logs[logs.length - 1] - logs[0];
  fig("flood.hostMsgsPerSec", ((logs.length - 1) * 1000) / window);
  fig("flood.lostMessages", opts.floodN - logs.length);
  // after[0] is the ping right behind the flood; consecutive arrivals after it are round trips.
  const pingBefore = diffs(before), pingAfter = diffs(after);
  fig("flood.pingBeforeMedianMs", median(pingBefore));
  fig("flood.pingAfterMedianMs", median(pingAfter));
  fig("flood.pingAfterOverBefore", median(pingAfter) / median(pingBefore));
  fig("flood.hostDrainMs", after[0] - logs[0]);
  // View-side (performance.now(), 1 ms steps in WebKit): fine at these magnitudes.
  fig("flood.pingBehindFloodMs", rep.timingsMs?.[0]);
  fig("flood.endToEndMsgsPerSec", (opts.floodN * 1000) / rep.totalMs);
  fig("flood.viewSendMs", rep.sendMs);
  out.raw.flood = { count: logs.length, windowMs: window, pingsBefore: pingBefore, pingsAfter: pingAfter, view: rep };
  for (const v of views) {
    const r = reportFor(v);
    if (r?.error) throw new Error(`View ${v} (${r.mode}) reported an error: ${r.error}`);
  }
  return out;
}

// (0) The floor: `mcp-apps-host __ipc-floor N`, a bare page <-> Rust round trip in this WebKit
// (one webview, answered from the IPC handler with one evaluate_script; no MCP, no bridge),
// timed in Rust. Every ping ratio can be read against what the engine allows.
export async function floorRun(opts) {
  const child = track(spawn(opts.bin, ["__ipc-floor", String(opts.pingN)], { env: hostEnv(opts), stdio: ["ignore", "pipe", "pipe"] }));
  let out = "", err = "";
  child.stdout.on("data", (d) => { out += d; });
  child.stderr.on("data", (d) => { err += d; });
  await waitExit(child);
  const line = out.trim().split("\n").pop();
  try { return JSON.parse(line); } catch { throw new Error(`__ipc-floor printed no result: ${err.slice(-500)}`); }
}

// (7) A crowd: a host with `n` idle bench Views open (--tool, keepOpen); once they are all
// mounted and have loaded, the automation opens one more through the picker, a ping View. Its
// open time (host->server tools/call -> initialized) and its pings say whether the host stays
// responsive with a long conversation's worth of Views open.
export async function crowdRun(opts, n) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "native-crowd-"));
  const tools = [];
  for (let i = 0; i < n; i++) tools.push("--tool", "bench-view", "--args", JSON.stringify({ mode: "idle", keepOpen: true }));
  const script = path.join(dir, "automation.js");
  const plan = [{ mode: "ping", n: opts.pingN }];
  fs.writeFileSync(script, `const PLAN = ${JSON.stringify(plan)};\nconst CROWD = ${n};\nconst CROWD_SETTLE_MS = 3000;\n` +
    fs.readFileSync(path.join(HERE, "session.js"), "utf8"));
  const host = startHost(opts, ["--stdio", benchServerCmd(), ...tools, "--automation", script, "--timeout", "900"], dir);
  try {
    await watchTrace(host, (rs) => rs.some((r) => reportOf(r)?.mode === "ping"), 600000);
  } finally {
    await stopHost(host.child);
  }
  const trace = readTrace(host.trace);
  fs.rmSync(dir, { recursive: true, force: true });
  const call = trace.find((r) => r.dir === "host->server" && method(r) === "tools/call" && r.msg.params?.name === "bench-view"
    && r.msg.params.arguments?.mode === "ping");
  if (!call) throw new Error("crowd run: the ping View was never called");
  // Open: each View initialized, or went to sleep first (past the host's budget of live Views,
  // a View out of sight sleeps and wakes when scrolled to), before the ping View was called.
  const earlier = trace.filter((r) => r.t_ms < call.t_ms);
  const initialized = new Set(earlier.filter(isInit).map((r) => r.view));
  const asleep = new Set(earlier.filter((r) => r.dir === "diagnostic" && r.msg?.kind === "sleep").map((r) => r.view));
  const open = new Set([...initialized, ...asleep]);
  if (open.size < n) {
    throw new Error(`crowd run: only ${open.size} of ${n} Views had initialized or gone to sleep when the ping View opened`);
  }
  const rs = trace.filter((r) => r.view === call.view);
  const init = rs.find(isInit);
  // The App SDK's pings (number ids), as in the session run; not the raw ones that follow.
  const pings = rs.filter((r) => r.dir === "view->host" && method(r) === "ping" && typeof r.msg.id === "number")
    .map((r) => r.t_ms);
  if (!init || pings.length !== opts.pingN) throw new Error(`crowd run: the ping View sent ${pings.length} pings`);
  const rtt = pings.slice(1).map((t, i) => t - pings[i]);
  return { openMs: init.t_ms - call.t_ms, pingMedianMs: median(rtt), pingP99Ms: pct(rtt, 99), rtt,
    initialized: initialized.size, asleep: asleep.size };
}

// (5) Memory: a host with `n` bench Views (idle) opened by repeated --tool; the automation keeps
// them open (drops their request-teardown in the shell). Once every View initialized and
// reported, settle, then sum PSS over the host and its descendants, the node server excluded.
// n = 0: the app with its tool picker only, read `settleMs` after the host connected.
export async function memoryRun(opts, n) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "native-memory-"));
  const tools = [];
  // Every View stays open for the reading (the reference host ignores request-teardown there).
  for (let i = 0; i < n; i++) tools.push("--tool", "bench-view", "--args", JSON.stringify({ mode: "idle", keepOpen: true }));
  const host = startHost(opts, ["--stdio", benchServerCmd(), ...tools, "--timeout", "900"], dir);
  let pss, trace;
  try {
    if (n > 0) {
      // Every View opened reported, or went to sleep (past the host's budget of live Views)
      // before it did.
      const settled = (rs) => {
        const done = new Set(rs.filter((r) => reportOf(r) || (r.dir === "diagnostic" && r.msg?.kind === "sleep")).map((r) => r.view));
        return rs.filter(isInit).length >= n && Array.from({ length: n }, (_, i) => `v${i + 1}`).every((v) => done.has(v));
      };
      await watchTrace(host, settled, 600000);
    } else {
      // No View, so no trace record to wait for: wait until the web process is up, plus 2 s.
      const deadline = Date.now() + 60000;
      while (!processTree(host.child.pid).some(([, p]) => p.comm.startsWith("WebKitWebProces"))) {
        if (Date.now() > deadline) throw failWith("no WebKit web process", host);
        await sleep(100);
      }
      await sleep(2000);
    }
    await sleep(opts.settleMs);
    pss = hostPss(host.child.pid);
    trace = readTrace(host.trace);
  } finally {
    await stopHost(host.child);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  // Views far out of sight sleep past the host's budget of live ones (`--live-views`): they
  // are counted, and no other View may have been torn down.
  const slept = new Set(trace.filter((r) => r.dir === "diagnostic" && r.msg?.kind === "sleep").map((r) => r.view));
  const woken = new Set(trace.filter((r) => r.dir === "diagnostic" && r.msg?.kind === "woken").map((r) => r.msg.from));
  const teardowns = trace.filter((r) => r.dir === "host->view" && method(r) === "ui/resource-teardown" && !slept.has(r.view)).length;
  if (teardowns > 0) throw new Error(`memory run (${n} Views): ${teardowns} Views were torn down before the reading`);
  pss.asleep = [...slept].filter((v) => !woken.has(v)).length;
  return pss;
}

// --- servers without the host -----------------------------------------------------------------

const INIT_REQUEST = { jsonrpc: "2.0", id: 1, method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } } };

// A newline-delimited JSON-RPC client on a child's stdio (what rmcp's stdio transport does, with
// no SDK in between).
function rpcChild(child) {
  const waiting = new Map();
  let buf = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      let msg;
      try { msg = JSON.parse(line); } catch { continue; }
      const w = waiting.get(msg.id);
      if (w) { waiting.delete(msg.id); w(msg); }
    }
  });
  return (id, payload) => new Promise((resolve) => {
    waiting.set(id, resolve);
    child.stdin.write(JSON.stringify(payload) + "\n");
  });
}

// Server start, as the reference measures it: spawn -> initialize written at once -> its
// response. Then, for bench-server, `callN` sequential tools/call bench-echo from this plain
// stdio client (the direct baseline for a View's call through the host).
export async function serverStart(cmd, args, callN = 0) {
  const t0 = performance.now();
  const child = track(spawn(cmd, args, { stdio: ["pipe", "pipe", "ignore"] }));
  const rpc = rpcChild(child);
  const init = rpc(1, INIT_REQUEST);
  const exited = waitExit(child).then(() => { throw new Error(`${cmd} ${args.join(" ")} exited`); });
  await Promise.race([init, exited]);
  const startMs = performance.now() - t0;
  const direct = [];
  if (callN > 0) {
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
    for (let i = 0; i < callN; i++) {
      const s = performance.now();
      const res = await rpc(100 + i, { jsonrpc: "2.0", id: 100 + i, method: "tools/call", params: { name: "bench-echo", arguments: { i } } });
      direct.push(performance.now() - s);
      if (res.error) throw new Error("bench-echo failed: " + JSON.stringify(res.error));
    }
  }
  exited.catch(() => {});
  child.stdin.end();
  child.kill();
  await waitExit(child);
  return { startMs, direct };
}
