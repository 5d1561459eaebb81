// The first-run welcome: shown while the app has no server. One click adds the embedded demo
// server (Rust writes it into the config file and starts it); the text says how to add others.
// Everything is text (textContent); the config file's path comes from Rust.

import { el, send, stream } from "./page.js";

var shown = null;

export function welcome(cmd) {
  if (!cmd.shown) {
    if (shown) shown.remove();
    shown = null;
    return;
  }
  if (shown) shown.remove();
  var box = el("section", "card welcome");
  box.id = "welcome";
  box.setAttribute("aria-labelledby", "welcome-title");
  var title = el("h2", "", "Welcome to MCP Apps Host");
  title.id = "welcome-title";
  box.append(
    title,
    el("p", "", "This app runs MCP servers and shows their Apps: the interactive views their tools come with, each in a sandbox of its own. You have no server yet."),
  );
  var add = el("button", "primary", "Add the demo server");
  add.type = "button";
  add.id = "welcome-add-demo";
  add.addEventListener("click", function () {
    add.disabled = true;
    add.textContent = "Adding the demo server…";
    send({ kind: "add-demo" });
  });
  box.append(add);
  box.append(el("p", "muted", "The demo server comes with this app: a few Apps (weather, a counter, a form) to try, no network needed."));
  var others = el("ul", "");
  [
    "Open an .mcpb bundle or an install link (mcp-apps-host://install?…) with this app.",
    "Add a command line or a URL in the servers panel (Add a server).",
    "Or from a terminal: mcp-apps-host install FILE|URL.",
  ].forEach(function (t) { others.append(el("li", "", t)); });
  box.append(el("h3", "", "Other servers"), others);
  // The conversation: a model that calls these servers' tools and Apps, once one is chosen.
  var model = el("button", "", "Choose a model…");
  model.type = "button";
  model.id = "welcome-model";
  model.addEventListener("click", function () { send({ kind: "model-settings" }); });
  box.append(el("h3", "", "A conversation"), el("p", "", "To talk with a model that uses these tools and Apps, choose it and give its API key (kept in your system keyring)."), model);
  box.append(el("p", "muted", "Servers are kept in " + cmd.config + "."));
  stream.prepend(box);
  shown = box;
  // The first run starts here: the keyboard is on its first step (unless the person is
  // somewhere already).
  if (document.activeElement === document.body || !document.activeElement) add.focus();
}
