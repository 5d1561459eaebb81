// A tiny hand-written MCP Apps client for the demo Views (no SDK, no libraries, no network):
// the handshake, requests with ids, notifications, host context, size reports.
(function () {
  "use strict";
  var pending = new Map();
  var nextId = 1;
  var handlers = {};
  var context = {};

  function post(msg) { window.parent.postMessage(msg, "*"); }

  function request(method, params) {
    return new Promise(function (resolve, reject) {
      var id = nextId++;
      pending.set(id, { resolve: resolve, reject: reject });
      post({ jsonrpc: "2.0", id: id, method: method, params: params || {} });
    });
  }

  function applyContext(ctx) {
    Object.assign(context, ctx);
    var root = document.documentElement;
    if (ctx.theme) { root.dataset.theme = ctx.theme; root.style.colorScheme = ctx.theme; }
    var vars = ctx.styles && ctx.styles.variables;
    if (vars) Object.keys(vars).forEach(function (k) { if (vars[k]) root.style.setProperty(k, vars[k]); });
    if (handlers.context) handlers.context(context);
  }

  window.addEventListener("message", function (e) {
    if (e.source !== window.parent) return;
    var m = e.data;
    if (!m || m.jsonrpc !== "2.0") return;
    if (m.id !== undefined && !m.method) {
      var p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.error) p.reject(new Error(m.error.message)); else p.resolve(m.result);
      return;
    }
    switch (m.method) {
      case "ui/notifications/tool-input": if (handlers.input) handlers.input(m.params.arguments || {}); break;
      case "ui/notifications/tool-result": if (handlers.result) handlers.result(m.params); break;
      case "ui/notifications/tool-cancelled": if (handlers.cancelled) handlers.cancelled(m.params.reason); break;
      case "ui/notifications/host-context-changed": applyContext(m.params || {}); break;
      case "ui/resource-teardown": post({ jsonrpc: "2.0", id: m.id, result: {} }); break;
      case "ping": post({ jsonrpc: "2.0", id: m.id, result: {} }); break;
    }
  });

  var lastHeight = 0;
  function reportSize() {
    var h = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (Math.abs(h - lastHeight) > 1) {
      lastHeight = h;
      post({ jsonrpc: "2.0", method: "ui/notifications/size-changed", params: { height: h } });
    }
  }

  window.DemoApp = {
    on: function (name, fn) { handlers[name] = fn; },
    request: request,
    context: function () { return context; },
    callTool: function (name, args) { return request("tools/call", { name: name, arguments: args || {} }); },
    start: function (appInfo, modes) {
      return request("ui/initialize", {
        appInfo: appInfo,
        appCapabilities: { availableDisplayModes: modes || ["inline"] },
        protocolVersion: "2026-01-26"
      }).then(function (result) {
        applyContext(result.hostContext || {});
        post({ jsonrpc: "2.0", method: "ui/notifications/initialized" });
        new ResizeObserver(reportSize).observe(document.documentElement);
        reportSize();
        return result;
      });
    }
  };
})();
