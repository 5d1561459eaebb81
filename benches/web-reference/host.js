// host.js: the reference web host (origin A).
//
// MCP TypeScript SDK client (Streamable HTTP) + the official AppBridge with
// PostMessageTransport, one sandbox proxy iframe (origin B) per View. AppBridge
// is given the client, so it forwards the View's tools/call, resources/* etc. to
// the server by itself (SDK auto-forwarding).
//
// Timestamps are performance.now() of this page, i.e. milliseconds since the
// navigation started. The driver (bench.mjs) uses window.benchHost:
//   benchHost.ready                -> Promise<{tModuleMs, tConnectedMs}>
//   benchHost.first                -> Promise<openView result> when the URL has ?open=<json args>
//   benchHost.openView(args, {keepOpen}) -> Promise<{id, t0Ms, tInitMs, tResultMs, initMs, resultMs}>
//   benchHost.waitClosed(id), benchHost.closeView(id), benchHost.stats(id), benchHost.viewCount()
//   benchHost.directCalls(n)       -> Promise<number[]> (tools/call from this page's client)

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  AppBridge,
  PostMessageTransport,
  buildAllowAttribute,
  getToolUiResourceUri,
  RESOURCE_MIME_TYPE,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const tModuleMs = performance.now(); // all modules loaded and evaluated
const cfg = window.benchConfig;
const query = new URLSearchParams(location.search);
const HOST_INFO = { name: "web-reference-host", version: "1.0.0" };
const logEl = document.getElementById("log");

// ---------------------------------------------------------------------------
// MCP client: initialize (advertising MCP Apps support), then tools/list.
// ---------------------------------------------------------------------------
const client = new Client(HOST_INFO, {
  capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: [RESOURCE_MIME_TYPE] } } },
});
const tools = new Map();
let tConnectedMs = null;
const ready = (async () => {
  await client.connect(new StreamableHTTPClientTransport(new URL(cfg.mcpUrl)));
  const { tools: list } = await client.listTools();
  for (const t of list) tools.set(t.name, t);
  tConnectedMs = performance.now();
  logEl.textContent = `connected, ${tools.size} tools`;
  return { tModuleMs, tConnectedMs };
})();

// ---------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------
let nextId = 1;
const views = new Map(); // id -> view record

function decodeHtml(content) {
  if (typeof content.text === "string") return content.text;
  const bytes = Uint8Array.from(atob(content.blob), (c) => c.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

async function openView(args, { toolName = "bench-view", keepOpen = false } = {}) {
  const t0Ms = performance.now();
  await ready;
  const tool = tools.get(toolName);
  if (!tool) throw new Error("unknown tool " + toolName);
  const uri = getToolUiResourceUri(tool);
  if (!uri) throw new Error(toolName + " has no UI");

  // The tool call and the UI resource read go out in parallel.
  const callP = client.callTool({ name: toolName, arguments: args });
  callP.catch(() => {}); // awaited below
  const res = await client.readResource({ uri });
  const content = res.contents?.[0];
  if (res.contents?.length !== 1 || content.mimeType !== RESOURCE_MIME_TYPE) throw new Error("bad UI resource " + uri);
  const html = decodeHtml(content);
  const ui = content._meta?.ui ?? {};

  const v = { id: nextId++, t0Ms, tInitMs: null, tResultMs: null, logCount: 0, tFirstLogMs: null, tLastLogMs: null, closing: false, open: true };
  v.closed = new Promise((r) => { v.resolveClosed = r; });
  views.set(v.id, v);

  // Outer iframe: the sandbox proxy on origin B. The View's CSP goes into the
  // proxy URL; the proxy's server turns it into a response header.
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  const allow = buildAllowAttribute(ui.permissions);
  if (allow) iframe.setAttribute("allow", allow);
  iframe.src = `${cfg.sandboxOrigin}/sandbox.html` + (ui.csp ? `?csp=${encodeURIComponent(JSON.stringify(ui.csp))}` : "");
  v.iframe = iframe;

  const bridge = new AppBridge(client, HOST_INFO, { openLinks: {}, serverTools: {}, serverResources: {}, logging: {} }, {
    hostContext: {
      theme: "light",
      platform: "web",
      displayMode: "inline",
      availableDisplayModes: ["inline"],
      containerDimensions: { width: 480, maxHeight: 600 },
      locale: navigator.language,
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      userAgent: "web-reference-host/1.0.0",
      toolInfo: { tool },
    },
  });
  v.bridge = bridge;

  // All handlers before connect().
  let sandboxReady;
  const sandboxReadyP = new Promise((r) => { sandboxReady = r; }); // resolves once; later calls are no-ops
  let initialized;
  const initializedP = new Promise((r) => { initialized = r; });
  bridge.onsandboxready = () => sandboxReady();
  bridge.oninitialized = () => { if (v.tInitMs === null) v.tInitMs = performance.now(); initialized(); };
  bridge.onloggingmessage = () => {
    const t = performance.now();
    if (v.logCount++ === 0) v.tFirstLogMs = t;
    v.tLastLogMs = t;
  };
  bridge.onsizechange = ({ height }) => { if (typeof height === "number") iframe.style.height = Math.min(height, 600) + "px"; };
  bridge.onrequestteardown = () => { if (!keepOpen) closeView(v.id); };
  bridge.onopenlink = async () => ({ isError: true });
  bridge.onmessage = async () => ({ isError: true });

  document.getElementById("views").appendChild(iframe);
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  await sandboxReadyP;
  await bridge.sendSandboxResourceReady({ html, csp: ui.csp, permissions: ui.permissions });

  // Nothing goes to the View before ui/notifications/initialized.
  await initializedP;
  await bridge.sendToolInput({ arguments: args });
  let result;
  try {
    result = await callP;
  } catch (e) {
    await bridge.sendToolCancelled({ reason: String((e && e.message) || e) });
    throw e;
  }
  await bridge.sendToolResult(result);
  v.tResultMs = performance.now();
  return { id: v.id, t0Ms, tInitMs: v.tInitMs, tResultMs: v.tResultMs, initMs: v.tInitMs - t0Ms, resultMs: v.tResultMs - t0Ms };
}

// Graceful teardown: ui/resource-teardown, wait (max 2 s), then remove.
async function closeView(id) {
  const v = views.get(id);
  if (!v || v.closing) return;
  v.closing = true;
  try {
    await Promise.race([v.bridge.teardownResource({}), new Promise((r) => setTimeout(r, 2000))]);
  } catch { /* the View may be gone already */ }
  await v.bridge.close().catch(() => {});
  v.iframe.remove();
  v.open = false; // the record stays, so stats(id) works after close
  v.resolveClosed(true);
}

// The same tools/call the bridge forwards for a View (client.request), made directly.
async function directCalls(n) {
  await ready;
  const out = [];
  for (let i = 0; i < n; i++) {
    const s = performance.now();
    await client.request({ method: "tools/call", params: { name: "bench-echo", arguments: { i } } });
    out.push(performance.now() - s);
  }
  return out;
}

function stats(id) {
  const v = views.get(id);
  if (!v) return null;
  return { logCount: v.logCount, tFirstLogMs: v.tFirstLogMs, tLastLogMs: v.tLastLogMs, tInitMs: v.tInitMs, tResultMs: v.tResultMs };
}

window.benchHost = {
  ready,
  openView,
  closeView,
  directCalls,
  stats,
  waitClosed: (id) => (views.get(id)?.closed ?? Promise.resolve(true)),
  viewCount: () => [...views.values()].filter((v) => v.open).length,
};

// Cold start: ?open=<json args> opens the first View as soon as possible.
if (query.has("open")) {
  window.benchHost.first = openView(JSON.parse(query.get("open"))).then((r) => ({
    ...r,
    tFirstScriptMs: cfg.tFirstScriptMs,
    tModuleMs,
    tConnectedMs,
    timeOrigin: performance.timeOrigin,
  }));
  window.benchHost.first.catch((e) => { logEl.textContent = "open failed: " + e; });
}
