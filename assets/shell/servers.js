// The servers panel: every server with its status, sign-in, approval mode and restart, and
// its tools, each with a form from its inputSchema to call it.

import { fillFields, readFields } from "./forms.js";
import { el, send } from "./page.js";

// The tool picker: every server with its status, and a form per tool from its inputSchema.
var toolsByKey = new Map(); // server + "\u0000" + tool -> { server, tool }
var selected = null;

// The approval modes (conversation::Approval), in the order the person reads them.
var APPROVALS = [["changes", "Ask before changes"], ["always", "Ask before every call"], ["never", "Never ask for its own data"]];
// "Starting for 12 s": each starting server's line, counted on every second.
function howLong(secs) {
  return secs < 60 ? secs + " s" : Math.floor(secs / 60) + " min " + (secs % 60) + " s";
}
function tickStarting() {
  document.querySelectorAll(".server-starting[data-since]").forEach(function (p) {
    var secs = Math.max(0, Math.floor((Date.now() - Number(p.dataset.since)) / 1000));
    p.textContent = "Starting for " + howLong(secs) + "." +
      (secs >= 10 ? " A first start may download the server's package, which can take a few minutes." : "");
  });
}
setInterval(tickStarting, 1000);

export function servers(cmd) {
  document.getElementById("picker").hidden = false;
  var several = cmd.servers.length > 1;
  // A server's `name` is its key (sent back to Rust); its `label` is what a person reads.
  var labelOf = function (s) { return s.label || s.name; };
  document.getElementById("picker-server").textContent = several ? "Servers" : cmd.servers[0] ? labelOf(cmd.servers[0]) : "";
  var only = !several && cmd.servers[0];
  document.getElementById("picker-server").title = only && only.protocol ? "MCP " + only.protocol : "";
  var list = document.getElementById("tools");
  list.textContent = "";
  toolsByKey.clear();
  cmd.servers.forEach(function (s) {
    if (several || s.status !== "ready" || s.approval || s.instructions) {
      var head = el("li", "server " + s.status.replace(/ /g, "-"));
      head.dataset.server = s.name;
      var line = el("div", "server-line");
      line.append(el("span", "server-name", labelOf(s)));
      // A server may not rename itself: its own serverInfo name stands beside the name the
      // person or the config gave it, never instead (text only, like every server string).
      if (s.callsItself) line.append(el("span", "muted calls-itself", "(calls itself \"" + s.callsItself + "\")"));
      line.append(el("span", "state", s.status));
      if (s.protocol) line.title = "MCP " + s.protocol;
      head.append(line);
      // Another entry has its command line: what tells this program apart from that one.
      if (s.differs) head.append(el("p", "muted server-differs", s.differs));
      if (s.reason) {
        var why = el("p", "server-reason", s.reason);
        if (typeof s.retryIn === "number" && s.retryIn > 0) why.textContent += " (restarts when needed, after " + s.retryIn + " s)";
        head.append(why);
        // The reason as the log has it (a program's stack, JSON-RPC detail): there to read or
        // copy into a bug report, not the message.
        if (s.details) {
          var more = el("details", "server-details");
          more.append(el("summary", "", "Details"), el("pre", "mono", s.details));
          head.append(more);
        }
      }
      if (typeof s.startedAgo === "number") {
        // Starting: for how long (counted on here, every second), and a way out of the wait.
        var wait = el("p", "server-starting");
        wait.dataset.since = String(Date.now() - s.startedAgo * 1000);
        head.append(wait);
        var stop = el("button", "restart", "Cancel");
        stop.type = "button";
        stop.dataset.cancelStart = s.name;
        stop.setAttribute("aria-label", "Stop starting " + labelOf(s));
        stop.addEventListener("click", function () { send({ kind: "cancel-start", server: s.name }); });
        head.append(stop);
      }
      if (s.status === "sign-in required") {
        var signIn = el("button", "restart primary", "Sign in");
        signIn.type = "button";
        signIn.dataset.signIn = s.name;
        signIn.addEventListener("click", function () { send({ kind: "sign-in", server: s.name }); });
        head.append(signIn);
      }
      if (s.status === "signing in") {
        var cancel = el("button", "restart", "Cancel sign-in");
        cancel.type = "button";
        cancel.dataset.cancelSignIn = s.name;
        cancel.addEventListener("click", function () { send({ kind: "cancel-sign-in", server: s.name }); });
        head.append(cancel);
      }
      if (s.instructions) {
        // The server's own words for the model, as text.
        var said = el("details", "server-instructions");
        said.append(el("summary", "", "Its instructions for the model"), el("p", "", s.instructions));
        head.append(said);
      }
      if (s.approval) {
        // When the model's calls to this server ask first; kept across runs.
        var approval = el("select", "approval");
        approval.dataset.approval = s.name;
        approval.setAttribute("aria-label", "When the model's calls to " + labelOf(s) + " ask first");
        APPROVALS.forEach(function (a) {
          var o = el("option", "", a[1]);
          o.value = a[0];
          o.selected = a[0] === s.approval;
          approval.append(o);
        });
        approval.addEventListener("change", function () { send({ kind: "approval", server: s.name, mode: approval.value }); });
        head.append(approval);
      }
      if (s.status === "failed") {
        var restart = el("button", "restart", "Retry");
        restart.setAttribute("aria-label", "Start " + labelOf(s) + " again");
        restart.type = "button";
        restart.dataset.restart = s.name;
        restart.addEventListener("click", function () { send({ kind: "restart", server: s.name }); });
        head.append(restart);
      }
      list.append(head);
      tickStarting();
    }
    s.tools.forEach(function (t) {
      var key = s.name + "\u0000" + t.name;
      toolsByKey.set(key, { server: s.name, tool: t });
      var li = el("li");
      var b = el("button", "", t.title || t.name);
      b.type = "button";
      b.dataset.tool = t.name;
      b.dataset.server = s.name;
      b.dataset.key = key;
      b.setAttribute("aria-pressed", String(!!selected && selected.key === key));
      if (t.hasUi) b.append(el("span", "badge", "App"));
      b.title = (t.description || t.name) + (several ? " — " + labelOf(s) : "");
      b.addEventListener("click", function () { selectTool(key); });
      li.append(b);
      list.append(li);
    });
  });
  if (selected && !toolsByKey.has(selected.key)) {
    selected = null;
    document.getElementById("form").hidden = true;
  }
  editor(cmd);
}

function selectTool(key) {
  var entry = toolsByKey.get(key);
  if (!entry) return;
  var t = entry.tool;
  selected = { key: key, server: entry.server, tool: t };
  document.querySelectorAll("#tools button[data-key]").forEach(function (b) { b.setAttribute("aria-pressed", String(b.dataset.key === key)); });
  var fields = document.getElementById("form-fields");
  fillFields(fields, "arg-", t.inputSchema || {});
  document.getElementById("form-title").textContent = t.title || t.name;
  document.getElementById("form-description").textContent = t.description || "";
  document.getElementById("form-error").textContent = "";
  document.getElementById("form").hidden = false;
  var first = fields.querySelector("input, select, textarea");
  (first || document.getElementById("form-call")).focus();
}

document.getElementById("form").addEventListener("submit", function (e) {
  e.preventDefault();
  if (!selected) return;
  var errorLine = document.getElementById("form-error");
  try {
    var args = readFields(document.getElementById("form-fields"));
    errorLine.textContent = "";
    send({ kind: "call-tool", server: selected.server, tool: selected.tool.name, arguments: args });
  } catch (message) {
    errorLine.textContent = String(message);
  }
});

// The servers editor (the app's servers came from a config file): each entry of the file with
// enable/disable, edit, its log and remove, a form to add a command line or a URL, the import
// of another config file, and "Reload config". Rust writes the file (checked by the loader
// first) and starts, stops or restarts only what changed.
var editorBox = null;
var logs = new Map(); // server -> its <pre>, while shown
// What the person is typing survives the editor being drawn again (a server's status changes).
var editing = null; // { key, name, line } while an entry's edit form is open
var importPath = "";

function button(text, label, onClick) {
  var b = el("button", "", text);
  b.type = "button";
  if (label) b.setAttribute("aria-label", label);
  b.addEventListener("click", onClick);
  return b;
}

// An entry's edit form: its name and its command line or URL.
function editForm(e) {
  var form = el("form", "form edit-server");
  form.dataset.editing = e.key;
  var name = el("input");
  name.id = "edit-server-name";
  name.value = editing.name;
  name.setAttribute("aria-label", "The name of " + e.name);
  name.addEventListener("input", function () { editing.name = name.value; });
  var what = el("input");
  what.id = "edit-server-line";
  what.value = editing.line;
  what.required = true;
  what.setAttribute("aria-label", "The command line or URL of " + e.name);
  what.addEventListener("input", function () { editing.line = what.value; });
  var save = el("button", "primary", "Save");
  save.type = "submit";
  save.id = "edit-server-save";
  var cancel = button("Cancel", "Cancel editing " + e.name, function () {
    editing = null;
    form.remove();
  });
  form.append(name, what, save, cancel);
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (!what.value.trim()) return;
    send({ kind: "edit-server", server: e.key, name: name.value, line: what.value });
    editing = null;
  });
  return form;
}

export function editor(cmd) {
  if (!cmd.editor) {
    if (editorBox) editorBox.hidden = true;
    return;
  }
  if (!editorBox) {
    editorBox = el("section", "server-editor");
    editorBox.id = "server-editor";
    document.getElementById("picker").insertBefore(editorBox, document.getElementById("form"));
  }
  var box = editorBox;
  var focused = document.activeElement && box.contains(document.activeElement) ? document.activeElement.id : "";
  box.hidden = false;
  box.textContent = "";
  box.append(el("h2", "", "Your servers"));
  var file = el("p", "muted", "In " + cmd.editor.config);
  var reload = button("Reload config", "Read " + cmd.editor.config + " again", function () { send({ kind: "reload-config" }); });
  reload.id = "reload-config";
  box.append(file, reload);
  var list = el("ul", "tools");
  var statusOf = new Map();
  cmd.servers.forEach(function (s) { statusOf.set(s.name, s.status); });
  cmd.editor.entries.forEach(function (e) {
    var li = el("li", "server-entry");
    li.dataset.entry = e.key;
    var line = el("div", "server-line");
    line.append(el("span", "server-name", e.name), el("span", "state", e.disabled ? "disabled" : (statusOf.get(e.key) || "")));
    li.append(line, el("p", "muted server-what", e.what));
    // Another entry shows the same command line: what makes this one another program.
    if (e.differs) {
      var differs = el("p", "muted server-differs", e.differs);
      differs.dataset.differs = e.key;
      li.append(differs);
    }
    var toggle = el("button", "", e.disabled ? "Enable" : "Disable");
    toggle.type = "button";
    toggle.dataset.toggle = e.key;
    toggle.addEventListener("click", function () { send({ kind: "enable-server", server: e.key, enabled: e.disabled }); });
    var log = el("button", "", "Log");
    log.type = "button";
    log.dataset.log = e.key;
    log.addEventListener("click", function () { send({ kind: "server-log", server: e.key }); });
    var remove = el("button", "", "Remove");
    remove.type = "button";
    remove.dataset.remove = e.key;
    // Two steps: the first click asks, the second removes (no native dialog).
    remove.addEventListener("click", function () {
      if (remove.dataset.armed) {
        send({ kind: "remove-server", server: e.key });
        return;
      }
      remove.dataset.armed = "1";
      remove.textContent = "Remove " + e.name + " from the file?";
    });
    var edit = button("Edit", "Edit " + e.name, function () {
      editing = { key: e.key, name: e.key, line: e.what };
      var open = li.querySelector("form.edit-server");
      if (open) open.remove();
      li.append(editForm(e));
      document.getElementById("edit-server-line").focus();
    });
    edit.dataset.edit = e.key;
    li.append(toggle, edit, log, remove);
    if (e.error) {
      // The rule the loader found this entry breaking: it does not run until fixed.
      var why = el("p", "form-error entry-error", e.error);
      why.dataset.entryError = e.key;
      li.append(why);
    }
    if (editing && editing.key === e.key) li.append(editForm(e));
    var shownLog = logs.get(e.key);
    if (shownLog) li.append(shownLog);
    list.append(li);
  });
  box.append(list);
  var form = el("form", "form add-server");
  form.id = "add-server";
  var name = el("input");
  name.id = "add-server-name";
  name.placeholder = "Name (optional)";
  name.setAttribute("aria-label", "The new server's name");
  var what = el("input");
  what.id = "add-server-line";
  what.placeholder = "Command line or https:// URL";
  what.setAttribute("aria-label", "The new server's command line or URL");
  what.required = true;
  var add = el("button", "primary", "Add a server");
  add.type = "submit";
  form.append(el("h3", "", "Add a server"), name, what, add);
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (what.value.trim()) send({ kind: "add-server", name: name.value, line: what.value });
  });
  box.append(form);
  // Another config file's servers (a desktop client's, VS Code's, a plugin's): typed, or picked
  // in the native file chooser. Rust only reads that file.
  var imports = el("form", "form import-config");
  imports.id = "import-config";
  var path = el("input");
  path.id = "import-path";
  path.placeholder = "Path of a config file (mcp.json, claude_desktop_config.json…)";
  path.setAttribute("aria-label", "The path of a config file to import");
  path.value = importPath;
  path.addEventListener("input", function () { importPath = path.value; });
  var importIt = el("button", "", "Import this file");
  importIt.type = "submit";
  importIt.id = "import-submit";
  var choose = button("Import…", "Import a config file: choose it", function () { send({ kind: "choose-import" }); });
  choose.id = "import-choose";
  imports.append(el("h3", "", "Import servers"));
  // The other clients' files found on this machine, each offered with what it would bring.
  var found = cmd.editor.found || [];
  if (found.length) {
    var list = el("ul", "import-found");
    list.id = "import-found";
    list.setAttribute("aria-label", "Config files of other apps on this computer");
    found.forEach(function (f) {
      var li = el("li");
      li.dataset.client = f.client;
      var what = el("span", "found-what");
      what.append(el("strong", "", f.client), el("span", "found-path", f.path));
      var count = f.servers === 1 ? "1 server" : f.servers + " servers";
      var already = f.servers - f.new;
      var note = already === 0 ? count : count + ", " + (already === f.servers ? "all" : already) + " already yours";
      what.append(el("span", "found-count", note));
      var take = el("button", "", f.new === 0 ? "Nothing new" : f.new === 1 ? "Import 1 server" : "Import " + f.new + " servers");
      take.type = "button";
      take.disabled = f.new === 0;
      take.setAttribute("aria-label", f.new === 0 ? "Nothing new to import from " + f.client : take.textContent + " from " + f.client);
      take.addEventListener("click", function () { send({ kind: "import-config", path: f.key }); });
      li.append(what, take);
      list.append(li);
    });
    imports.append(list);
  }
  imports.append(path, importIt, choose);
  imports.addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (!path.value.trim()) return;
    send({ kind: "import-config", path: path.value });
    importPath = "";
  });
  box.append(imports);
  var error = el("p", "form-error", cmd.editor.error || "");
  error.id = "server-editor-error";
  error.setAttribute("role", "alert");
  box.append(error);
  var again = focused && document.getElementById(focused);
  if (again) again.focus();
}

export function serverLog(cmd) {
  var pre = el("pre", "server-log", cmd.lines.length ? cmd.lines.join("\n") : "(it wrote nothing on stderr)");
  pre.setAttribute("aria-label", "Log of " + cmd.server);
  var old = logs.get(cmd.server);
  if (old) old.remove();
  logs.set(cmd.server, pre);
  var entry = editorBox && Array.from(editorBox.querySelectorAll("li[data-entry]")).find(function (li) { return li.dataset.entry === cmd.server; });
  if (entry) entry.append(pre);
}
