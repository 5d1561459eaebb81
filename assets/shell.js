// The host shell: trusted UI on mcp-host://app. It never renders server-provided HTML itself
// (text only, via textContent). Views are not in this page: each has a webview of its own, in its
// server's web process, which the host places over the View's slot in its card. This page tells
// the host where the slots are (reportLayout) whenever they move.
//
// To Rust it speaks only through window.__mcpHostSend, which the host's main-frame init script
// defines with the per-launch IPC secret in a closure. From Rust it receives commands through
// window.__mcpShell.dispatch(command).
(function () {
  "use strict";

  var send = window.__mcpHostSend;
  var views = new Map(); // view id -> { slot, origin, card, height }
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
  }

  document.getElementById("theme").addEventListener("click", function () {
    send({ kind: "theme", theme: theme === "dark" ? "light" : "dark" });
  });

  // Cards waiting for their View (or text result), by view id.
  var pendingCards = new Map();

  // The conversation: turns in the stream; the model's answer grows as it streams. A tool's
  // card (a View, a result) ends the answer's card: what the model says next starts a new one.
  var answerCard = null;
  var MAX_ANSWER_CHARS = 200000;
  function turnCard(role, title, text) {
    var card = el("section", "card turn " + role);
    var head = el("header");
    head.append(el("span", "title", title));
    card.append(head, el("div", "turn-text", text));
    stream.append(card);
    card.scrollIntoView({ block: "nearest" });
    return card;
  }
  // Stop is offered while a turn runs (a turn starts with the person's or an App's words).
  var stopButton = document.getElementById("prompt-stop");
  var turnsRunning = 0;
  stopButton.addEventListener("click", function () { send({ kind: "stop-turn" }); });
  // Retry and Edit act on the last turn, once the model is done with it.
  var retryButton = document.getElementById("prompt-retry");
  var editButton = document.getElementById("prompt-edit");
  var lastPrompt = null;
  var editing = false;
  function turnButtons() {
    var idle = turnsRunning === 0;
    retryButton.hidden = !idle || lastPrompt === null;
    editButton.hidden = !idle || lastPrompt === null;
  }
  retryButton.addEventListener("click", function () { send({ kind: "retry" }); });
  editButton.addEventListener("click", function () {
    editing = true;
    promptText.value = lastPrompt || "";
    promptText.placeholder = "Your last prompt, edited: Send replaces it";
    promptText.focus();
  });
  function chat(cmd) {
    turnsRunning++;
    stopButton.hidden = false;
    answerCard = null;
    if (cmd.role === "user" && !cmd.from) lastPrompt = cmd.text;
    turnCard(cmd.role, cmd.from ? "From " + cmd.from : "You", cmd.text);
    turnButtons();
  }
  // The model's Markdown, drawn with elements and text nodes only (never as HTML): paragraphs,
  // headings, lists, fenced code, inline code, bold and italics. Redrawn at most once a frame.
  function inline(parent, text) {
    var re = /(`[^`\n]+`|\*\*[^*\n]+\*\*|\*[^*\s][^*\n]*\*|_[^_\s][^_\n]*_)/g;
    var at = 0, m;
    while ((m = re.exec(text))) {
      if (m.index > at) parent.append(document.createTextNode(text.slice(at, m.index)));
      var t = m[0];
      if (t[0] === "`") parent.append(el("code", "", t.slice(1, -1)));
      else if (t.slice(0, 2) === "**") parent.append(el("strong", "", t.slice(2, -2)));
      else parent.append(el("em", "", t.slice(1, -1)));
      at = m.index + t.length;
    }
    if (at < text.length) parent.append(document.createTextNode(text.slice(at)));
  }
  function drawMarkdown(target, raw) {
    target.textContent = "";
    var lines = raw.split("\n");
    var para = null, list = null, code = null;
    function close() { para = null; list = null; }
    lines.forEach(function (line) {
      if (code) {
        if (/^\s*```/.test(line)) { code = null; return; }
        code.textContent += (code.textContent ? "\n" : "") + line;
        return;
      }
      if (/^\s*```/.test(line)) {
        close();
        var pre = el("pre", "turn-code");
        code = el("code");
        pre.append(code);
        target.append(pre);
        return;
      }
      var h = /^(#{1,4})\s+(.*)$/.exec(line);
      var bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
      var number = /^\s*\d+[.)]\s+(.*)$/.exec(line);
      if (!line.trim()) { close(); return; }
      if (h) { close(); var hd = el("h4", "turn-heading"); inline(hd, h[2]); target.append(hd); return; }
      if (bullet || number) {
        var tag = bullet ? "UL" : "OL";
        if (!list || list.tagName !== tag) { para = null; list = el(tag.toLowerCase()); target.append(list); }
        var li = el("li");
        inline(li, (bullet || number)[1]);
        list.append(li);
        return;
      }
      list = null;
      if (!para) { para = el("p"); target.append(para); } else para.append(document.createTextNode("\n"));
      inline(para, line);
    });
  }
  function chatText(cmd) {
    if (!answerCard) answerCard = turnCard("assistant", "Model", "");
    var card = answerCard;
    card.raw = card.raw || "";
    if (card.raw.length < MAX_ANSWER_CHARS) card.raw += cmd.text;
    if (card.drawQueued) return;
    card.drawQueued = true;
    requestAnimationFrame(function () {
      card.drawQueued = false;
      drawMarkdown(card.querySelector(".turn-text"), card.raw);
    });
  }
  function chatEnd(cmd) {
    turnsRunning = Math.max(0, turnsRunning - 1);
    stopButton.hidden = turnsRunning === 0;
    turnButtons();
    if (cmd.error) {
      if (!answerCard) answerCard = turnCard("assistant", "Model", "");
      answerCard.append(el("div", "turn-error", cmd.error));
    }
    answerCard = null;
  }
  function conversations(cmd) {
    var section = document.getElementById("conversations");
    var list = document.getElementById("conversation-list");
    list.textContent = "";
    (cmd.list || []).forEach(function (c) {
      var b = el("button", "tool", c.title);
      b.type = "button";
      b.title = "Reopen this conversation (" + c.id + ")";
      b.dataset.conversation = c.id;
      b.addEventListener("click", function () { send({ kind: "reopen", id: c.id }); });
      var rename = el("button", "ghost", "✎");
      rename.type = "button";
      rename.dataset.rename = c.id;
      rename.setAttribute("aria-label", "Rename " + c.title);
      var remove = el("button", "ghost", "✕");
      remove.type = "button";
      remove.dataset.delete = c.id;
      remove.setAttribute("aria-label", "Delete " + c.title);
      var li = el("li", "conversation");
      rename.addEventListener("click", function () {
        var input = el("input");
        input.value = c.title;
        input.setAttribute("aria-label", "New title for " + c.title);
        input.dataset.renaming = c.id;
        input.addEventListener("keydown", function (e) {
          if (e.key === "Enter") { e.preventDefault(); send({ kind: "rename-conversation", id: c.id, title: input.value }); }
          if (e.key === "Escape") conversations(cmd);
        });
        li.textContent = "";
        li.append(input);
        input.focus();
      });
      // A second click deletes: the first asks.
      remove.addEventListener("click", function () {
        if (remove.dataset.armed) { send({ kind: "delete-conversation", id: c.id }); return; }
        remove.dataset.armed = "1";
        remove.textContent = "Delete?";
      });
      li.append(b, rename, remove);
      list.append(li);
    });
    section.hidden = !list.children.length;
  }
  // Another conversation is reopened: this one's cards go (the Views close on their own).
  function chatClear() {
    answerCard = null;
    turnsRunning = 0;
    stopButton.hidden = true;
    stream.querySelectorAll(".card:not([data-view])").forEach(function (card) { card.remove(); });
  }
  var promptForm = document.getElementById("prompt");
  var promptText = document.getElementById("prompt-text");
  var modelButton = document.getElementById("prompt-model");
  var modelName = document.getElementById("model-name");
  function chatReady(cmd) {
    promptForm.hidden = false;
    promptText.placeholder = "Message " + cmd.model;
    modelButton.hidden = false;
    modelButton.title = "Go on with another model of the same endpoint (now " + cmd.model + ")";
  }
  modelButton.addEventListener("click", function () {
    modelName.hidden = !modelName.hidden;
    if (!modelName.hidden) modelName.focus();
  });
  modelName.addEventListener("keydown", function (e) {
    if (e.key === "Enter") {
      e.preventDefault();
      if (modelName.value.trim()) send({ kind: "switch-model", name: modelName.value.trim() });
      modelName.value = "";
      modelName.hidden = true;
    }
    if (e.key === "Escape") modelName.hidden = true;
  });
  // The servers' prompts as slash commands, and their resources to attach (commands.rs).
  var commands = { prompts: [], resources: [] };
  var attached = [];
  var chosenPrompt = null;
  var slashList = document.getElementById("slash-list");
  var attachList = document.getElementById("attach-list");
  var promptArgs = document.getElementById("prompt-args");
  function setCommands(cmd) {
    commands.prompts = cmd.prompts || [];
    commands.resources = cmd.resources || [];
    document.getElementById("prompt-attach").hidden = commands.resources.length === 0;
    renderSlash();
  }
  function choice(label, badge, title, onPick) {
    var li = el("li");
    var b = el("button", "", label);
    b.type = "button";
    b.append(el("span", "badge", badge));
    if (title) b.title = title;
    b.addEventListener("click", onPick);
    li.append(b);
    return li;
  }
  function renderSlash() {
    var t = promptText.value;
    slashList.textContent = "";
    if (t.charAt(0) === "/" && !chosenPrompt) {
      var q = t.slice(1).trim().toLowerCase();
      commands.prompts.filter(function (p) { return p.name.toLowerCase().indexOf(q) === 0; }).slice(0, 20).forEach(function (p) {
        var li = choice("/" + p.name, p.label, p.description || p.title || "", function () { choosePrompt(p); });
        li.firstChild.dataset.prompt = p.name;
        li.firstChild.dataset.server = p.server;
        slashList.append(li);
      });
    }
    slashList.hidden = slashList.children.length === 0;
  }
  promptText.addEventListener("input", renderSlash);
  function choosePrompt(p) {
    chosenPrompt = p;
    promptArgs.textContent = "";
    promptArgs.append(el("p", "", "/" + p.name + " from " + p.label + (p.description ? ": " + p.description : "")));
    (p.arguments || []).forEach(function (a) {
      var label = el("label", "field", a.name + (a.required ? " (required)" : ""));
      var input = el("input");
      input.name = a.name;
      input.id = "prompt-arg-" + a.name;
      input.required = !!a.required;
      if (a.description) input.placeholder = a.description;
      label.append(input);
      promptArgs.append(label);
    });
    var run = el("button", "primary", "Run");
    run.type = "button";
    run.id = "prompt-run";
    run.addEventListener("click", runPrompt);
    var cancel = el("button", "", "Cancel");
    cancel.type = "button";
    cancel.addEventListener("click", clearPrompt);
    promptArgs.append(run, cancel);
    promptArgs.hidden = false;
    slashList.hidden = true;
    var first = promptArgs.querySelector("input");
    (first || run).focus();
  }
  function clearPrompt() {
    chosenPrompt = null;
    promptArgs.textContent = "";
    promptArgs.hidden = true;
    promptText.focus();
  }
  function runPrompt() {
    var args = {};
    var missing = null;
    promptArgs.querySelectorAll("input").forEach(function (i) {
      if (i.value) args[i.name] = i.value;
      else if (i.required && !missing) missing = i.name;
    });
    if (missing) { setStatus("The prompt needs " + missing, true); return; }
    send({ kind: "run-prompt", server: chosenPrompt.server, name: chosenPrompt.name, arguments: args });
    promptText.value = "";
    clearPrompt();
    renderSlash();
  }
  function renderAttached() {
    var box = document.getElementById("attachments");
    box.textContent = "";
    attached.forEach(function (a, i) {
      var chip = el("span", "chip", a.name + " (" + a.label + ")");
      var drop = el("button", "ghost", "✕");
      drop.type = "button";
      drop.setAttribute("aria-label", "Remove " + a.name);
      drop.addEventListener("click", function () { attached.splice(i, 1); renderAttached(); });
      chip.append(drop);
      box.append(chip);
    });
  }
  document.getElementById("prompt-attach").addEventListener("click", function () {
    attachList.textContent = "";
    if (attachList.hidden) {
      commands.resources.forEach(function (r) {
        var li = choice(r.name, r.label, r.uri, function () {
          if (attached.length < 5 && !attached.some(function (a) { return a.server === r.server && a.uri === r.uri; })) attached.push(r);
          attachList.hidden = true;
          renderAttached();
          promptText.focus();
        });
        li.firstChild.dataset.uri = r.uri;
        attachList.append(li);
      });
    }
    attachList.hidden = !attachList.hidden || attachList.children.length === 0;
  });
  promptForm.addEventListener("submit", function (e) {
    e.preventDefault();
    var text = promptText.value.trim();
    if (!text) return;
    // `/name` of a prompt: its arguments are asked for first.
    if (text.charAt(0) === "/") {
      var named = commands.prompts.filter(function (p) { return "/" + p.name === text; })[0];
      if (named) { choosePrompt(named); return; }
    }
    send({ kind: "prompt", text: text, edit: editing, attach: attached.map(function (a) { return { server: a.server, uri: a.uri }; }) });
    editing = false;
    promptText.value = "";
    attached = [];
    renderAttached();
    renderSlash();
  });
  promptText.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); promptForm.requestSubmit(); }
  });

  function pending(cmd) {
    answerCard = null;
    var card = el("section", "card pending");
    card.dataset.pending = cmd.view;
    var head = el("header");
    // A View whose UI never arrives can be given up on at once.
    var cancel = el("button", "ghost", "Cancel");
    cancel.type = "button";
    cancel.setAttribute("aria-label", "Cancel " + cmd.title);
    cancel.addEventListener("click", function () { send({ kind: "close", view: cmd.view }); });
    head.append(el("span", "title", cmd.title), cancel);
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
    // A View that wakes takes its sleeping card's place (and the person's scroll stays put).
    var sleeper = cmd.replaces ? views.get(cmd.replaces) : null;
    if (sleeper) {
      views.delete(cmd.replaces);
      resizes.unobserve(sleeper.slot);
    }
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
    // The View's webview is placed over this slot (it is not part of this page).
    var slot = el("div", "slot");
    slot.setAttribute("role", "group");
    slot.setAttribute("aria-label", cmd.title);
    // The first height comes from Rust (a share of the window); the View's reports change it.
    var height = typeof cmd.height === "number" ? cmd.height : 240;
    slot.style.height = height + "px";
    views.set(cmd.view, { slot: slot, origin: cmd.origin, card: card, height: height });
    if (width) card.style.maxWidth = (width + 2) + "px";
    addViewOption(cmd.view, cmd.title);
    card.append(head, slot);
    resizes.observe(slot);
    if (sleeper) {
      sleeper.card.replaceWith(card);
      return;
    }
    if (placeholder) placeholder.replaceWith(card); else stream.append(card);
    card.scrollIntoView({ block: "nearest" });
  }

  // A sleeping View: its webview is gone, its card stays as tall as it was and says so. A
  // restarted shell makes the card again (title and height given); it wakes when seen again.
  function asleep(cmd) {
    var v = views.get(cmd.view);
    if (!v && typeof cmd.title === "string") {
      mount({ view: cmd.view, title: cmd.title, server: "", origin: "", height: cmd.height });
      v = views.get(cmd.view);
      v.card.querySelector(".origin").textContent = "";
    }
    if (!v) return;
    v.card.classList.add("asleep");
    v.slot.textContent = "";
    v.slot.append(el("p", "asleep-note", cmd.text));
    queueLayout();
  }

  function resize(cmd) {
    var v = views.get(cmd.view);
    if (!v || typeof cmd.height !== "number") return;
    v.height = cmd.height;
    v.slot.style.height = cmd.height + "px";
  }

  // A View whose web process does not answer: the card says so, with Wait and Stop. This is
  // above the View's slot, so the View cannot cover it.
  function hung(cmd) {
    var v = views.get(cmd.view);
    if (!v) return;
    var bar = v.card.querySelector(".hung");
    if (!cmd.hung) {
      if (bar) bar.remove();
      return;
    }
    if (bar) return;
    bar = el("div", "hung");
    bar.setAttribute("role", "alert");
    var wait = el("button", "", "Wait");
    wait.type = "button";
    wait.addEventListener("click", function () { send({ kind: "wait", view: cmd.view }); });
    var stop = el("button", "danger", "Stop it");
    stop.type = "button";
    stop.addEventListener("click", function () { send({ kind: "stop-app", view: cmd.view }); });
    bar.append(el("span", "", cmd.text), wait, stop);
    v.slot.before(bar);
  }

  function display(cmd) {
    var v = views.get(cmd.view);
    if (!v) return;
    v.card.classList.toggle("fullscreen", cmd.mode === "fullscreen");
    v.card.classList.toggle("pip", cmd.mode === "pip");
    document.body.classList.toggle("pip", cmd.mode === "pip");
    if (cmd.mode === "inline") v.slot.style.height = v.height + "px";
    // A way back that the View cannot cover or remove: the shell's own bar above the View's
    // slot (the View's webview is placed over the slot only).
    var bar = v.card.querySelector(".mode-bar");
    if (cmd.mode === "inline") {
      if (bar) bar.remove();
    } else if (!bar) {
      bar = el("div", "mode-bar");
      var exit = el("button", "mode-exit", cmd.mode === "pip" ? "Back to the window" : "Exit full screen");
      exit.type = "button";
      exit.addEventListener("click", function () { send({ kind: "inline", view: cmd.view }); });
      bar.append(exit);
      v.slot.before(bar);
    }
  }

  function unmount(cmd) {
    var placeholder = takePending(cmd.view);
    if (placeholder) placeholder.remove();
    var v = views.get(cmd.view);
    if (!v) return;
    views.delete(cmd.view);
    resizes.unobserve(v.slot);
    if (v.card.classList.contains("pip")) document.body.classList.remove("pip");
    v.card.remove();
  }

  function text(cmd) {
    answerCard = null;
    var placeholder = cmd.view ? takePending(cmd.view) : null;
    var card = el("section", "card");
    var head = el("header");
    head.append(el("span", "title", cmd.title));
    card.append(head, el("pre", cmd.error ? "text error" : "text", cmd.text));
    if (placeholder) placeholder.replaceWith(card); else stream.append(card);
  }

  // The tool picker: every server with its status, and a form per tool from its inputSchema.
  var toolsByKey = new Map(); // server + "\u0000" + tool -> { server, tool }
  var selected = null;

  // The approval modes (conversation::Approval), in the order the person reads them.
  var APPROVALS = [["changes", "Ask before changes"], ["always", "Ask before every call"], ["never", "Never ask for its own data"]];
  function servers(cmd) {
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
        line.append(el("span", "server-name", labelOf(s)), el("span", "state", s.status));
        if (s.protocol) line.title = "MCP " + s.protocol;
        head.append(line);
        if (s.reason) {
          var why = el("p", "server-reason", s.reason);
          if (typeof s.retryIn === "number" && s.retryIn > 0) why.textContent += " (restarts when needed, after " + s.retryIn + " s)";
          head.append(why);
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
          var restart = el("button", "restart", "Restart now");
          restart.type = "button";
          restart.dataset.restart = s.name;
          restart.addEventListener("click", function () { send({ kind: "restart", server: s.name }); });
          head.append(restart);
        }
        list.append(head);
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
  }

  // Choices of an enum-like schema: `enum`, or `oneOf`/`anyOf` of `{const, title}`.
  function choicesOf(schema) {
    if (Array.isArray(schema.enum)) {
      return schema.enum.map(function (v, i) {
        var names = schema.enumNames || [];
        return { value: v, label: names[i] !== undefined ? String(names[i]) : String(v) };
      });
    }
    var alts = schema.oneOf || schema.anyOf;
    if (Array.isArray(alts) && alts.length && alts.every(function (a) { return a && a.const !== undefined; })) {
      return alts.map(function (a) { return { value: a.const, label: a.title || String(a.const) }; });
    }
    return null;
  }

  var inputTypes = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

  function fieldFor(prefix, name, schema, required) {
    var wrap = el("div", "field");
    var label = el("label", "", (schema.title || name) + (required ? " *" : ""));
    var id = prefix + name;
    label.htmlFor = id;
    if (schema.description) label.append(el("span", "hint", " " + schema.description));
    var input;
    var type = Array.isArray(schema.type) ? schema.type.find(function (x) { return x !== "null"; }) : schema.type;
    var choices = choicesOf(schema);
    var itemChoices = type === "array" && schema.items ? choicesOf(schema.items) : null;
    if (itemChoices) {
      // Multi-select: a checkbox per choice.
      input = el("fieldset", "multi");
      input.dataset.kind = "multi";
      input.dataset.values = JSON.stringify(itemChoices.map(function (c) { return c.value; }));
      var preset = Array.isArray(schema.default) ? schema.default : [];
      itemChoices.forEach(function (c, i) {
        var box = el("input");
        box.type = "checkbox";
        box.id = id + "-" + i;
        box.dataset.index = String(i);
        box.checked = preset.indexOf(c.value) >= 0;
        var l = el("label", "choice", c.label);
        l.prepend(box);
        input.append(l);
      });
      if (schema.minItems !== undefined) input.dataset.min = String(schema.minItems);
      if (schema.maxItems !== undefined) input.dataset.max = String(schema.maxItems);
    } else if (choices) {
      input = el("select");
      if (!required) input.append(el("option", "", ""));
      choices.forEach(function (c) { var o = el("option", "", c.label); o.value = JSON.stringify(c.value); input.append(o); });
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
      if (type === "integer") input.step = "1"; else input.step = "any";
      if (schema.minimum !== undefined) input.min = String(schema.minimum);
      if (schema.maximum !== undefined) input.max = String(schema.maximum);
      if (schema.default !== undefined) input.value = String(schema.default);
      input.dataset.kind = type;
    } else if (type === "object" || type === "array" || type === undefined) {
      input = el("textarea");
      input.placeholder = type === "array" ? "[ ]" : "{ }";
      if (schema.default !== undefined) input.value = JSON.stringify(schema.default, null, 2);
      input.dataset.kind = "json";
    } else {
      input = el("input");
      input.type = inputTypes[schema.format] || "text";
      if (schema.default !== undefined) input.value = String(schema.default);
      input.dataset.kind = "string";
    }
    input.id = id;
    input.name = name;
    input.dataset.required = required ? "1" : "";
    input.dataset.schema = JSON.stringify(schema);
    wrap.append(label, input);
    return wrap;
  }

  function fillFields(container, prefix, schema) {
    var props = (schema && schema.properties) || {};
    var required = (schema && schema.required) || [];
    container.textContent = "";
    Object.keys(props).forEach(function (k) { container.append(fieldFor(prefix, k, props[k] || {}, required.indexOf(k) >= 0)); });
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

  // Reads a form's fields into an object; throws a message for a person when something is wrong.
  function readFields(container) {
    var args = {};
    container.querySelectorAll(":scope > .field > [name]").forEach(function (input) {
      var name = input.name, kind = input.dataset.kind, required = input.dataset.required === "1";
      var schema = JSON.parse(input.dataset.schema || "{}");
      var label = schema.title || name;
      if (kind === "boolean") { args[name] = input.checked; return; }
      if (kind === "multi") {
        var values = JSON.parse(input.dataset.values);
        var picked = [];
        input.querySelectorAll("input[type=checkbox]").forEach(function (box) { if (box.checked) picked.push(values[Number(box.dataset.index)]); });
        if (input.dataset.min !== undefined && picked.length < Number(input.dataset.min)) throw label + ": pick at least " + input.dataset.min;
        if (input.dataset.max !== undefined && picked.length > Number(input.dataset.max)) throw label + ": pick at most " + input.dataset.max;
        if (picked.length || required) args[name] = picked;
        return;
      }
      var raw = input.value;
      if (raw === "") {
        if (required) throw label + " is required";
        return;
      }
      if (kind === "enum") args[name] = JSON.parse(raw);
      else if (kind === "integer" || kind === "number") {
        if (kind === "integer" && !/^-?\d+$/.test(raw)) throw label + " must be a whole number";
        var n = Number(raw);
        if (!isFinite(n)) throw label + " must be a number";
        if (schema.minimum !== undefined && n < schema.minimum) throw label + " must be at least " + schema.minimum;
        if (schema.maximum !== undefined && n > schema.maximum) throw label + " must be at most " + schema.maximum;
        args[name] = kind === "integer" ? parseInt(raw, 10) : n;
      } else if (kind === "json") {
        try { args[name] = JSON.parse(raw); } catch (e) { throw label + " is not valid JSON"; }
      } else {
        if (schema.minLength !== undefined && raw.length < schema.minLength) throw label + " needs at least " + schema.minLength + " characters";
        if (schema.maxLength !== undefined && raw.length > schema.maxLength) throw label + " takes at most " + schema.maxLength + " characters";
        if (input.validity && input.validity.typeMismatch) throw label + " is not a valid " + (schema.format || "value");
        args[name] = raw;
      }
    });
    return args;
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

  // Side panels and the log keep their newest entries only: a View or server can add entries
  // without end, the page must not grow without end.
  var MAX_MESSAGES = 200, MAX_CONTEXTS = 100, MAX_LOG_ROWS = 500;

  function trim(list, max, per) {
    while (list.children.length > max * per) {
      for (var i = 0; i < per; i++) list.firstElementChild.remove();
    }
  }

  function message(cmd) {
    side.hidden = false;
    var item = el("li");
    item.append(el("strong", "", cmd.from + " (" + cmd.role + "): "), document.createTextNode(cmd.text));
    var list = document.getElementById("messages");
    list.append(item);
    trim(list, MAX_MESSAGES, 1);
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
      trim(list, MAX_CONTEXTS, 2);
    }
    dd.textContent = cmd.text === null ? "(cleared)" : cmd.text;
  }

  // Consent dialogs, one at a time; Enter accepts, Escape declines.
  var dialogs = [];
  var dialogBox = document.getElementById("dialog");
  var current = null;
  var lastFocus = null;

  var elicitBox = document.getElementById("elicit");

  function fillSubject(list, lines) {
    list.textContent = "";
    (lines || []).forEach(function (line) {
      var li = el("li", "", line);
      li.title = line;
      list.append(li);
    });
  }

  function showElicit(cmd) {
    document.getElementById("elicit-title").textContent = cmd.title || "A server asks you a question";
    fillSubject(document.getElementById("elicit-subject"), cmd.subject || [cmd.server]);
    document.getElementById("elicit-source").textContent = cmd.source || "";
    document.getElementById("elicit-message").textContent = cmd.message;
    var urlLine = document.getElementById("elicit-url");
    urlLine.textContent = cmd.url || "";
    urlLine.hidden = !cmd.url;
    var fields = document.getElementById("elicit-fields");
    fillFields(fields, "elicit-", cmd.schema || {});
    document.getElementById("elicit-accept").textContent = cmd.url ? "Open" : "Submit";
    document.getElementById("elicit-error").textContent = "";
    elicitBox.hidden = false;
    armAccept(document.getElementById("elicit-accept"));
    // Focus never starts on the button that opens something.
    var first = fields.querySelector("input, select, textarea");
    (first || document.getElementById("elicit-cancel")).focus();
  }

  // The accept button of a fresh dialog takes clicks only after a moment: a View cannot make a
  // dialog appear under a click or key press the person meant for the View.
  var ARM_MS = 600;
  var arming = 0;
  function armAccept(button) {
    // Only the newest dialog's timer may arm the button: a dialog answered within ARM_MS must
    // not arm the one shown after it early.
    var mine = ++arming;
    button.disabled = true;
    setTimeout(function () { if (mine === arming) button.disabled = false; }, ARM_MS);
  }

  function answerElicit(action) {
    if (!current || current.op !== "elicit") return;
    var content = {};
    if (action === "accept" && !current.url) {
      try {
        content = readFields(document.getElementById("elicit-fields"));
      } catch (message) {
        document.getElementById("elicit-error").textContent = String(message);
        return;
      }
    }
    send({ kind: "elicit-answer", dialog: current.dialog, action: action, content: content });
    closeCurrent();
  }

  function closeCurrent() {
    current = null;
    dialogBox.hidden = true;
    elicitBox.hidden = true;
    if (lastFocus && lastFocus.focus) lastFocus.focus();
    showNextDialog();
    if (!current) send({ kind: "keyboard", dialog: false });
  }

  document.getElementById("elicit-form").addEventListener("submit", function (e) { e.preventDefault(); answerElicit("accept"); });
  document.getElementById("elicit-decline").addEventListener("click", function () { answerElicit("decline"); });
  document.getElementById("elicit-cancel").addEventListener("click", function () { answerElicit("cancel"); });

  // Askers take turns: the next dialog is the oldest of the asker served longest ago, so one
  // server's questions never wait in front of another's.
  var served = new Map();
  var turn = 0;
  function askerOf(cmd) { return cmd.asker || cmd.server || ""; }
  function nextDialog() {
    var best = 0;
    for (var i = 1; i < dialogs.length; i++) {
      if ((served.get(askerOf(dialogs[i])) || 0) < (served.get(askerOf(dialogs[best])) || 0)) best = i;
    }
    var next = dialogs.splice(best, 1)[0];
    served.set(askerOf(next), ++turn);
    return next;
  }

  function showNextDialog() {
    if (current || dialogs.length === 0) return;
    current = nextDialog();
    // A dialog takes the keyboard from every View (the host moves the focus to this page and
    // keeps it here while a dialog is open): what the person types goes to the dialog.
    send({ kind: "keyboard", dialog: true });
    lastFocus = document.activeElement;
    if (current.op === "elicit") { showElicit(current); return; }
    document.getElementById("dialog-title").textContent = current.title;
    fillSubject(document.getElementById("dialog-subject"), current.subject);
    document.getElementById("dialog-source").textContent = current.source || "";
    document.getElementById("dialog-body").textContent = current.detail || "";
    document.getElementById("dialog-body").hidden = !current.detail;
    document.getElementById("dialog-accept").textContent = current.accept || "OK";
    // "For the rest of the session", where offered: never ticked in advance.
    document.getElementById("dialog-remember-row").hidden = !current.remember;
    document.getElementById("dialog-remember").checked = false;
    document.getElementById("dialog-remember-text").textContent = current.remember || "";
    lastFocus = document.activeElement;
    dialogBox.hidden = false;
    armAccept(document.getElementById("dialog-accept"));
    // Enter on a fresh dialog cancels: the safe answer has the focus.
    document.getElementById("dialog-reject").focus();
  }

  function answer(accepted) {
    if (!current || current.op === "elicit") return;
    var remember = !!current.remember && document.getElementById("dialog-remember").checked;
    send({ kind: "answer", dialog: current.dialog, accepted: accepted, remember: accepted && remember });
    closeCurrent();
  }

  document.getElementById("dialog-accept").addEventListener("click", function () { answer(true); });
  document.getElementById("dialog-reject").addEventListener("click", function () { answer(false); });
  document.addEventListener("keydown", function (e) {
    if (current && e.key === "Escape") {
      e.preventDefault();
      if (current.op === "elicit") answerElicit("cancel"); else answer(false);
    } else if (e.key === "Escape" && !stopButton.hidden) {
      e.preventDefault();
      stopButton.click();
    }
    if (e.ctrlKey && e.shiftKey && (e.key === "L" || e.key === "l")) {
      e.preventDefault();
      document.getElementById("theme").click();
    }
  });

  // Developer panel (preview): the live log, host-context controls, a notification editor, CSP.
  var dev = document.getElementById("dev");
  var devView = document.getElementById("dev-view");
  var logStore = [];
  var cspByView = {};
  var violationsByView = {};
  var width = null;

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

  function addViewOption(id, title) {
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
  function viewTools(cmd) {
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

  var handlers = {
    mount: mount, resize: resize, hung: hung, unmount: unmount, text: text, display: display, asleep: asleep,
    pending: pending, servers: servers,
    dev: function () { dev.hidden = false; side.classList.add("with-dev"); },
    log: function (cmd) {
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
    },
    csp: function (cmd) { cspByView[cmd.view] = cmd; renderCsp(); },
    "view-tools": viewTools,
    diagnostic: function (cmd) {
      if (cmd.kind !== "csp") return;
      var list = (violationsByView[cmd.view] = violationsByView[cmd.view] || []);
      if (list.length >= MAX_LOG_ROWS) list.shift();
      list.push(cmd.detail);
      renderCsp();
    },
    message: message, context: context, theme: setTheme,
    chat: chat, "chat-text": chatText, "chat-end": chatEnd, "chat-ready": chatReady,
    conversations: conversations, "chat-clear": chatClear, commands: setCommands,
    confirm: function (cmd) { dialogs.push(cmd); showNextDialog(); },
    elicit: function (cmd) { dialogs.push(cmd); showNextDialog(); },
    dismiss: function (cmd) {
      dialogs = dialogs.filter(function (d) { return d.dialog !== cmd.dialog; });
      if (current && current.dialog === cmd.dialog) closeCurrent();
    },
    status: function (cmd) { setStatus(cmd.text, cmd.error); }
  };

  // Where the Views go: each slot's rectangle in this page, and the rectangle they are clipped
  // to (the stream; in fullscreen and pip the one View's slot). No slot is reported while a
  // dialog is open (the dialog is above everything), or for a View behind another's fullscreen.
  // Reported after layout, once per frame at most, and only when something moved.
  var lastLayout = "";
  var layoutQueued = false;
  function queueLayout() {
    if (layoutQueued) return;
    layoutQueued = true;
    requestAnimationFrame(reportLayout);
  }
  function rectOf(node) {
    var r = node.getBoundingClientRect();
    return { x: r.left, y: r.top, w: r.width, h: r.height };
  }
  function reportLayout() {
    layoutQueued = false;
    var focus = null;
    views.forEach(function (v) {
      if (v.card.classList.contains("fullscreen") || v.card.classList.contains("pip")) focus = v;
    });
    var clip;
    if (focus) {
      clip = rectOf(focus.slot);
    } else {
      var s = stream.getBoundingClientRect();
      clip = { x: s.left + stream.clientLeft, y: s.top + stream.clientTop, w: stream.clientWidth, h: stream.clientHeight };
    }
    var modal = !document.getElementById("dialog").hidden || !document.getElementById("elicit").hidden;
    var slots = [];
    if (!modal) {
      views.forEach(function (v, id) {
        if (focus && v !== focus) return;
        var r = rectOf(v.slot);
        if (r.w < 1 || r.h < 1) return;
        if (r.y + r.h <= clip.y || r.y >= clip.y + clip.h || r.x + r.w <= clip.x || r.x >= clip.x + clip.w) return;
        slots.push({ view: id, x: r.x, y: r.y, w: r.w, h: r.h });
      });
    }
    reportSight(clip);
    var text = JSON.stringify([clip, slots]);
    if (text === lastLayout) return;
    lastLayout = text;
    send({ kind: "frames", clip: clip, slots: slots });
  }

  // Which Views are near sight: in the clip or within its height above or below it, whatever
  // covers them now (a dialog, another View's fullscreen). Views far from it may sleep.
  //
  // Sleeping is fair: a View that changes its height moves the cards after it, but that alone
  // never makes another View sleep or wake. What is near is worked out again only when the
  // person scrolls or resizes the window, or a card comes, goes or changes its display mode
  // (sightDirty); a scroll that comes right after a View's resize and no input of the person's
  // (the browser keeping the scroll position in range) is the View's doing and counts not.
  var lastSight = "";
  var sightDirty = true;
  var personAt = -Infinity;
  var resizedAt = -Infinity;
  var SIGHT_OPS = { mount: true, unmount: true, asleep: true, display: true, pending: true, text: true };
  function personActs() { personAt = performance.now(); }
  ["wheel", "keydown", "pointerdown", "touchstart"].forEach(function (type) {
    window.addEventListener(type, personActs, { capture: true, passive: true });
  });
  stream.addEventListener("scroll", function () {
    var now = performance.now();
    if (now - resizedAt > 250 || now - personAt < 1000) sightDirty = true;
  }, { passive: true });
  window.addEventListener("resize", function () { sightDirty = true; });
  function reportSight(clip) {
    if (!sightDirty) return;
    sightDirty = false;
    var near = [];
    views.forEach(function (v, id) {
      var r = rectOf(v.card);
      if (r.h < 1) return;
      if (r.y + r.h > clip.y - clip.h && r.y < clip.y + 2 * clip.h) near.push(id);
    });
    near.sort();
    var text = near.join(",");
    if (text === lastSight) return;
    lastSight = text;
    send({ kind: "sight", near: near });
  }
  var resizes = new ResizeObserver(queueLayout);
  resizes.observe(stream);
  stream.addEventListener("scroll", queueLayout, { passive: true });
  window.addEventListener("resize", queueLayout);
  new MutationObserver(queueLayout).observe(document.body, {
    subtree: true, childList: true, attributes: true, attributeFilter: ["class", "hidden", "style"]
  });

  Object.defineProperty(window, "__mcpShell", {
    value: Object.freeze({
      dispatch: function (cmd) {
        if (SIGHT_OPS[cmd.op]) sightDirty = true;
        if (cmd.op === "resize") resizedAt = performance.now();
        var h = handlers[cmd.op];
        if (h) h(cmd);
      },
      // The wheel over a View that did not scroll it scrolls the stream, as in a browser.
      scrollStream: function (dx, dy) { personActs(); stream.scrollBy(dx, dy); }
    })
  });

  send({ kind: "ready" });
  // The heartbeat: when it stops, the host knows the web content hangs (a View's busy loop
  // stops this page too) and asks the person natively.
  setInterval(function () { send({ kind: "alive" }); }, 250);
})();
