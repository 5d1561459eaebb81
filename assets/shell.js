// The host shell: trusted UI on mcp-host://app. It never renders server-provided HTML itself
// (text only, via textContent); Views live in sandbox proxy frames on their own origins.
//
// To Rust it speaks only through window.__mcpHostSend, which the host's main-frame init script
// defines with the per-launch IPC secret in a closure. From Rust it receives commands through
// window.__mcpShell.dispatch(command).
(function () {
  "use strict";

  var send = window.__mcpHostSend;
  var views = new Map(); // view id -> { frame, origin, card }
  var stream = document.getElementById("stream");
  var statusLine = document.getElementById("status");

  function setStatus(text, isError) {
    statusLine.textContent = text;
    statusLine.classList.toggle("error", !!isError);
  }

  function mount(cmd) {
    var card = document.createElement("section");
    card.className = "card";
    card.setAttribute("aria-label", cmd.title);
    var head = document.createElement("header");
    var title = document.createElement("span");
    title.className = "title";
    title.textContent = cmd.title;
    var origin = document.createElement("span");
    origin.className = "origin";
    origin.textContent = cmd.server;
    origin.title = "Sandboxed App from " + cmd.server + " (" + cmd.origin + ")";
    head.append(title, origin);
    var frame = document.createElement("iframe");
    // Attributes before insertion: sandbox and allow apply from the first load.
    frame.setAttribute("sandbox", cmd.sandbox);
    if (cmd.allow) frame.setAttribute("allow", cmd.allow);
    frame.setAttribute("title", cmd.title);
    frame.src = cmd.src;
    views.set(cmd.view, { frame: frame, origin: cmd.origin, card: card });
    card.append(head, frame);
    stream.append(card);
    card.scrollIntoView({ block: "nearest" });
  }

  function post(cmd) {
    var v = views.get(cmd.view);
    if (!v || !v.frame.contentWindow) return;
    v.frame.contentWindow.postMessage(cmd.msg, v.origin);
  }

  function resize(cmd) {
    var v = views.get(cmd.view);
    if (!v) return;
    if (typeof cmd.height === "number") v.frame.style.height = cmd.height + "px";
  }

  function unmount(cmd) {
    var v = views.get(cmd.view);
    if (!v) return;
    views.delete(cmd.view);
    v.card.remove();
  }

  function text(cmd) {
    var card = document.createElement("section");
    card.className = "card";
    var head = document.createElement("header");
    var title = document.createElement("span");
    title.className = "title";
    title.textContent = cmd.title;
    head.append(title);
    var body = document.createElement("pre");
    body.className = cmd.error ? "text error" : "text";
    body.textContent = cmd.text;
    card.append(head, body);
    stream.append(card);
  }

  var handlers = { mount: mount, post: post, resize: resize, unmount: unmount, text: text,
    status: function (cmd) { setStatus(cmd.text, cmd.error); } };

  window.addEventListener("message", function (event) {
    // Check: a message counts only if it comes from a proxy frame we mounted, on its origin.
    for (var entry of views) {
      var id = entry[0], v = entry[1];
      if (event.source !== v.frame.contentWindow) continue;
      if (event.origin !== v.origin) {
        send({ kind: "dropped", view: id, reason: "message from unexpected origin " + event.origin });
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
