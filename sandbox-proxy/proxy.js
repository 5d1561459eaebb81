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

  // The View's localStorage and IndexedDB, kept by the host across runs (src/sandbox/storage.rs):
  // WebKitGTK keeps a third-party frame's storage in memory only, and a View is one under the
  // host's top document. This page shares the View's origin and so its storage: it hears the
  // View's localStorage changes (a `storage` event reaches every other document of the area)
  // and sends them to the host, dumps the origin's databases once the View's writes complete
  // (IndexedDB has no change events), and puts back what the host kept before the first View
  // of an empty origin loads. The View can script this page and send anything here: the host
  // keeps it for this server's origin only, which the View can write anyway.
  var STORAGE_SEED = "mcp-apps-host/storage";
  var storageArea = null;
  try { storageArea = window.localStorage; } catch (e) { /* storage refused: nothing kept */ }
  var storageChange = null;
  // The host's messages that came while the kept databases were being put back: the View's
  // document loads once they are.
  var held = null;
  var HOLD_AT_MOST_MS = 10000;
  function seedStorage(params) {
    if (!params || typeof params !== "object") return;
    // The server was removed and added again in this run: WebKit still holds what its old
    // Views stored, which is no longer the server's.
    var forget = Array.isArray(params.forget) ? params.forget : null;
    if (forget && storageArea) {
      try { storageArea.clear(); } catch (e) { /* nothing to clear */ }
    }
    var items = params.items;
    // An area that holds anything is this run's already (another View of the server wrote it).
    if (storageArea && items && typeof items === "object" && storageArea.length === 0) {
      Object.keys(items).forEach(function (key) {
        if (typeof items[key] === "string") {
          try { storageArea.setItem(key, items[key]); } catch (e) { /* over the quota: the rest is lost */ }
        }
      });
    }
    if (!idb) return;
    held = [];
    var release = function () {
      if (held === null) return;
      var list = held;
      held = null;
      list.forEach(fromHost);
    };
    var late = setTimeout(function () {
      // Never put back (a database the View's old page holds open blocks it): keep nothing of
      // this run rather than a part.
      idbKeep = false;
      warn("the View's kept databases could not be restored in time: nothing of them is kept from this run");
      release();
    }, HOLD_AT_MOST_MS);
    (forget ? deleteDatabases(forget) : Promise.resolve())
      .then(function () { return restoreDatabases(params.databases); })
      .catch(function (e) {
        idbKeep = false;
        warn("the View's kept databases could not be restored (" + e + "): nothing of them is kept from this run");
      })
      .then(function () { clearTimeout(late); release(); });
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

  function warn(message) {
    report("console", { level: "warn", message: "mcp-apps-host: " + message });
  }

  // IndexedDB. A dump is the databases this page knows of (names, versions, stores with their
  // key paths, key generators and indexes, and every record as [key, value]) in JSON, values in
  // the tagged encoding below, and the names of those that are gone. WebKitGTK 2.50 lists no
  // database of a third-party origin in indexedDB.databases() (measured: [] beside an open
  // database), so the names are those the host kept and those the View opened or deleted. It is
  // taken in one read-only transaction per database, after the View's read-write transactions
  // complete (DUMP_AFTER_MS after the last), every DUMP_EVERY_MS while a View is live, and when
  // the host tears the View down; the host merges it into what it keeps, by database. It is
  // sent only when it changed.
  var DUMP_AFTER_MS = 100;
  var DUMP_EVERY_MS = 30000;
  var idb = null;
  try { idb = window.indexedDB || null; } catch (e) { /* refused */ }
  var knownNames = Object.create(null);
  // Off once putting databases back failed: a dump then would replace the host's copy with a part.
  var idbKeep = idb !== null;
  var dumpTimer = null;
  var dumping = false;
  var dumpAgain = false;
  var lastDump = null;
  var skippedSaid = {};

  // Structured-clone values as JSON: a string, boolean, finite number or null is itself; every
  // other value is an object with one tag (so a View's own objects never read as tags). What
  // IndexedDB keeps but JSON cannot hold faithfully (a Blob, a File, an ImageData, a value that
  // contains itself) throws: its record is skipped and said, never kept altered.
  var VIEWS = ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array",
    "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array", "DataView"];
  function toBase64(bytes) {
    var text = "";
    for (var i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(text);
  }
  function fromBase64(text) {
    var raw = atob(text);
    var bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    return bytes;
  }
  function encode(v, within) {
    if (v === null || typeof v === "string" || typeof v === "boolean") return v;
    if (typeof v === "number") return isFinite(v) && !Object.is(v, -0) ? v : { n: Object.is(v, -0) ? "-0" : String(v) };
    if (v === undefined) return { u: 1 };
    if (typeof v === "bigint") return { bi: String(v) };
    if (typeof v !== "object") throw new Error("a " + typeof v + " cannot be kept");
    if (within.indexOf(v) >= 0) throw new Error("a value that contains itself cannot be kept");
    var tag = Object.prototype.toString.call(v).slice(8, -1);
    within.push(v);
    try {
      if (Array.isArray(v)) {
        var list = [];
        for (var i = 0; i < v.length; i++) list.push(encode(v[i], within));
        return { a: list };
      }
      if (tag === "Date") return { d: encode(v.getTime(), within) };
      if (tag === "ArrayBuffer") return { ab: toBase64(new Uint8Array(v)) };
      if (ArrayBuffer.isView(v) && VIEWS.indexOf(tag) >= 0) {
        return { view: tag, b64: toBase64(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)) };
      }
      if (tag === "Map") {
        var pairs = [];
        v.forEach(function (value, key) { pairs.push([encode(key, within), encode(value, within)]); });
        return { map: pairs };
      }
      if (tag === "Set") {
        var members = [];
        v.forEach(function (value) { members.push(encode(value, within)); });
        return { set: members };
      }
      if (tag === "RegExp") return { re: v.source, flags: v.flags };
      if (tag === "Boolean" || tag === "Number" || tag === "String") return { boxed: encode(v.valueOf(), within) };
      // Fields as [name, value] pairs: their order stays (and JSON objects may be reordered).
      if (tag === "Object") return { o: Object.keys(v).map(function (k) { return [k, encode(v[k], within)]; }) };
      throw new Error("a " + tag + " cannot be kept");
    } finally {
      within.pop();
    }
  }
  function has(x, key) { return Object.prototype.hasOwnProperty.call(x, key); }
  function decode(x) {
    if (x === null || typeof x !== "object") return x;
    if (has(x, "o")) {
      var out = {};
      x.o.forEach(function (field) {
        // defineProperty: an own "__proto__" field stays a field.
        Object.defineProperty(out, field[0], { value: decode(field[1]), writable: true, enumerable: true, configurable: true });
      });
      return out;
    }
    if (has(x, "a")) return x.a.map(decode);
    if (has(x, "n")) return Number(x.n);
    if (has(x, "u")) return undefined;
    if (has(x, "bi")) return BigInt(x.bi);
    if (has(x, "d")) return new Date(decode(x.d));
    if (has(x, "ab")) return fromBase64(x.ab).buffer;
    if (has(x, "view") && VIEWS.indexOf(x.view) >= 0) return new window[x.view](fromBase64(x.b64).buffer);
    if (has(x, "map")) return new Map(x.map.map(function (p) { return [decode(p[0]), decode(p[1])]; }));
    if (has(x, "set")) return new Set(x.set.map(decode));
    if (has(x, "re")) return new RegExp(x.re, x.flags);
    if (has(x, "boxed")) return Object(decode(x.boxed));
    throw new Error("a kept value of no known kind");
  }

  function dumpDatabase(info) {
    return new Promise(function (resolve, reject) {
      var gone = false;
      var req = idb.open(info.name);
      // Only an existing database is read: one deleted meanwhile is not made again.
      req.onupgradeneeded = function () { gone = true; req.transaction.abort(); };
      req.onerror = function () { if (gone) resolve({ gone: info.name }); else reject(req.error); };
      req.onsuccess = function () {
        var db = req.result;
        // The View's own upgrade or deletion goes first; this dump fails, the next one is taken.
        db.onversionchange = function () { db.close(); };
        var out = { name: db.name, version: db.version, stores: [] };
        var names = Array.prototype.slice.call(db.objectStoreNames);
        if (names.length === 0) { db.close(); resolve(out); return; }
        var tx;
        try {
          tx = db.transaction(names, "readonly");
        } catch (e) {
          db.close();
          reject(e);
          return;
        }
        names.forEach(function (name) {
          var store = tx.objectStore(name);
          var kept = { name: name, keyPath: store.keyPath, autoIncrement: store.autoIncrement, indexes: [], records: [] };
          Array.prototype.forEach.call(store.indexNames, function (n) {
            var index = store.index(n);
            kept.indexes.push({ name: n, keyPath: index.keyPath, unique: index.unique, multiEntry: index.multiEntry });
          });
          out.stores.push(kept);
          // Keys and values of one transaction, both in key order.
          var keys = store.getAllKeys();
          store.getAll().onsuccess = function (e) {
            var values = e.target.result;
            for (var i = 0; i < values.length; i++) {
              try {
                kept.records.push([encode(keys.result[i], []), encode(values[i], [])]);
              } catch (err) {
                var where = db.name + "/" + name;
                if (!skippedSaid[where]) {
                  skippedSaid[where] = true;
                  warn("records of the View's database " + where + " are not kept across runs: " + err.message);
                }
              }
            }
          };
        });
        tx.oncomplete = function () { db.close(); resolve(out); };
        tx.onabort = function () { db.close(); reject(tx.error || new Error("the dump was interrupted")); };
      };
    });
  }

  function dumpDatabases() {
    if (!idbKeep || held !== null) return;
    if (dumping) { dumpAgain = true; return; }
    dumping = true;
    Promise.all(Object.keys(knownNames).map(function (name) { return dumpDatabase({ name: name }); }))
      .then(function (dbs) {
        var there = dbs.filter(function (d) { return !d.gone; });
        var gone = dbs.filter(function (d) { return d.gone; }).map(function (d) { return d.gone; });
        var text = JSON.stringify({ databases: there, gone: gone });
        if (idbKeep && text !== lastDump) {
          hostSend("i", text);
          lastDump = text;
        }
      }, function () { /* a View's upgrade came first: the next dump is taken below */ dumpAgain = true; })
      .then(function () {
        dumping = false;
        if (dumpAgain) { dumpAgain = false; dumpSoon(); }
      });
  }
  function dumpSoon() {
    if (!idb) return;
    if (dumpTimer !== null) clearTimeout(dumpTimer);
    dumpTimer = setTimeout(function () { dumpTimer = null; dumpDatabases(); }, DUMP_AFTER_MS);
  }
  if (idb) {
    setInterval(function () { if (inner) dumpDatabases(); }, DUMP_EVERY_MS);
    window.addEventListener("pagehide", dumpDatabases);
  }

  // The View's writes: each of its read-write transactions, and each open or deletion of a
  // database, is followed by a dump once it is over (hooked in the View's realm, like its
  // console, before its scripts run).
  function watchDatabases(win) {
    try {
      var proto = win.IDBDatabase.prototype;
      var transaction = proto.transaction;
      proto.transaction = function () {
        var tx = transaction.apply(this, arguments);
        if (tx.mode !== "readonly") tx.addEventListener("complete", dumpSoon);
        return tx;
      };
      var factory = win.IDBFactory.prototype;
      ["open", "deleteDatabase"].forEach(function (name) {
        var original = factory[name];
        factory[name] = function (db) {
          var req = original.apply(this, arguments);
          knownNames[String(db)] = true;
          req.addEventListener("success", dumpSoon);
          return req;
        };
      });
    } catch (e) { /* no IndexedDB in the View: the periodic dump finds nothing */ }
  }

  // Deletes the databases `names` (a deletion another page blocks finishes when that page lets
  // go; what comes after it waits for it).
  function deleteDatabases(names) {
    return Promise.all(names.map(function (name) {
      return new Promise(function (resolve) {
        var req = idb.deleteDatabase(String(name));
        req.onsuccess = req.onerror = req.onblocked = function () { resolve(); };
      });
    }));
  }

  // Puts back the kept databases the origin does not have (one it has is this run's already:
  // another View of the server is using it). Each database is made, with its stores, indexes
  // and records, in its own upgrade transaction; if one fails, those made go again, so the
  // origin has all of the dump that it lacked, or none of it.
  function restoreDatabases(databases) {
    if (!Array.isArray(databases)) return Promise.resolve();
    databases.forEach(function (d) { knownNames[d.name] = true; });
    var made = [];
    return Promise.all(databases.map(function (d) { return restoreDatabase(d, made); })).catch(function (e) {
      return deleteDatabases(made).then(function () { throw e; });
    });
  }
  function restoreDatabase(kept, made) {
    return new Promise(function (resolve, reject) {
      var req = idb.open(kept.name, kept.version);
      req.onupgradeneeded = function (e) {
        var db = req.result;
        // There already, at an older version: the View's own, left as it is.
        if (e.oldVersion !== 0) {
          req.transaction.abort();
          return;
        }
        made.push(kept.name);
        kept.stores.forEach(function (s) {
          var store = db.createObjectStore(s.name, { keyPath: s.keyPath, autoIncrement: s.autoIncrement === true });
          (s.indexes || []).forEach(function (i) {
            store.createIndex(i.name, i.keyPath, { unique: i.unique === true, multiEntry: i.multiEntry === true });
          });
          s.records.forEach(function (r) {
            if (store.keyPath === null) store.put(decode(r[1]), decode(r[0]));
            else store.put(decode(r[1]));
          });
        });
      };
      req.onsuccess = function () { req.result.close(); resolve(); };
      // Aborted above, or there at a newer version: not ours to put back.
      req.onerror = function () {
        var why = req.error && req.error.name;
        if (made.indexOf(kept.name) < 0 && (why === "AbortError" || why === "VersionError")) resolve();
        else reject(req.error);
      };
    });
  }

  function fromHost(data) {
    if (held !== null) {
      held.push(data);
      return;
    }
    if (data && data.method === "ui/resource-teardown") dumpDatabases();
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
    watchDatabases(win);
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
