#!/usr/bin/env node
// bench.mjs: drives the reference web host (host.html) in headless Chromium and
// measures the figures listed in README.md.
//
//   node bench.mjs [--runs 10] [--out results.json] [options, see usage()]
//
// One Chromium (Debian package, /usr/bin/chromium) is launched through
// playwright-core with exactly the flags in FLAGS and a fresh --user-data-dir.
// The MCP server (tests/fixtures/bench-server.mjs --http) and the two static
// servers run for the whole benchmark (serve.mjs). The View's own measurements
// come back as `BENCH <json>` lines on the MCP server's stderr.

import { spawn } from "node:child_process";
import { request as httpRequest } from "node:http";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { startServers, BENCH_SERVER } from "./serve.mjs";
import { median, pct, summary, fmt, formatTable } from "./table.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

// --- options -----------------------------------------------------------------

function usage() {
  return `usage: node bench.mjs [options]
  --runs N            runs per figure (default 10)
  --out FILE          write JSON results to FILE
  --ping-n N          pings per run (default 1000)
  --call-n N          tools/call per run, via the View and direct (default 200)
  --flood-n N         log notifications in the flood (default 10000)
  --flood-size N      payload characters per notification (default 100)
  --warm-n N          warm opens per run; the run's value is their median (default 5)
  --views A,B,C       View counts for the memory figure (default 1,10,50)
  --settle-ms N       wait before reading memory (default 1500)
  --no-gc             do not force a V8 GC (CDP HeapProfiler.collectGarbage) before reading memory
  --sandbox-ip IP     address of the sandbox origin (default 127.0.0.1: same site as the host;
                      127.0.0.2 makes it another site, i.e. an out-of-process iframe)
  --keep-console-debug  do not silence console.debug in the page and frames (see README)
  --chromium PATH     browser binary (default /usr/bin/chromium)
  --skip LIST         comma list of figures to skip: server,cold,warm,ping,call,flood,memory`;
}

function parseArgs(argv) {
  const o = { runs: 10, out: null, pingN: 1000, callN: 200, floodN: 10000, floodSize: 100, warmN: 5,
    views: [1, 10, 50], settleMs: 1500, gc: true, sandboxIp: "127.0.0.1", keepConsoleDebug: false,
    chromium: "/usr/bin/chromium", skip: new Set() };
  const num = (v, name) => { const n = Number(v); if (!Number.isInteger(n) || n < 0) throw new Error("bad " + name); return n; };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i];
    const v = () => { if (i + 1 >= argv.length) throw new Error("missing value for " + a); return argv[++i]; };
    switch (a) {
      case "--runs": o.runs = Math.max(1, num(v(), a)); break;
      case "--out": o.out = v(); break;
      case "--ping-n": o.pingN = num(v(), a); break;
      case "--call-n": o.callN = num(v(), a); break;
      case "--flood-n": o.floodN = num(v(), a); break;
      case "--flood-size": o.floodSize = num(v(), a); break;
      case "--warm-n": o.warmN = Math.max(1, num(v(), a)); break;
      case "--views": o.views = v().split(",").map((s) => num(s, a)).sort((x, y) => x - y); break;
      case "--settle-ms": o.settleMs = num(v(), a); break;
      case "--no-gc": o.gc = false; break;
      case "--sandbox-ip": o.sandboxIp = v(); break;
      case "--keep-console-debug": o.keepConsoleDebug = true; break;
      case "--chromium": o.chromium = v(); break;
      case "--skip": for (const s of v().split(",")) o.skip.add(s.trim()); break;
      case "-h": case "--help": console.log(usage()); process.exit(0); break;
      default: throw new Error("unknown option " + a + "\n" + usage());
    }
  }
  return o;
}

// --- statistics: table.mjs ----------------------------------------------------

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- BENCH reports from the MCP server's stderr --------------------------------

const reports = [];      // unclaimed reports
const reportWaiters = []; // {mode, resolve}
function onServerLine(line) {
  if (!line.startsWith("BENCH ")) {
    if (/error/i.test(line)) console.error("[bench-server] " + line);
    return;
  }
  let rep;
  try { rep = JSON.parse(line.slice(6)); } catch { return; }
  const w = reportWaiters.findIndex((x) => x.mode === rep.mode);
  if (w >= 0) reportWaiters.splice(w, 1)[0].resolve(rep);
  else reports.push(rep);
}
function nextReport(mode, timeoutMs = 180000) {
  const i = reports.findIndex((r) => r.mode === mode);
  if (i >= 0) return Promise.resolve(reports.splice(i, 1)[0]);
  return new Promise((resolve, reject) => {
    const entry = { mode, resolve: (r) => { clearTimeout(timer); resolve(r); } };
    const timer = setTimeout(() => {
      reportWaiters.splice(reportWaiters.indexOf(entry), 1);
      reject(new Error(`no BENCH report for mode ${mode} within ${timeoutMs} ms`));
    }, timeoutMs);
    reportWaiters.push(entry);
  });
}
function checkReport(rep) {
  if (rep.error) throw new Error(`View reported an error in mode ${rep.mode}: ${rep.error}`);
  return rep;
}

// --- server start time --------------------------------------------------------

const INIT_REQUEST = { jsonrpc: "2.0", id: 1, method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } } };

function waitExit(child) {
  return new Promise((r) => { if (child.exitCode !== null || child.signalCode) r(); else child.once("exit", r); });
}

// stdio: spawn -> initialize written at once -> its response line on stdout.
async function serverStartStdio() {
  const t0 = performance.now();
  const child = spawn(process.execPath, [BENCH_SERVER], { stdio: ["pipe", "pipe", "ignore"] });
  child.stdin.write(JSON.stringify(INIT_REQUEST) + "\n");
  const ms = await new Promise((resolve, reject) => {
    let buf = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (d) => {
      buf += d;
      if (buf.includes("\n") && buf.includes('"id":1')) resolve(performance.now() - t0);
    });
    child.once("exit", (c) => reject(new Error("bench-server (stdio) exited with " + c)));
  });
  child.kill();
  await waitExit(child);
  return ms;
}

// HTTP: spawn -> "listening" on stderr -> POST initialize -> complete response.
async function serverStartHttp() {
  const t0 = performance.now();
  const child = spawn(process.execPath, [BENCH_SERVER, "--http", "0"], { stdio: ["ignore", "ignore", "pipe"] });
  const url = await new Promise((resolve, reject) => {
    let buf = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (d) => { buf += d; const m = buf.match(/listening (http:\S+)/); if (m) resolve(m[1]); });
    child.once("exit", (c) => reject(new Error("bench-server (http) exited with " + c)));
  });
  const body = JSON.stringify(INIT_REQUEST);
  await new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", headers: { "content-type": "application/json",
      accept: "application/json, text/event-stream", "content-length": Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on("end", resolve);
    });
    req.on("error", reject);
    req.end(body);
  });
  const ms = performance.now() - t0;
  child.kill();
  await waitExit(child);
  return ms;
}

// --- Chromium processes and memory -------------------------------------------------

function readProcs() {
  const procs = new Map(); // pid -> {ppid, cmdline}
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      // Chromium children rewrite their title, so split on spaces as well as NULs.
      const cmdline = fs.readFileSync(`/proc/${d}/cmdline`, "utf8").split(/[\0 ]+/).filter(Boolean);
      procs.set(Number(d), { ppid, cmdline });
    } catch { /* process went away */ }
  }
  return procs;
}

// The browser process is the one started with our unique --user-data-dir and no --type=.
function findBrowserPid(userDataDir) {
  for (const [pid, p] of readProcs()) {
    if (p.cmdline.includes(`--user-data-dir=${userDataDir}`) && !p.cmdline.some((a) => a.startsWith("--type="))) return pid;
  }
  throw new Error("Chromium browser process not found");
}

// PSS (kB) of the browser process and all its descendants, from /proc/<pid>/smaps_rollup.
function chromiumPss(browserPid) {
  const procs = readProcs();
  const tree = [browserPid];
  for (let i = 0; i < tree.length; i++) {
    for (const [pid, p] of procs) if (p.ppid === tree[i]) tree.push(pid);
  }
  let totalKb = 0;
  const byType = {};
  for (const pid of tree) {
    let kb = 0;
    try {
      const m = fs.readFileSync(`/proc/${pid}/smaps_rollup`, "utf8").match(/^Pss:\s+(\d+) kB/m);
      kb = m ? Number(m[1]) : 0;
    } catch { continue; }
    const type = (procs.get(pid)?.cmdline.find((a) => a.startsWith("--type=")) ?? "--type=browser").slice(7);
    byType[type] = byType[type] ?? { count: 0, pssKb: 0 };
    byType[type].count++;
    byType[type].pssKb += kb;
    totalKb += kb;
  }
  return { totalKb, processes: tree.length, byType };
}

// Force a full V8 GC in the page and in every out-of-process frame.
async function collectGarbage(page) {
  const targets = [page, ...page.frames().slice(1)];
  for (const t of targets) {
    let session;
    try { session = await page.context().newCDPSession(t); } catch { continue; } // in-process frame
    try { await session.send("HeapProfiler.collectGarbage"); } catch { /* ignore */ }
    await session.detach().catch(() => {});
  }
}

// --- one page of the reference host -------------------------------------------------

async function newHostPage(browser, opts, hostUrl, query = "") {
  const context = await browser.newContext();
  if (!opts.keepConsoleDebug) {
    // PostMessageTransport logs every message with console.debug; with the
    // DevTools protocol attached, each call becomes a CDP event to this driver.
    await context.addInitScript(() => { console.debug = () => {}; });
  }
  const tNewPageWall = Date.now();
  const page = await context.newPage();
  page.on("pageerror", (e) => console.error("[page error] " + e.message));
  page.on("console", (m) => { if (m.type() === "error") console.error("[page console] " + m.text()); });
  await page.goto(hostUrl + query);
  return { context, page, tNewPageWall };
}

async function openAndWait(page, args, keepOpen = false) {
  const r = await page.evaluate(([a, k]) => window.benchHost.openView(a, { keepOpen: k }), [args, keepOpen]);
  const rep = checkReport(await nextReport(args.mode));
  if (!keepOpen) await page.evaluate((id) => window.benchHost.waitClosed(id), r.id);
  return { r, rep };
}

// --- main ------------------------------------------------------------------------------

async function main() {
  const opts = parseArgs(process.argv);
  const skip = (name) => opts.skip.has(name);
  const fig = {}; // figure name -> {unit, runs: []}
  const raw = {};
  const add = (name, unit, value) => { (fig[name] ??= { unit, runs: [] }).runs.push(value); };
  const addRaw = (name, value) => { (raw[name] ??= []).push(value); };
  const loadBefore = os.loadavg();
  const started = new Date().toISOString();

  const servers = await startServers({ sandboxIp: opts.sandboxIp, onStderrLine: onServerLine });
  const hostUrl = `${servers.hostOrigin}/host.html`;
  console.error(`host ${servers.hostOrigin}  sandbox ${servers.sandboxOrigin}  mcp ${servers.mcpUrl}`);

  // (0) server start time, separately from the browser.
  if (!skip("server")) {
    for (let r = 0; r < opts.runs; r++) {
      add("server.startStdioMs", "ms", await serverStartStdio());
      add("server.startHttpMs", "ms", await serverStartHttp());
    }
  }

  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "web-reference-chromium-"));
  const browser = await chromium.launch({
    executablePath: opts.chromium,
    ignoreDefaultArgs: true, // exactly our flags, not Playwright's defaults
    args: [...FLAGS, `--user-data-dir=${userDataDir}`, "--remote-debugging-pipe", "--no-startup-window"],
  });
  const browserPid = findBrowserPid(userDataDir);
  const browserVersion = browser.version();
  console.error(`chromium ${browserVersion} pid ${browserPid}`);

  try {
    for (let run = 0; run < opts.runs; run++) {
      console.error(`run ${run + 1}/${opts.runs}`);
      // (1) cold start: fresh context and page; host.html?open= opens the first View.
      const idle = encodeURIComponent(JSON.stringify({ mode: "idle" }));
      const { context, page, tNewPageWall } = await newHostPage(browser, opts, hostUrl, `?open=${idle}`);
      const first = await page.evaluate(() => window.benchHost.first);
      checkReport(await nextReport("idle"));
      await page.evaluate((id) => window.benchHost.waitClosed(id), first.id);
      if (!skip("cold")) {
        add("cold.initMs", "ms", first.tInitMs);
        add("cold.resultMs", "ms", first.tResultMs);
        add("cold.modulesLoadedMs", "ms", first.tModuleMs);
        add("cold.mcpConnectedMs", "ms", first.tConnectedMs);
        add("cold.openToInitMs", "ms", first.initMs);
        add("cold.fromNewPageInitMs", "ms", first.timeOrigin + first.tInitMs - tNewPageWall);
        addRaw("cold", first);
      }

      // (2) warm open: one more View in the running page.
      if (!skip("warm")) {
        const inits = [], results = [];
        for (let k = 0; k < opts.warmN; k++) {
          const { r } = await openAndWait(page, { mode: "idle" });
          inits.push(r.initMs);
          results.push(r.resultMs);
        }
        add("warm.initMs", "ms", median(inits));
        add("warm.resultMs", "ms", median(results));
        addRaw("warm.initMs", inits);
        addRaw("warm.resultMs", results);
      }

      // (3) sequential pings View -> host.
      if (!skip("ping")) {
        const { rep } = await openAndWait(page, { mode: "ping", n: opts.pingN });
        add("ping.medianMs", "ms", median(rep.timingsMs));
        add("ping.p99Ms", "ms", pct(rep.timingsMs, 99));
        addRaw("ping.timingsMs", rep.timingsMs);
        add("ping.rawMedianMs", "ms", median(rep.rawTimingsMs));
        add("ping.rawP99Ms", "ms", pct(rep.rawTimingsMs, 99));
        addRaw("ping.rawTimingsMs", rep.rawTimingsMs);
      }

      // (4) tools/call View -> host -> server, and the same call from the page's client.
      if (!skip("call")) {
        const { rep } = await openAndWait(page, { mode: "call", n: opts.callN });
        const direct = await page.evaluate((n) => window.benchHost.directCalls(n), opts.callN);
        add("call.viewMedianMs", "ms", median(rep.timingsMs));
        add("call.viewP99Ms", "ms", pct(rep.timingsMs, 99));
        add("call.directMedianMs", "ms", median(direct));
        add("call.directP99Ms", "ms", pct(direct, 99));
        add("call.hostOverheadMedianMs", "ms", median(rep.timingsMs) - median(direct));
        addRaw("call.viewTimingsMs", rep.timingsMs);
        addRaw("call.directTimingsMs", direct);
      }

      // (6) flood of log notifications, then pings.
      if (!skip("flood")) {
        const { r, rep } = await openAndWait(page, { mode: "flood", n: opts.floodN, size: opts.floodSize });
        const st = await page.evaluate((id) => window.benchHost.stats(id), r.id);
        const windowMs = st.tLastLogMs - st.tFirstLogMs;
        add("flood.hostMsgsPerSec", "msg/s", windowMs > 0 ? ((st.logCount - 1) * 1000) / windowMs : NaN);
        add("flood.endToEndMsgsPerSec", "msg/s", (opts.floodN * 1000) / rep.totalMs);
        add("flood.viewSendMs", "ms", rep.sendMs);
        add("flood.pingBehindFloodMs", "ms", rep.timingsMs[0]);
        add("flood.pingBeforeMedianMs", "ms", median(rep.pingsBeforeMs));
        add("flood.pingAfterMedianMs", "ms", median(rep.pingsAfterMs));
        add("flood.pingAfterOverBefore", "ratio", median(rep.pingsAfterMs) / median(rep.pingsBeforeMs));
        add("flood.lostMessages", "count", opts.floodN - st.logCount);
        addRaw("flood", { host: st, view: rep });
      }
      await context.close();

      // (5) memory with 1, 10, 50 Views open (fresh page; Views kept open).
      if (!skip("memory")) {
        const m = await newHostPage(browser, opts, hostUrl);
        await m.page.evaluate(() => window.benchHost.ready);
        const measure = async () => {
          if (opts.gc) await collectGarbage(m.page);
          await sleep(opts.settleMs);
          return chromiumPss(browserPid);
        };
        const levels = { 0: await measure() };
        add("memory.pss0ViewsMB", "MB", levels[0].totalKb / 1024);
        let open = 0;
        for (const level of opts.views) {
          for (; open < level; open++) await openAndWait(m.page, { mode: "idle", keepOpen: true }, true);
          levels[level] = await measure();
          add(`memory.pss${level}ViewsMB`, "MB", levels[level].totalKb / 1024);
        }
        const lo = opts.views[0], hi = opts.views[opts.views.length - 1];
        if (hi > lo) add("memory.perExtraViewMB", "MB", (levels[hi].totalKb - levels[lo].totalKb) / 1024 / (hi - lo));
        addRaw("memory", levels);
        await m.context.close();
      }
    }
  } finally {
    await browser.close().catch(() => {});
    await servers.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }

  // --- report ---
  const figures = {};
  for (const [name, f] of Object.entries(fig)) figures[name] = { unit: f.unit, ...summary(f.runs), runs: f.runs };
  const pkg = (name) => JSON.parse(fs.readFileSync(path.join(HERE, "node_modules", name, "package.json"), "utf8")).version;
  const meta = {
    started,
    finished: new Date().toISOString(),
    options: { ...opts, skip: [...opts.skip] },
    chromium: browserVersion,
    chromiumFlags: FLAGS,
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    loadavgBefore: loadBefore,
    loadavgAfter: os.loadavg(),
    sandboxSameSite: opts.sandboxIp === "127.0.0.1",
    versions: {
      "@modelcontextprotocol/ext-apps": pkg("@modelcontextprotocol/ext-apps"),
      "@modelcontextprotocol/client": pkg("@modelcontextprotocol/client"),
      "@modelcontextprotocol/core": pkg("@modelcontextprotocol/core"),
      "playwright-core": pkg("playwright-core"),
      zod: pkg("zod"),
    },
  };

  const rows = Object.entries(figures).map(([name, f]) => [name, f.unit, fmt(f.min), fmt(f.median), fmt(f.max)]);
  console.log(`web reference host, ${opts.runs} runs, Chromium ${browserVersion}, ${meta.cpus} CPUs, load ${loadBefore.map((x) => x.toFixed(1)).join(" ")}`);
  console.log(formatTable(["figure", "unit", "min", "median", "max"], rows));

  if (opts.out) {
    fs.writeFileSync(opts.out, JSON.stringify({ meta, figures, raw }, null, 1) + "\n");
    console.error("wrote " + opts.out);
  }
}

main().catch((e) => { console.error(e && e.stack ? e.stack : e); process.exit(1); });
