// The `window.openai` shim: OpenAI Apps SDK widgets on an MCP Apps host.
//
// The sandbox proxy writes this script at the very top of an Apps SDK widget's document (only
// when the host says the View is one: a `text/html+skybridge` resource or a tool linked by
// `_meta["openai/outputTemplate"]`, and the shim is not switched off). It runs in the View's own
// frame, as the View's own code, under the View's CSP, and talks to the host with nothing but the
// View's MCP Apps JSON-RPC over postMessage, exactly like an App built on the MCP Apps SDK. Every
// call it makes is an ordinary View request that the host decides as usual (tool visibility,
// consent, policy), so it adds no capability.
//
// Mapping (also in docs/app-developers.md, "ChatGPT Apps SDK widgets"):
//   handshake                        ui/initialize (appInfo openai-apps-sdk-shim) + ui/notifications/initialized
//   toolInput                        <- ui/notifications/tool-input  params.arguments
//   toolOutput, toolResponseMetadata <- ui/notifications/tool-result params.structuredContent, params._meta
//   theme, displayMode, maxHeight,   <- hostContext (ui/initialize result, host-context-changed)
//   locale, userAgent, safeArea
//   callTool(name, args)             -> tools/call {name, arguments}
//   sendFollowUpMessage({prompt})    -> ui/message {role: "user", content: [text]}
//   openExternal({href})             -> ui/open-link {url}
//   requestDisplayMode({mode})       -> ui/request-display-mode {mode}
//   setWidgetState(state)            -> kept in memory, and ui/update-model-context
//                                       {structuredContent: {widgetState: state}}
//   requestClose()                   -> ui/notifications/request-teardown
//   notifyIntrinsicHeight(height)    -> ui/notifications/size-changed {height}
// Every change of a global fires `openai:set_globals` (a CustomEvent on window with
// `detail.globals` holding the changed globals); each callTool answer fires `openai:tool_response`.
//
// Apps SDK widgets expect toolOutput to be there when their scripts run (ChatGPT renders them
// once the tool is done). So the proxy writes the rest of the View's HTML only after this script
// says it is ready: once the tool result (or its cancellation) has arrived, or after a short wait
// for a slow tool (the globals then arrive later, with `openai:set_globals`).
(function () {
  "use strict";

  if (window.openai) return; // Written twice (a View that reloads itself): the first one stays.

  var PROTOCOL_VERSION = "2026-01-26";
  var READY_WAIT_MS = 1500; // how long the widget's HTML waits for the tool result at most
  var host = window.parent;
  var nextId = 1;
  var pending = {}; // request id -> {resolve, reject}
  var hostCapabilities = {};
  var initialized = false;
  var ready = false;

  // The globals, read directly by widgets (window.openai.toolOutput) or through hooks that
  // listen for `openai:set_globals`.
  var openai = {
    toolInput: {},
    toolOutput: null,
    toolResponseMetadata: null,
    widgetState: null,
    theme: "light",
    displayMode: "inline",
    maxHeight: undefined,
    locale: navigator.language || "en-US",
    userAgent: { device: { type: "desktop" }, capabilities: { hover: true, touch: false } },
    safeArea: { insets: { top: 0, right: 0, bottom: 0, left: 0 } }
  };

  function post(message) {
    host.postMessage(message, "*");
  }

  function request(method, params) {
    var id = "openai-shim-" + nextId++;
    return new Promise(function (resolve, reject) {
      pending[id] = { resolve: resolve, reject: reject };
      post({ jsonrpc: "2.0", id: id, method: method, params: params });
    });
  }

  function notify(method, params) {
    var message = { jsonrpc: "2.0", method: method };
    if (params !== undefined) message.params = params;
    post(message);
  }

  function respond(id, result) {
    post({ jsonrpc: "2.0", id: id, result: result });
  }

  // Sets globals and tells the widget which ones changed.
  function setGlobals(changed) {
    var keys = Object.keys(changed);
    if (keys.length === 0) return;
    keys.forEach(function (k) { openai[k] = changed[k]; });
    window.dispatchEvent(new CustomEvent("openai:set_globals", { detail: { globals: changed } }));
  }

  // MCP Apps host context -> Apps SDK globals (only the fields present in `ctx`).
  function fromHostContext(ctx) {
    var g = {};
    if (!ctx || typeof ctx !== "object") return g;
    if (ctx.theme === "light" || ctx.theme === "dark") g.theme = ctx.theme;
    if (typeof ctx.displayMode === "string") g.displayMode = ctx.displayMode;
    var dims = ctx.containerDimensions;
    if (dims && typeof dims === "object") {
      var h = typeof dims.maxHeight === "number" ? dims.maxHeight : dims.height;
      if (typeof h === "number") g.maxHeight = h;
    }
    if (typeof ctx.locale === "string") g.locale = ctx.locale;
    if (ctx.deviceCapabilities || ctx.platform) {
      var caps = ctx.deviceCapabilities || {};
      g.userAgent = {
        device: { type: ctx.platform === "mobile" ? "mobile" : "desktop" },
        capabilities: { hover: caps.hover !== false, touch: caps.touch === true }
      };
    }
    var insets = ctx.safeAreaInsets;
    if (insets && typeof insets === "object") {
      g.safeArea = { insets: { top: insets.top || 0, right: insets.right || 0, bottom: insets.bottom || 0, left: insets.left || 0 } };
    }
    return g;
  }

  // The widget's HTML may be written now (see the top of this file). Said once.
  function signalReady() {
    if (ready) return;
    ready = true;
    post({ openaiShimReady: true });
  }

  function failure(error) {
    var e = new Error((error && error.message) || "request failed");
    if (error && error.code !== undefined) e.code = error.code;
    return e;
  }

  function textOf(result) {
    var content = result && Array.isArray(result.content) ? result.content : [];
    return content.filter(function (b) { return b && b.type === "text"; }).map(function (b) { return b.text; }).join("\n");
  }

  window.addEventListener("message", function (event) {
    // Only the host (through the proxy) speaks to the shim.
    if (event.source !== host) return;
    var m = event.data;
    if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return;
    if (m.id !== undefined && m.method === undefined) {
      var p = pending[m.id];
      if (!p) return; // an answer to the widget's own requests, if it makes any
      delete pending[m.id];
      if (m.error) p.reject(failure(m.error));
      else p.resolve(m.result);
      return;
    }
    var params = m.params || {};
    switch (m.method) {
      case "ui/notifications/tool-input":
        setGlobals({ toolInput: params.arguments || {} });
        break;
      case "ui/notifications/tool-result":
        setGlobals({
          toolOutput: params.structuredContent === undefined ? null : params.structuredContent,
          toolResponseMetadata: params._meta === undefined ? null : params._meta
        });
        signalReady();
        break;
      case "ui/notifications/tool-cancelled":
        signalReady();
        break;
      case "ui/notifications/host-context-changed":
        setGlobals(fromHostContext(params));
        break;
      case "ui/resource-teardown":
      case "ping":
        if (m.id !== undefined) respond(m.id, {});
        break;
      default:
        break;
    }
  });

  function callTool(name, args) {
    var call = request("tools/call", { name: String(name), arguments: args || {} });
    return call.then(function (result) {
      result = result || {};
      // Older Apps SDK typings read `result` (the text); newer ones the CallToolResult itself.
      if (result.result === undefined) result.result = textOf(result);
      window.dispatchEvent(new CustomEvent("openai:tool_response", {
        detail: { tool: { name: String(name), args: args || {} }, response: result }
      }));
      return result;
    });
  }

  function sendFollowUpMessage(options) {
    var prompt = options && typeof options.prompt === "string" ? options.prompt : String(options && options.prompt);
    return request("ui/message", { role: "user", content: [{ type: "text", text: prompt }] }).then(function (r) {
      if (r && r.isError) throw new Error("the host did not send the message" + (r.message ? ": " + r.message : ""));
    });
  }

  function setWidgetState(state) {
    openai.widgetState = state === undefined ? null : state;
    window.dispatchEvent(new CustomEvent("openai:set_globals", { detail: { globals: { widgetState: openai.widgetState } } }));
    if (!hostCapabilities.updateModelContext) return Promise.resolve();
    // The model sees the widget state (as in ChatGPT): it becomes the View's model context.
    // null clears it (an empty update).
    var params = openai.widgetState === null ? {} : { structuredContent: { widgetState: openai.widgetState } };
    return request("ui/update-model-context", params).then(function () {});
  }

  function unsupported(name) {
    return function () {
      return Promise.reject(new Error("window.openai." + name + " is not supported by this host"));
    };
  }

  openai.callTool = callTool;
  openai.sendFollowUpMessage = sendFollowUpMessage;
  openai.sendFollowupTurn = sendFollowUpMessage; // the name in earlier Apps SDK docs
  // The host's refusal is the widget's error, as in ChatGPT: a link the host did not open is
  // never reported as opened.
  openai.openExternal = function (options) {
    return request("ui/open-link", { url: String(options && options.href) }).then(function (r) {
      if (r && r.isError) throw new Error("the host did not open the link" + (r.message ? ": " + r.message : ""));
    });
  };
  openai.requestDisplayMode = function (options) {
    return request("ui/request-display-mode", { mode: options && options.mode }).then(function (r) {
      return { mode: (r && r.mode) || openai.displayMode };
    });
  };
  openai.setWidgetState = setWidgetState;
  openai.requestClose = function () { notify("ui/notifications/request-teardown", {}); };
  openai.notifyIntrinsicHeight = function (height) {
    if (typeof height === "number" && height >= 0) notify("ui/notifications/size-changed", { height: height });
  };
  openai.uploadFile = unsupported("uploadFile");
  openai.getFileDownloadUrl = unsupported("getFileDownloadUrl");
  openai.requestModal = unsupported("requestModal");
  window.openai = openai;

  // Self-sizing, as ChatGPT sizes its widget frames: the document's height, when it changes.
  var lastHeight = -1;
  function reportSize() {
    if (!initialized || !document.documentElement) return;
    var height = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (height === lastHeight) return;
    lastHeight = height;
    notify("ui/notifications/size-changed", { height: height });
  }

  request("ui/initialize", {
    appInfo: { name: "openai-apps-sdk-shim", version: "1.0.0" },
    appCapabilities: { availableDisplayModes: ["inline", "fullscreen", "pip"] },
    protocolVersion: PROTOCOL_VERSION
  }).then(function (result) {
    hostCapabilities = (result && result.hostCapabilities) || {};
    setGlobals(fromHostContext(result && result.hostContext));
    initialized = true;
    notify("ui/notifications/initialized");
    if (typeof ResizeObserver === "function" && document.documentElement) {
      new ResizeObserver(reportSize).observe(document.documentElement);
    }
    window.addEventListener("load", reportSize);
  }, function () {
    signalReady(); // no host to speak to: the widget still renders, without data
  });

  setTimeout(signalReady, READY_WAIT_MS);
})();
