// The host shell: trusted UI on mcp-host://app. It never renders server-provided HTML itself
// (text only, via textContent); Views live in sandbox proxy frames on their own origins.
//
// To Rust it speaks only through window.__mcpHostSend, which the host's main-frame init script
// defines with the per-launch IPC secret in a closure. From Rust it receives commands through
// window.__mcpShell.dispatch(command).
(function () {
  "use strict";

  var send = window.__mcpHostSend;
  var views = new Map(); // view id -> { frame, origin, card, height }
  var stream = document.getElementById("stream");
  var statusLine = document.getElementById("status");
  var side = document.getElementById("side");
  var theme = "light";

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function setStatus(text, isError) {
    statusLine.textContent = text;
    statusLine.classList.toggle("error", !!isError);
  }

  function setTheme(cmd) {
    theme = cmd.theme === "dark" ? "dark" : "light";
    document.documentElement.dataset.theme = theme;
    views.forEach(function (v) { v.frame.style.colorScheme = theme; });
  }

  document.getElementById("theme").addEventListener("click", function () {
    send({ kind: "theme", theme: theme === "dark" ? "light" : "dark" });
  });

  // Cards waiting for their View (or text result), by view id.
  var pendingCards = new Map();

  function pending(cmd) {
    var card = el("section", "card pending");
    var head = el("header");
    head.append(el("span", "title", cmd.title));
    card.append(head, el("div", "spinner", "Calling " + cmd.title + "…"));
    card.setAttribute("aria-busy", "true");
    pendingCards.set(cmd.view, card);
    stream.append(card);
    card.scrollIntoView({ block: "nearest" });
  }

  function takePending(view) {
    var card = pendingCards.get(view);
    pendingCards.delete(view);
    return card;
  }

  function mount(cmd) {
    var placeholder = takePending(cmd.view);
    var card = el("section", "card");
    card.setAttribute("aria-label", cmd.title);
    card.dataset.view = cmd.view;
    var head = el("header");
    var origin = el("span", "origin", cmd.server);
    origin.title = "Sandboxed App from " + cmd.server + " (" + cmd.origin + ")";
    var close = el("button", "ghost", "✕");
    close.type = "button";
    close.setAttribute("aria-label", "Close " + cmd.title);
    close.addEventListener("click", function () { send({ kind: "close", view: cmd.view }); });
    head.append(el("span", "title", cmd.title), origin, close);
    var frame = document.createElement("iframe");
    // Attributes before insertion: sandbox and allow apply from the first load.
    frame.setAttribute("sandbox", cmd.sandbox);
    if (cmd.allow) frame.setAttribute("allow", cmd.allow);
    frame.setAttribute("title", cmd.title);
    frame.style.colorScheme = theme;
    frame.src = cmd.src;
    views.set(cmd.view, { frame: frame, origin: cmd.origin, card: card, height: 240 });
    card.append(head, frame);
    if (placeholder) placeholder.replaceWith(card); else stream.append(card);
    card.scrollIntoView({ block: "nearest" });
  }

  function post(cmd) {
    var v = views.get(cmd.view);
    if (!v || !v.frame.contentWindow) return;
    v.frame.contentWindow.postMessage(cmd.msg, v.origin);
  }

  function resize(cmd) {
    var v = views.get(cmd.view);
    if (!v || typeof cmd.height !== "number") return;
    v.height = cmd.height;
    v.frame.style.height = cmd.height + "px";
  }

  function display(cmd) {
    var v = views.get(cmd.view);
    if (!v) return;
    v.card.classList.toggle("fullscreen", cmd.mode === "fullscreen");
    v.card.classList.toggle("pip", cmd.mode === "pip");
    document.body.classList.toggle("pip", cmd.mode === "pip");
    if (cmd.mode === "inline") v.frame.style.height = v.height + "px";
  }

  function unmount(cmd) {
    var v = views.get(cmd.view);
    if (!v) return;
    views.delete(cmd.view);
    if (v.card.classList.contains("pip")) document.body.classList.remove("pip");
    v.card.remove();
  }

  function text(cmd) {
    var placeholder = cmd.view ? takePending(cmd.view) : null;
    var card = el("section", "card");
    var head = el("header");
    head.append(el("span", "title", cmd.title));
    card.append(head, el("pre", cmd.error ? "text error" : "text", cmd.text));
    if (placeholder) placeholder.replaceWith(card); else stream.append(card);
  }

  // The tool picker: a form per tool, generated from its inputSchema.
  var toolsByName = new Map();
  var selected = null;

  function tools(cmd) {
    document.getElementById("picker").hidden = false;
    document.getElementById("picker-server").textContent = cmd.server;
    var list = document.getElementById("tools");
    list.textContent = "";
    cmd.tools.forEach(function (t) {
      toolsByName.set(t.name, t);
      var li = el("li");
      var b = el("button", "", t.title || t.name);
      b.type = "button";
      b.dataset.tool = t.name;
      b.setAttribute("aria-pressed", "false");
      if (t.hasUi) b.append(el("span", "badge", "App"));
      b.title = t.description || t.name;
      b.addEventListener("click", function () { selectTool(t.name); });
      li.append(b);
      list.append(li);
    });
  }

  function fieldFor(name, schema, required) {
    var wrap = el("div", "field");
    var label = el("label", "", name + (required ? " *" : ""));
    var id = "arg-" + name;
    label.htmlFor = id;
    if (schema.description) label.append(el("span", "hint", " " + schema.description));
    var input;
    var type = Array.isArray(schema.type) ? schema.type.find(function (x) { return x !== "null"; }) : schema.type;
    if (Array.isArray(schema.enum)) {
      input = el("select");
      if (!required) input.append(el("option", "", ""));
      schema.enum.forEach(function (v) { var o = el("option", "", String(v)); o.value = JSON.stringify(v); input.append(o); });
      if (schema.default !== undefined) input.value = JSON.stringify(schema.default);
      input.dataset.kind = "enum";
    } else if (type === "boolean") {
      input = el("input");
      input.type = "checkbox";
      input.checked = schema.default === true;
      input.dataset.kind = "boolean";
    } else if (type === "number" || type === "integer") {
      input = el("input");
      input.type = "number";
      if (type === "integer") input.step = "1";
      if (schema.default !== undefined) input.value = String(schema.default);
      input.dataset.kind = type;
    } else if (type === "object" || type === "array" || type === undefined) {
      input = el("textarea");
      input.placeholder = type === "array" ? "[ ]" : "{ }";
      if (schema.default !== undefined) input.value = JSON.stringify(schema.default, null, 2);
      input.dataset.kind = "json";
    } else {
      input = el("input");
      input.type = "text";
      if (schema.default !== undefined) input.value = String(schema.default);
      input.dataset.kind = "string";
    }
    input.id = id;
    input.name = name;
    input.dataset.required = required ? "1" : "";
    wrap.append(label, input);
    return wrap;
  }

  function selectTool(name) {
    var t = toolsByName.get(name);
    if (!t) return;
    selected = t;
    document.querySelectorAll("#tools button").forEach(function (b) { b.setAttribute("aria-pressed", String(b.dataset.tool === name)); });
    var schema = t.inputSchema || {};
    var props = schema.properties || {};
    var required = schema.required || [];
    var fields = document.getElementById("form-fields");
    fields.textContent = "";
    Object.keys(props).forEach(function (k) { fields.append(fieldFor(k, props[k] || {}, required.indexOf(k) >= 0)); });
    document.getElementById("form-title").textContent = t.title || t.name;
    document.getElementById("form-description").textContent = t.description || "";
    document.getElementById("form-error").textContent = "";
    document.getElementById("form").hidden = false;
    var first = fields.querySelector("input, select, textarea");
    (first || document.getElementById("form-call")).focus();
  }

  // Reads the form into arguments; throws a message for a person when something is wrong.
  function readArguments() {
    var args = {};
    document.querySelectorAll("#form-fields [name]").forEach(function (input) {
      var name = input.name, kind = input.dataset.kind, required = input.dataset.required === "1";
      var raw = input.value;
      if (kind === "boolean") { args[name] = input.checked; return; }
      if (raw === "") {
        if (required) throw name + " is required";
        return;
      }
      if (kind === "enum") args[name] = JSON.parse(raw);
      else if (kind === "integer") {
        if (!/^-?\d+$/.test(raw)) throw name + " must be a whole number";
        args[name] = parseInt(raw, 10);
      } else if (kind === "number") {
        var n = Number(raw);
        if (!isFinite(n)) throw name + " must be a number";
        args[name] = n;
      } else if (kind === "json") {
        try { args[name] = JSON.parse(raw); } catch (e) { throw name + " is not valid JSON"; }
      } else args[name] = raw;
    });
    return args;
  }

  document.getElementById("form").addEventListener("submit", function (e) {
    e.preventDefault();
    if (!selected) return;
    var errorLine = document.getElementById("form-error");
    try {
      var args = readArguments();
      errorLine.textContent = "";
      send({ kind: "call-tool", tool: selected.name, arguments: args });
    } catch (message) {
      errorLine.textContent = String(message);
    }
  });

  function message(cmd) {
    side.hidden = false;
    var item = el("li");
    item.append(el("strong", "", cmd.from + " (" + cmd.role + "): "), document.createTextNode(cmd.text));
    document.getElementById("messages").append(item);
  }

  function context(cmd) {
    side.hidden = false;
    var list = document.getElementById("contexts");
    var id = "ctx-" + cmd.view;
    var dd = document.getElementById(id);
    if (!dd) {
      list.append(el("dt", "", cmd.from));
      dd = el("dd");
      dd.id = id;
      list.append(dd);
    }
    dd.textContent = cmd.text === null ? "(cleared)" : cmd.text;
  }

  // Consent dialogs, one at a time; Enter accepts, Escape declines.
  var dialogs = [];
  var dialogBox = document.getElementById("dialog");
  var current = null;
  var lastFocus = null;

  function showNextDialog() {
    if (current || dialogs.length === 0) return;
    current = dialogs.shift();
    document.getElementById("dialog-title").textContent = current.title;
    document.getElementById("dialog-body").textContent = current.body;
    document.getElementById("dialog-accept").textContent = current.accept || "OK";
    lastFocus = document.activeElement;
    dialogBox.hidden = false;
    document.getElementById("dialog-accept").focus();
  }

  function answer(accepted) {
    if (!current) return;
    send({ kind: "answer", dialog: current.dialog, accepted: accepted });
    current = null;
    dialogBox.hidden = true;
    if (lastFocus && lastFocus.focus) lastFocus.focus();
    showNextDialog();
  }

  document.getElementById("dialog-accept").addEventListener("click", function () { answer(true); });
  document.getElementById("dialog-reject").addEventListener("click", function () { answer(false); });
  document.addEventListener("keydown", function (e) {
    if (current && e.key === "Escape") { e.preventDefault(); answer(false); }
    if (e.ctrlKey && e.shiftKey && (e.key === "L" || e.key === "l")) {
      e.preventDefault();
      document.getElementById("theme").click();
    }
  });

  var handlers = {
    mount: mount, post: post, resize: resize, unmount: unmount, text: text, display: display,
    pending: pending, tools: tools,
    message: message, context: context, theme: setTheme,
    confirm: function (cmd) { dialogs.push(cmd); showNextDialog(); },
    status: function (cmd) { setStatus(cmd.text, cmd.error); }
  };

  window.addEventListener("message", function (event) {
    // Check: a message counts only if it comes from a proxy frame we mounted, on its origin.
    for (var entry of views) {
      var id = entry[0], v = entry[1];
      if (event.source !== v.frame.contentWindow) continue;
      if (event.origin !== v.origin) {
        send({ kind: "dropped", view: id, reason: "message from unexpected origin " + event.origin });
        return;
      }
      if (event.data && typeof event.data === "object" && event.data.mcpHostDiagnostic) {
        send({ kind: "diagnostic", view: id, data: event.data.mcpHostDiagnostic });
        return;
      }
      var textMsg;
      try {
        textMsg = JSON.stringify(event.data);
      } catch (e) {
        send({ kind: "dropped", view: id, reason: "message is not serialisable: " + e });
        return;
      }
      send({ kind: "view", view: id, msg: textMsg === undefined ? "undefined" : textMsg });
      return;
    }
  });

  Object.defineProperty(window, "__mcpShell", {
    value: Object.freeze({
      dispatch: function (cmd) {
        var h = handlers[cmd.op];
        if (h) h(cmd);
      }
    })
  });

  send({ kind: "ready" });
})();
