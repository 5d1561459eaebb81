// sandbox.js: the sandbox proxy between the host page (origin A) and the View.
// Served by serve.mjs, which replaces __HOST_ORIGIN__ with origin A.
//
// - refuses to run top-level or under any parent other than the host origin;
// - sends ui/notifications/sandbox-proxy-ready to the host once;
// - on ui/notifications/sandbox-resource-ready (accepted once) writes the HTML
//   into an inner iframe with document.write, so the View keeps this origin and
//   this document's CSP;
// - relays every other message unchanged: host -> View and View -> host, with
//   origin and source checks. ui/notifications/sandbox-* is never relayed.
(() => {
  "use strict";
  const EXPECTED_HOST_ORIGIN = "__HOST_ORIGIN__";
  const OWN_ORIGIN = window.location.origin;
  const SANDBOX_PREFIX = "ui/notifications/sandbox-";

  if (window.self === window.top) throw new Error("sandbox proxy must run inside the host's iframe");
  let referrerOrigin = null;
  try { referrerOrigin = new URL(document.referrer).origin; } catch { /* no referrer */ }
  if (referrerOrigin !== EXPECTED_HOST_ORIGIN) throw new Error("sandbox proxy: unexpected embedder " + referrerOrigin);
  // Self-test: the host is cross-origin, so touching window.top must throw.
  try { void window.top.alert; throw new Error("sandbox proxy is same-origin with the host"); }
  catch (e) { if (!(e instanceof DOMException)) throw e; }

  let inner = null; // created when the resource arrives

  function loadView(params) {
    const html = params && params.html;
    if (typeof html !== "string") return;
    inner = document.createElement("iframe");
    // Flags must be set before insertion so the initial document gets them.
    inner.setAttribute("sandbox", typeof params.sandbox === "string" ? params.sandbox : "allow-scripts allow-same-origin allow-forms");
    const allow = permissionsToAllow(params.permissions);
    if (allow) inner.setAttribute("allow", allow);
    document.body.appendChild(inner);
    const doc = inner.contentDocument;
    doc.open();
    doc.write(html);
    doc.close();
  }

  // McpUiResourcePermissions -> iframe `allow` (same mapping as the SDK).
  function permissionsToAllow(p) {
    if (!p || typeof p !== "object") return "";
    const map = { camera: "camera", microphone: "microphone", geolocation: "geolocation", clipboardWrite: "clipboard-write" };
    return Object.keys(map).filter((k) => p[k]).map((k) => map[k]).join("; ");
  }

  const isSandboxMethod = (m) => m && typeof m.method === "string" && m.method.startsWith(SANDBOX_PREFIX);

  window.addEventListener("message", (ev) => {
    if (ev.source === window.parent) {
      if (ev.origin !== EXPECTED_HOST_ORIGIN) return;
      const msg = ev.data;
      if (isSandboxMethod(msg)) {
        if (msg.method === "ui/notifications/sandbox-resource-ready" && !inner) loadView(msg.params);
        return; // consumed, never forwarded
      }
      if (inner && inner.contentWindow) inner.contentWindow.postMessage(msg, "*");
    } else if (inner && ev.source === inner.contentWindow) {
      if (ev.origin !== OWN_ORIGIN) return;
      if (isSandboxMethod(ev.data)) return; // the View may not speak for the proxy
      window.parent.postMessage(ev.data, EXPECTED_HOST_ORIGIN);
    }
  });

  window.parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/sandbox-proxy-ready", params: {} }, EXPECTED_HOST_ORIGIN);
})();
