// The sandbox proxy: the only code between the host and a View.
//
// It runs in the one frame of the host's top document (mcp-host://frame) in the View's own
// webview (one per View, one web process per server), on the per-server sandbox origin
// (mcp-sandbox://<label>), under the CSP header the host built from the View's metadata (with a
// `sandbox` directive: no popups, dialogs or navigation). So the frame tree is a web host's: the
// host's top document (another origin), this proxy, the View. It announces itself once, writes
// the View's HTML into an inner frame with document.write (so the View keeps this origin and
// inherits the CSP header) or loads the View's document by URL, and relays every other message
// unchanged in both directions: to the host through window.__mcpProxySend (the line the host's
// init script gave this frame alone), from the host as messages its top document posts here.
// The View can script this document (same origin), so the host treats everything from here as
// the View's word; the checks below keep honest traffic honest and stop other frames from
// talking through us.
(function () {
  "use strict";

  var READY = "ui/notifications/sandbox-proxy-ready";
  var RESOURCE_READY = "ui/notifications/sandbox-resource-ready";

  // The host's top document, the only window whose messages are the host's.
  var FRAME_ORIGIN = "mcp-host://frame";
  // Check: a proxy is only meaningful as the frame of the host's top document in a View's
  // webview (or, in a test topology of the host, as that top page itself).
  var hostSend = window.__mcpProxySend;
  var onTop = window.self === window.top;
  if ((!onTop && window.parent !== window.top) || typeof hostSend !== "function") {
    document.body.textContent = "This page only runs inside mcp-apps-host.";
    return;
  }

  var inner = null;
  // The URL the View's document loads from, when it is loaded by URL.
  var documentUrl = null;
  // An Apps SDK widget's HTML after the shim, written once the shim is ready (see withOpenAiShim).
  var heldHtml = null;
  var shimMode = false;

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

  // The View's document is either loaded by URL (`src`: served by the host on this origin with
  // the View's CSP header; the frame hook hands its window to __mcpProxyAdopt before its scripts
  // run) or written here (`html`: this page was served with the View's CSP, which the written
  // document inherits).
  function ownDocumentUrl(src) {
    try {
      var url = new URL(src, window.location.href);
      return url.protocol === window.location.protocol && url.host === window.location.host
        && url.pathname === "/view.html" ? url.href : null;
    } catch (e) {
      return null;
    }
  }

  function loadView(params) {
    if (inner || !params) return;
    var src = typeof params.src === "string" ? ownDocumentUrl(params.src) : null;
    if (!src && typeof params.html !== "string") return;
    inner = document.createElement("iframe");
    // Attributes are set before insertion: `sandbox` and `allow` only apply to later loads.
    inner.setAttribute("sandbox", typeof params.sandbox === "string" ? params.sandbox : "allow-scripts allow-same-origin allow-forms");
    var allow = allowAttribute(params.permissions);
    if (allow) inner.setAttribute("allow", allow);
    inner.setAttribute("title", "MCP App");
    if (src) {
      documentUrl = src;
      inner.src = src;
      document.body.appendChild(inner);
      return;
    }
    document.body.appendChild(inner);
    var doc = inner.contentDocument;
    doc.open();
    watch(inner.contentWindow);
    if (params.openaiShim === true) {
      withOpenAiShim(doc, params.html);
      return;
    }
    doc.write(params.html);
    doc.close();
  }

  // An OpenAI Apps SDK widget (the host says so with `openaiShim: true`) gets `window.openai`
  // from openai-shim.js: a script of this sandbox origin, written at the very top of the View's
  // document, before any of the View's own scripts. It is the View's own code in the View's own
  // realm, allowed by the View's CSP like its other same-origin scripts (`script-src 'self'`),
  // and it talks to the host only with the View's MCP Apps messages, so it adds no capability.
  // A leading doctype stays first (anything before it would switch the document to quirks mode),
  // and nothing adds a line, so diagnostics keep the line numbers of the View's HTML.
  //
  // Apps SDK widgets read `window.openai.toolOutput` when their scripts run, so the rest of the
  // HTML is held back until the shim says it is ready (it has the tool result, or gave up waiting
  // for a slow tool); if the shim never says so, it is written after a few seconds anyway. The
  // signal is the View's own word about when its own HTML is written: it grants nothing.
  function withOpenAiShim(doc, html) {
    var src = new URL("openai-shim.js", window.location.href).href;
    var tag = '<script src="' + src.replace(/"/g, "&quot;") + '"></script>';
    var doctype = /^\uFEFF?\s*<!doctype[^>]*>/i.exec(html);
    var head = doctype ? doctype[0] : "";
    shimMode = true;
    heldHtml = html.slice(head.length);
    doc.write(head + tag);
    setTimeout(writeHeldHtml, 4000);
  }

  function writeHeldHtml() {
    if (heldHtml === null || !inner) return;
    var rest = heldHtml;
    heldHtml = null;
    var doc = inner.contentDocument;
    doc.write(rest);
    doc.close();
  }

  // Diagnostics for the host's log, `check` and the developer panel: CSP violations, uncaught
  // errors and console messages of the View. They are not JSON-RPC and never reach the bridge as
  // protocol; like everything from this origin they are the View's own word, used only to report
  // on the View itself.
  //
  // Each crossing to the host costs the View's process and the host's UI thread about what a
  // View message costs, and an App that logs each of its messages (the App SDK logs two lines per
  // round trip) would pay it twice per message. So console chatter (log, info, debug) that
  // follows another diagnostic within DIAGNOSTIC_QUIET_MS waits, at most DIAGNOSTIC_WAIT_MS,
  // and crosses with the others that came meanwhile, as one JSON array. A line after a quiet
  // spell crosses at once (the last words of a View that then hangs are not held back), and so
  // does every warning, error and CSP violation, with whatever waited before it.
  var DIAGNOSTIC_QUIET_MS = 50;
  var DIAGNOSTIC_WAIT_MS = 16;
  var DIAGNOSTIC_BATCH_BYTES = 48 * 1024; // under the host's bounds for one diagnostic line
  var DIAGNOSTIC_BATCH_COUNT = 200;
  var waitingDiagnostics = [];
  var waitingDiagnosticBytes = 0;
  var diagnosticTimer = null;
  var lastDiagnosticSent = -Infinity;
  function sendDiagnostics() {
    if (diagnosticTimer !== null) { clearTimeout(diagnosticTimer); diagnosticTimer = null; }
    try {
      if (waitingDiagnostics.length === 1) hostSend("d", waitingDiagnostics[0]);
      else if (waitingDiagnostics.length > 1) hostSend("D", "[" + waitingDiagnostics.join(",") + "]");
    } catch (e) { /* nothing to do */ }
    waitingDiagnostics = [];
    waitingDiagnosticBytes = 0;
    lastDiagnosticSent = performance.now();
  }
  function report(kind, detail) {
    var entry;
    try { entry = JSON.stringify({ kind: kind, detail: detail }); } catch (e) { return; }
    if (waitingDiagnosticBytes + entry.length > DIAGNOSTIC_BATCH_BYTES ||
        waitingDiagnostics.length >= DIAGNOSTIC_BATCH_COUNT) sendDiagnostics();
    waitingDiagnostics.push(entry);
    waitingDiagnosticBytes += entry.length + 1;
    var chatter = kind === "console" && detail.level !== "warn" && detail.level !== "error";
    if (!chatter || performance.now() - lastDiagnosticSent > DIAGNOSTIC_QUIET_MS) sendDiagnostics();
    else if (diagnosticTimer === null) diagnosticTimer = setTimeout(sendDiagnostics, DIAGNOSTIC_WAIT_MS);
  }

  // A View's messages, as JSON text, to the host. A message goes at once when it comes alone;
  // the ones the View posts right behind it (a burst: their message events are already queued)
  // wait for the end of the burst and go together, in one crossing to the host
  // instead of one each. The end of the burst is a message this page posts to itself: it is
  // queued behind the View's (a MessageChannel would cross to another WebKit process and back
  // for each message). The View can post the same token (it shares our origin): that only ends
  // a burst early.
  var burst = null;
  var burstBytes = 0;
  var BURST_MAX_BYTES = 1024 * 1024;
  var BURST_END = "mcp-apps-host:burst-end:" + Math.random().toString(36).slice(2);
  function sendQueued() {
    if (burst.length === 1) hostSend("v", burst[0]);
    // Each message as the text it would have been alone (a JSON string), so whatever the host
    // refuses in one of them (nesting, lone surrogates, not JSON) refuses that one alone.
    else if (burst.length > 1) hostSend("b", JSON.stringify(burst));
    burst = [];
    burstBytes = 0;
  }
  function endBurst() {
    if (burst === null) return;
    sendQueued();
    burst = null;
  }

  function toHost(data) {
    var text;
    try {
      text = JSON.stringify(data);
    } catch (e) {
      hostSend("x", "message is not serialisable: " + e);
      return;
    }
    if (text === undefined) text = "undefined";
    if (burst === null) {
      hostSend("v", text);
      burst = [];
      window.postMessage(BURST_END, window.origin);
      return;
    }
    // A big message goes alone, after what is queued; the burst goes on.
    if (burstBytes + text.length > BURST_MAX_BYTES) {
      sendQueued();
      hostSend("v", text);
      return;
    }
    burst.push(text);
    burstBytes += text.length;
  }

  // The View's localStorage, kept by the host across runs (src/sandbox/storage.rs): WebKitGTK
  // keeps a third-party frame's storage in memory only, and a View is one under the host's top
  // document. This page shares the View's origin and so its storage area: it hears the View's
  // changes (a `storage` event reaches every other document of the area) and sends them to the
  // host, and it puts back the host's items before the first View of an empty area loads. The
  // View can script this page and send anything here: the host keeps it for this server's
  // origin only, which the View can write anyway.
  var STORAGE_SEED = "mcp-apps-host/storage";
  var storageArea = null;
  try { storageArea = window.localStorage; } catch (e) { /* storage refused: nothing kept */ }
  var storageChange = null;
  function seedStorage(params) {
    var items = params && params.items;
    // An area that holds anything is this run's already (another View of the server wrote it).
    if (!storageArea || !items || typeof items !== "object" || storageArea.length !== 0) return;
    Object.keys(items).forEach(function (key) {
      if (typeof items[key] === "string") {
        try { storageArea.setItem(key, items[key]); } catch (e) { /* over the quota: the rest is lost */ }
      }
    });
  }
  function sendStorageChange() {
    var change = storageChange;
    storageChange = null;
    try { hostSend("s", JSON.stringify(change)); } catch (e) { /* nothing to do */ }
  }
  // The changes of one turn go together: an App that writes a key in a loop sends its last value.
  window.addEventListener("storage", function (e) {
    if (!storageArea || e.storageArea !== storageArea) return;
    if (storageChange === null) {
      storageChange = { clear: false, set: {} };
      setTimeout(sendStorageChange, 0);
    }
    if (e.key === null) {
      storageChange.clear = true;
      storageChange.set = {};
    } else {
      storageChange.set[e.key] = e.newValue;
    }
  });

  function fromHost(data) {
    if (data && data.method === STORAGE_SEED) {
      seedStorage(data.params);
      return;
    }
    if (data && data.method === RESOURCE_READY) {
      loadView(data.params);
      return;
    }
    followTheme(data);
    if (inner && inner.contentWindow) inner.contentWindow.postMessage(data, window.origin);
  }

  // Messages from the host (JSON text, checked by Rust), for the View, in order: a JSON array
  // of what the host had for this View in one turn of its loop.
  function fromHostText(text) {
    var list = JSON.parse(text);
    for (var i = 0; i < list.length; i++) fromHost(list[i]);
  }
  // The test topology (the proxy as the top page): the host calls this page directly.
  if (onTop) {
    Object.defineProperty(window, "__mcpProxy", {
      value: Object.freeze({
        deliver: function (text) { fromHost(JSON.parse(text)); },
        deliverAll: fromHostText
      })
    });
  }

  function text(value) {
    try { return typeof value === "string" ? value : (value && value.stack) || JSON.stringify(value) || String(value); }
    catch (e) { return String(value); }
  }

  // Where a diagnostic points. The View's document was written into a frame that took this
  // page's URL, so WebKit names its inline scripts `.../proxy.html?view=...`, with line numbers
  // of the View's HTML. That URL means nothing to the View's author: such a location is sent as
  // `inHtml` (the host puts the View's resource URI in `source`); a script the View loaded from
  // elsewhere keeps its own URL.
  function locate(detail, file, line, column, win) {
    var own = false;
    try { own = !file || file === win.location.href || file === window.location.href; } catch (e) { /* keep */ }
    if (own) detail.inHtml = true;
    else detail.source = String(file).slice(0, 500);
    if (typeof line === "number" && line > 0) detail.line = line;
    if (typeof column === "number" && column > 0) detail.column = column;
    return detail;
  }

  // A View that logs in a loop must not flood the host: past this many console messages the
  // rest are dropped, and that is said once.
  var consoleBudget = 500;

  function watch(win) {
    if (!win) return;
    win.addEventListener("securitypolicyviolation", function (e) {
      report("csp", locate({ directive: e.effectiveDirective || e.violatedDirective, blockedURI: e.blockedURI },
        e.sourceFile, e.lineNumber, e.columnNumber, win));
    }, true);
    win.addEventListener("error", function (e) {
      if (e.error !== undefined || e.message) {
        report("error", locate({ message: e.message || text(e.error) }, e.filename, e.lineno, e.colno, win));
      }
    });
    win.addEventListener("unhandledrejection", function (e) {
      report("error", { message: "unhandled rejection: " + text(e.reason) });
    });
    var console = win.console;
    if (!console) return;
    ["log", "info", "warn", "error", "debug"].forEach(function (level) {
      var original = console[level];
      if (typeof original !== "function") return;
      console[level] = function () {
        if (consoleBudget > 0) {
          consoleBudget--;
          report("console", { level: level, message: Array.prototype.map.call(arguments, text).join(" ").slice(0, 2000) });
        } else if (consoleBudget === 0) {
          consoleBudget--;
          report("console", { level: "warn", message: "more console messages of this View were not forwarded" });
        }
        return original.apply(this, arguments);
      };
    });
  }

  // The frame hook (a script the host runs at the start of every document in this webview)
  // calls this from the View's frame: only our own View's frame, with its document loaded by
  // URL, is watched (not the frame's initial empty document; a written document is watched by
  // loadView).
  Object.defineProperty(window, "__mcpProxyAdopt", {
    value: function (win) {
      var href = null;
      try { href = String(win.location.href); } catch (e) { /* not ours */ }
      if (documentUrl && inner && win === inner.contentWindow && href === documentUrl) watch(win);
    }
  });

  window.addEventListener("message", function (event) {
    var data = event.data;
    if (event.source === window && data === BURST_END) {
      endBurst();
      return;
    }
    // Check: the host's word comes only from our parent, the host's top document, on the
    // host's frame origin (a View can neither script that window nor post as it).
    if (!onTop && event.source === window.parent && event.origin === FRAME_ORIGIN) {
      if (event.isTrusted && typeof data === "string") fromHostText(data);
      return;
    }
    // Check: only our own View frame, on our own origin, may send through us.
    //
    // `event.source === window` is accepted too, for one WebKitGTK behaviour: a postMessage
    // called through a function bound in our realm (`parent.postMessage.bind(parent)`, which
    // @mcp-ui/server's MCP Apps adapter keeps and sends everything through) arrives with the
    // receiving window, us, as its source. Why that lets nothing new through:
    // - WebKit gives a bound call that source only when the caller's realm could reach our
    //   realm's postMessage as a same-origin function, so the origin is then ours: the View, a
    //   frame it nested on our origin, or this proxy itself. All three are one trust zone: the
    //   View can script this document and post as itself anyway, so the host already treats all
    //   of it as the View's word (tests/e2e_hostile.rs shows a same-origin nested frame and the
    //   View get through, and nothing else does).
    // - Any other origin reaches us only as a cross-origin window: another server's View
    //   (another sandbox origin), an opaque-origin frame (sandboxed srcdoc: "null"), a frame the
    //   View's CSP allowed. Bound or not, WebKit reports that sender and its real origin, which
    //   the origin check refuses.
    // - The host does not post to us at all (it calls deliver), and the one message this proxy
    //   posts to itself (the end of a burst) is taken above, so nothing of ours is relayed.
    if (inner && event.origin === window.origin && (event.source === inner.contentWindow || event.source === window)) {
      // The shim's "write the widget now" (for the proxy alone: never relayed to the host).
      if (shimMode && data && data.openaiShimReady === true) {
        writeHeldHtml();
        return;
      }
      toHost(data);
    }
  });

  toHost({ jsonrpc: "2.0", method: READY, params: {} });
})();
