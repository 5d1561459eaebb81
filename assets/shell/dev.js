// The developer panel (preview): the live log, host-context controls, a notification editor,
// the View's own tools, and its CSP with what each violation asks for.

import { views } from "./layout.js";
import { el, send, side, trim } from "./page.js";

// Developer panel (preview): the live log, host-context controls, a notification editor, CSP.
var dev = document.getElementById("dev");
var devView = document.getElementById("dev-view");
var logStore = [];
var cspByView = {};
var violationsByView = {};
var width = null;
var MAX_LOG_ROWS = 500;

function currentView() { return devView.value; }

function arrow(dir) {
  return { "view->host": "View → host", "host->view": "host → View", "proxy->host": "proxy → host", "host->proxy": "host → proxy",
    "host->server": "host → server", "server->host": "server → host", "rejected": "rejected", "diagnostic": "diagnostic" }[dir] || dir;
}

function summary(msg) {
  if (!msg || typeof msg !== "object") return String(msg);
  if (msg.method) return msg.method + (msg.id !== undefined ? " #" + msg.id : "");
  if (msg.reason) return msg.reason;
  if (msg.kind) return msg.kind;
  return (msg.error ? "error" : "result") + (msg.id !== undefined ? " #" + msg.id : "");
}

function logItem(rec) {
  var li = el("li");
  var bad = rec.dir === "rejected" || rec.dir === "diagnostic" || (rec.msg && rec.msg.error);
  li.append(el("span", "dir", Math.round(rec.t_ms) + " ms " + arrow(rec.dir) + " "), el("span", bad ? "bad" : "", summary(rec.msg)));
  li.addEventListener("click", function (e) {
    if (e.target.closest("pre") || e.target.closest("button")) return;
    var open = li.querySelector("pre");
    if (open) { open.remove(); li.querySelector("button").remove(); return; }
    var text = JSON.stringify(rec.msg, null, 2);
    var copy = el("button", "ghost", "Copy");
    copy.type = "button";
    copy.addEventListener("click", function () {
      if (navigator.clipboard) navigator.clipboard.writeText(text).catch(function () {});
    });
    li.append(copy, el("pre", "", text));
  });
  return li;
}

function renderLog() {
  var list = document.getElementById("log");
  var filter = document.getElementById("log-filter").value.trim();
  list.textContent = "";
  logStore.filter(function (r) {
    return (!currentView() || r.view === currentView() || r.view === null) &&
      (!filter || summary(r.msg).indexOf(filter) >= 0);
  }).slice(-500).forEach(function (r) { list.append(logItem(r)); });
}

export function addViewOption(id, title) {
  if (dev.hidden) return;
  var o = el("option", "", id + " · " + title);
  o.value = id;
  devView.append(o);
  devView.value = id;
  renderLog();
  renderCsp();
}

// What a violation asks for, in the metadata an App author writes.
function suggestion(detail) {
  var origin = "";
  try { origin = new URL(detail.blockedURI).origin; } catch (e) { return "inline or eval code: not allowed by any _meta.ui.csp field"; }
  var field = { "connect-src": "connectDomains", "frame-src": "frameDomains", "base-uri": "baseUriDomains" }[detail.directive] || "resourceDomains";
  return "add \"" + origin + "\" to _meta.ui.csp." + field;
}

function renderCsp() {
  var v = currentView();
  document.getElementById("csp-header").textContent = cspByView[v] ? cspByView[v].header : "";
  var list = document.getElementById("csp-violations");
  list.textContent = "";
  (violationsByView[v] || []).forEach(function (d) {
    var li = el("li");
    li.append(el("span", "bad", d.directive + " blocked " + d.blockedURI), el("div", "", "→ " + suggestion(d)));
    list.append(li);
  });
}

document.querySelectorAll(".tabs [role=tab]").forEach(function (tab) {
  tab.addEventListener("click", function () {
    document.querySelectorAll(".tabs [role=tab]").forEach(function (t) { t.setAttribute("aria-selected", String(t === tab)); });
    document.querySelectorAll("[data-panel]").forEach(function (p) { p.hidden = p.dataset.panel !== tab.dataset.tab; });
  });
});
devView.addEventListener("change", function () { renderLog(); renderCsp(); });
document.getElementById("log-filter").addEventListener("input", renderLog);
document.getElementById("dev-reload").addEventListener("click", function () { send({ kind: "reload" }); });
// WebKit's inspector, for App authors: preview only (Rust refuses it in run).
function inspect() { if (!dev.hidden) send({ kind: "inspector" }); }
document.getElementById("dev-inspect").addEventListener("click", inspect);
document.addEventListener("keydown", function (e) {
  if (e.key === "F12" || (e.ctrlKey && e.shiftKey && (e.key === "I" || e.key === "i"))) {
    if (dev.hidden) return;
    e.preventDefault();
    inspect();
  }
});
document.querySelectorAll(".presets [data-width]").forEach(function (b) {
  b.addEventListener("click", function () {
    width = Number(b.dataset.width);
    var v = views.get(currentView());
    if (v) v.card.style.maxWidth = (width + 2) + "px";
    send({ kind: "dev-context", view: currentView(), context: { containerDimensions: { width: width, maxHeight: 4000 } } });
  });
});
document.getElementById("ctx-apply").addEventListener("click", function () {
  var theme = document.getElementById("ctx-theme").value;
  send({ kind: "dev-context", view: currentView(), context: {
    theme: theme, locale: document.getElementById("ctx-locale").value, displayMode: document.getElementById("ctx-mode").value } });
});
var templates = {
  "ui/notifications/tool-input": { arguments: {} },
  "ui/notifications/tool-input-partial": { arguments: {} },
  "ui/notifications/tool-result": { content: [{ type: "text", text: "edited result" }], structuredContent: {} },
  "ui/notifications/tool-cancelled": { reason: "cancelled from the developer panel" }
};
var sendMethod = document.getElementById("send-method");
var sendParams = document.getElementById("send-params");
function fillTemplate() { sendParams.value = JSON.stringify(templates[sendMethod.value], null, 2); }
sendMethod.addEventListener("change", fillTemplate);
fillTemplate();
function parsed() {
  try { document.getElementById("send-error").textContent = ""; return JSON.parse(sendParams.value); }
  catch (e) { document.getElementById("send-error").textContent = "params are not valid JSON"; return null; }
}
// The View's own tools: listed and called through the host, as a model's call would be.
document.getElementById("vt-list").addEventListener("click", function () {
  send({ kind: "dev-view-tools", view: currentView() });
});
document.getElementById("vt-call").addEventListener("click", function () {
  var args;
  try { args = JSON.parse(document.getElementById("vt-args").value || "{}"); } catch (e) {
    document.getElementById("vt-result").textContent = "The arguments are not JSON: " + e.message;
    return;
  }
  send({ kind: "dev-call-view-tool", view: currentView(), name: document.getElementById("vt-name").value, arguments: args });
});
export function viewTools(cmd) {
  if (cmd.view !== currentView()) return;
  var list = document.getElementById("vt-tools");
  list.textContent = "";
  (cmd.tools || []).forEach(function (t) {
    var b = el("button", "", t.name);
    b.type = "button";
    b.dataset.viewTool = t.name;
    if (t.description) b.title = t.description;
    b.addEventListener("click", function () { document.getElementById("vt-name").value = t.name; });
    var li = el("li");
    li.append(b);
    list.append(li);
  });
  if (cmd.text) document.getElementById("vt-result").textContent = cmd.text;
}

document.getElementById("send-go").addEventListener("click", function () {
  var params = parsed();
  if (params) send({ kind: "dev-send", view: currentView(), method: sendMethod.value, params: params });
});
document.getElementById("send-stream").addEventListener("click", function () {
  var params = parsed();
  if (!params) return;
  var args = params.arguments || {};
  [1 / 3, 2 / 3].forEach(function (share) {
    var partial = {};
    Object.keys(args).forEach(function (k) {
      var v = args[k];
      partial[k] = typeof v === "string" ? v.slice(0, Math.ceil(v.length * share)) : v;
    });
    send({ kind: "dev-send", view: currentView(), method: "ui/notifications/tool-input-partial", params: { arguments: partial } });
  });
  send({ kind: "dev-send", view: currentView(), method: "ui/notifications/tool-input", params: { arguments: args } });
});

// A new View's card is as wide as the width preset chosen, if one was.
export function fitCard(card) {
  if (width) card.style.maxWidth = (width + 2) + "px";
}

// The panel is shown (preview only).
export function showDev() { dev.hidden = false; side.classList.add("with-dev"); }

// A record of the live log: kept, and listed if it matches the View and the filter.
export function log(cmd) {
  logStore.push(cmd.record);
  if (logStore.length > 5000) logStore.shift();
  var r = cmd.record;
  if (!dev.hidden && (!currentView() || r.view === currentView() || r.view === null)) {
    var filter = document.getElementById("log-filter").value.trim();
    if (!filter || summary(r.msg).indexOf(filter) >= 0) {
      var list = document.getElementById("log");
      list.append(logItem(r));
      trim(list, MAX_LOG_ROWS, 1);
    }
  }
}

// A View's CSP header.
export function csp(cmd) { cspByView[cmd.view] = cmd; renderCsp(); }

// A View's diagnostic: a CSP violation is listed with what would allow it.
export function diagnostic(cmd) {
  if (cmd.kind !== "csp") return;
  var list = (violationsByView[cmd.view] = violationsByView[cmd.view] || []);
  if (list.length >= MAX_LOG_ROWS) list.shift();
  list.push(cmd.detail);
  renderCsp();
}
