#!/usr/bin/env node
// serve.mjs: the reference web host's servers, all on loopback.
//
//   origin A  http://127.0.0.1:<hostPort>     host.html, host.js and the browser
//                                             ESM files of the SDKs (/node_modules/...)
//   origin B  http://127.0.0.1:<sandboxPort>  sandbox.html (CSP response header built
//                                             from ?csp=...) and sandbox.js
//   MCP       http://127.0.0.1:<port>/mcp     tests/fixtures/bench-server.mjs --http <port>,
//                                             started as a child process
//
// Origins A and B differ by port only, so they are the same *site* (ports do not
// make a site) and Chromium keeps the proxy and the View in the host page's
// renderer process. With sandboxIp "127.0.0.2" origin B is another site, and
// Chromium moves proxy and View to an out-of-process iframe, as on a web host
// with its own sandbox domain.
//
// Used as a module by bench.mjs (startServers) or run directly for manual use:
//   node serve.mjs [--host-port N] [--sandbox-port N] [--sandbox-ip 127.0.0.1]

import { createServer } from "node:http";
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import path from "node:path";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const BENCH_SERVER = path.resolve(HERE, "../../tests/fixtures/bench-server.mjs");

const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8", ".json": "application/json" };
// Only these packages are served to the browser (the host page's import map).
const SERVED_PACKAGES = ["@modelcontextprotocol/", "zod/", "eventsource/", "eventsource-parser/", "pkce-challenge/", "jose/", "@standard-schema/"];

// --- CSP (spec "Security Implications" formula) -----------------------------

// A declared domain must be a plain origin-like source; anything that could add
// a directive, a keyword or a second source (; , ' " whitespace) is dropped.
function cleanDomains(list) {
  if (!Array.isArray(list)) return [];
  return list.filter((d) => typeof d === "string" && /^[a-z][a-z0-9+.-]*:\/\/[^\s;,'"]+$/i.test(d));
}

// Builds the Content-Security-Policy header value for the View from the
// resource's _meta.ui.csp. No metadata -> the spec's restrictive default.
export function buildCsp(csp) {
  if (!csp || typeof csp !== "object") {
    return ["default-src 'none'", "script-src 'self' 'unsafe-inline'", "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:", "media-src 'self' data:", "connect-src 'none'", "frame-src 'none'",
      "object-src 'none'", "base-uri 'self'"].join("; ");
  }
  const res = cleanDomains(csp.resourceDomains).join(" ");
  const con = cleanDomains(csp.connectDomains).join(" ");
  const frames = cleanDomains(csp.frameDomains);
  const bases = cleanDomains(csp.baseUriDomains);
  const dir = (name, ...parts) => [name, ...parts].filter(Boolean).join(" ");
  return [
    "default-src 'none'",
    dir("script-src", "'self' 'unsafe-inline'", res),
    dir("style-src", "'self' 'unsafe-inline'", res),
    dir("connect-src", "'self'", con),
    dir("img-src", "'self' data:", res),
    dir("font-src", "'self'", res),
    dir("media-src", "'self' data:", res),
    dir("frame-src", frames.length ? frames.join(" ") : "'none'"),
    "object-src 'none'",
    dir("base-uri", bases.length ? bases.join(" ") : "'self'"),
  ].join("; ");
}

// --- static servers ----------------------------------------------------------

function listen(server, ip, port) {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, ip, () => resolve(server.address().port));
  });
}

const fileCache = new Map(); // path -> Buffer; the files do not change during a run

async function sendFile(res, file, replacements = {}, extraHeaders = {}) {
  let body = fileCache.get(file);
  if (!body) {
    try { body = await readFile(file); } catch { res.writeHead(404); res.end("not found"); return; }
    fileCache.set(file, body);
  }
  if (Object.keys(replacements).length) {
    let text = body.toString("utf8");
    for (const [k, v] of Object.entries(replacements)) text = text.split(k).join(v);
    body = Buffer.from(text);
  }
  res.writeHead(200, { "content-type": TYPES[path.extname(file)] ?? "application/octet-stream", ...extraHeaders });
  res.end(body);
}

// Starts the MCP server child (HTTP mode, ephemeral port) and resolves with its URL.
// onStderrLine receives every stderr line (the BENCH reports among them).
export function startMcpServer(onStderrLine = () => {}) {
  const child = spawn(process.execPath, [BENCH_SERVER, "--http", "0"], { stdio: ["ignore", "ignore", "pipe"] });
  return new Promise((resolve, reject) => {
    let buf = "";
    child.once("exit", (code) => reject(new Error("bench-server exited early with code " + code)));
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      buf += chunk;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const m = line.match(/^bench-server listening (http:\S+)/);
        if (m) resolve({ child, url: m[1] });
        onStderrLine(line);
      }
    });
  });
}

export async function startServers({ hostPort = 0, sandboxPort = 0, sandboxIp = "127.0.0.1", onStderrLine } = {}) {
  const mcp = await startMcpServer(onStderrLine);
  let hostOrigin, sandboxOrigin;

  // Origin A: the host page and its modules.
  const hostServer = createServer({ noDelay: true }, (req, res) => {
    const url = new URL(req.url, "http://x");
    const p = decodeURIComponent(url.pathname);
    const noCache = { "cache-control": "no-store" };
    if (p === "/" || p === "/host.html") {
      return sendFile(res, path.join(HERE, "host.html"), { __SANDBOX_ORIGIN__: sandboxOrigin, __MCP_URL__: mcp.url }, noCache);
    }
    if (p === "/host.js") return sendFile(res, path.join(HERE, "host.js"), {}, noCache);
    if (p === "/favicon.ico") { res.writeHead(204); res.end(); return; }
    if (p.startsWith("/node_modules/") && !p.includes("..")) {
      const rel = p.slice("/node_modules/".length);
      if (SERVED_PACKAGES.some((pkg) => rel.startsWith(pkg))) return sendFile(res, path.join(HERE, "node_modules", rel));
    }
    res.writeHead(404);
    res.end("not found");
  });

  // Origin B: the sandbox proxy, with the View's CSP as a response header.
  const sandboxServer = createServer({ noDelay: true }, (req, res) => {
    const url = new URL(req.url, "http://x");
    const noCache = { "cache-control": "no-cache, no-store, must-revalidate", pragma: "no-cache", expires: "0" };
    if (url.pathname === "/sandbox.html") {
      let csp = null;
      const raw = url.searchParams.get("csp");
      if (raw) { try { csp = JSON.parse(raw); } catch { csp = null; } }
      return sendFile(res, path.join(HERE, "sandbox.html"), {}, { ...noCache, "content-security-policy": buildCsp(csp) });
    }
    if (url.pathname === "/sandbox.js") return sendFile(res, path.join(HERE, "sandbox.js"), { __HOST_ORIGIN__: hostOrigin }, noCache);
    res.writeHead(404);
    res.end("not found");
  });

  hostOrigin = `http://127.0.0.1:${await listen(hostServer, "127.0.0.1", hostPort)}`;
  sandboxOrigin = `http://${sandboxIp}:${await listen(sandboxServer, sandboxIp, sandboxPort)}`;

  return {
    hostOrigin,
    sandboxOrigin,
    mcpUrl: mcp.url,
    mcpChild: mcp.child,
    async close() {
      mcp.child.removeAllListeners("exit");
      mcp.child.kill();
      hostServer.closeAllConnections();
      sandboxServer.closeAllConnections();
      await Promise.all([new Promise((r) => hostServer.close(r)), new Promise((r) => sandboxServer.close(r))]);
    },
  };
}

// Standalone: node serve.mjs [--host-port N] [--sandbox-port N] [--sandbox-ip IP]
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name, def) => { const i = process.argv.indexOf(name); return i >= 0 ? process.argv[i + 1] : def; };
  const s = await startServers({
    hostPort: Number(arg("--host-port", 0)),
    sandboxPort: Number(arg("--sandbox-port", 0)),
    sandboxIp: arg("--sandbox-ip", "127.0.0.1"),
    onStderrLine: (line) => process.stderr.write(line + "\n"),
  });
  console.log(`host page:  ${s.hostOrigin}/host.html?open=${encodeURIComponent('{"mode":"idle"}')}`);
  console.log(`sandbox:    ${s.sandboxOrigin}/sandbox.html`);
  console.log(`MCP server: ${s.mcpUrl}`);
  const stop = () => s.close().then(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
