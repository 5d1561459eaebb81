// The sandbox proxy: the only code between the host shell and a View.
//
// It runs on the per-server sandbox origin (mcp-sandbox://<label>), under the CSP header the host
// built from the View's metadata. It announces itself once, writes the View's HTML into an inner
// frame with document.write (so the View keeps this origin and inherits the CSP header), and relays
// every other message unchanged in both directions. The View can script this document (same
// origin), so the host treats everything from here as untrusted; the checks below keep honest
// traffic honest and stop other frames from talking through us.
(function () {
  "use strict";

  var HOST_ORIGIN = "mcp-host://app";
  var READY = "ui/notifications/sandbox-proxy-ready";
  var RESOURCE_READY = "ui/notifications/sandbox-resource-ready";

  // Check: a proxy is only meaningful inside the host shell.
  if (window.self === window.top || window.parent !== window.top) {
    document.body.textContent = "This page only runs inside mcp-apps-host.";
    return;
  }

  var inner = null;

  // The frames follow the host's theme (read from traffic the proxy relays anyway), so a View
  // with `color-scheme` gets the matching canvas instead of an opaque mismatch.
  function followTheme(data) {
    var ctx = data && (data.method === "ui/notifications/host-context-changed" ? data.params
      : data.result && data.result.hostContext);
    var theme = ctx && ctx.theme;
    if (theme !== "light" && theme !== "dark") return;
    document.documentElement.style.colorScheme = theme;
    if (inner) inner.style.colorScheme = theme;
  }

  function allowAttribute(permissions) {
    var p = permissions || {};
    var features = [];
    if (p.camera) features.push("camera");
    if (p.microphone) features.push("microphone");
    if (p.geolocation) features.push("geolocation");
    if (p.clipboardWrite) features.push("clipboard-write");
    return features.join("; ");
  }

  function loadView(params) {
    if (inner || !params || typeof params.html !== "string") return;
    inner = document.createElement("iframe");
    // Attributes are set before insertion: `sandbox` and `allow` only apply to later loads.
    inner.setAttribute("sandbox", typeof params.sandbox === "string" ? params.sandbox : "allow-scripts allow-same-origin allow-forms");
    var allow = allowAttribute(params.permissions);
    if (allow) inner.setAttribute("allow", allow);
    inner.setAttribute("title", "MCP App");
    document.body.appendChild(inner);
    var doc = inner.contentDocument;
    doc.open();
    watch(inner.contentWindow);
    doc.write(params.html);
    doc.close();
  }

  // Diagnostics for the host's log, `check` and the developer panel: CSP violations, uncaught
  // errors and console errors of the View. They are not JSON-RPC and never reach the bridge as
  // protocol; like everything from this origin they are the View's own word, used only to report
  // on the View itself.
  function report(kind, detail) {
    try {
      window.parent.postMessage({ mcpHostDiagnostic: { kind: kind, detail: detail } }, HOST_ORIGIN);
    } catch (e) { /* nothing to do */ }
  }

  function text(value) {
    try { return typeof value === "string" ? value : (value && value.stack) || JSON.stringify(value) || String(value); }
    catch (e) { return String(value); }
  }

  function watch(win) {
    if (!win) return;
    win.addEventListener("securitypolicyviolation", function (e) {
      report("csp", { directive: e.effectiveDirective || e.violatedDirective, blockedURI: e.blockedURI, sourceFile: e.sourceFile, line: e.lineNumber });
    }, true);
    win.addEventListener("error", function (e) {
      if (e.error !== undefined || e.message) report("error", { message: e.message || text(e.error), source: e.filename, line: e.lineno });
    });
    win.addEventListener("unhandledrejection", function (e) {
      report("error", { message: "unhandled rejection: " + text(e.reason) });
    });
    var original = win.console && win.console.error;
    if (typeof original === "function") {
      win.console.error = function () {
        report("console", { message: Array.prototype.map.call(arguments, text).join(" ").slice(0, 2000) });
        return original.apply(this, arguments);
      };
    }
  }

  window.addEventListener("message", function (event) {
    var data = event.data;
    if (event.source === window.parent) {
      // Check: only the host shell's origin may drive the proxy.
      if (event.origin !== HOST_ORIGIN) return;
      if (data && data.method === RESOURCE_READY) {
        loadView(data.params);
        return;
      }
      followTheme(data);
      if (inner && inner.contentWindow) inner.contentWindow.postMessage(data, window.origin);
      return;
    }
    // Check: only our own View frame, on our own origin, may send through us.
    if (inner && event.source === inner.contentWindow && event.origin === window.origin) {
      window.parent.postMessage(data, HOST_ORIGIN);
    }
  });

  window.parent.postMessage({ jsonrpc: "2.0", method: READY, params: {} }, HOST_ORIGIN);
})();
