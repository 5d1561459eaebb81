// Where the person writes: the prompt, the servers' prompts as slash commands with their
// arguments, resources to attach, and the model to go on with.

import { el, send } from "./page.js";
import { setStatus } from "./status.js";

var promptForm = document.getElementById("prompt");
var promptText = document.getElementById("prompt-text");
var modelButton = document.getElementById("prompt-model");
var modelName = document.getElementById("model-name");
var editing = false;
// Edit of the last prompt: Send replaces it.
export function editPrompt(text) {
  editing = true;
  promptText.value = text || "";
  promptText.placeholder = "Your last prompt, edited: Send replaces it";
  promptText.focus();
}
// The composer is there from the start, as in any chat app; until a model is chosen, what is
// sent comes back (Rust's no-model) and Model settings opens.
var WHAT_IT_DOES = "or type / for a server's prompts";
promptForm.hidden = false;
promptText.placeholder = "Ask anything, " + WHAT_IT_DOES;
export function chatReady(cmd) {
  promptForm.hidden = false;
  promptForm.dataset.model = cmd.model;
  // The model's name, not the address it is at (that is in Model settings).
  var name = String(cmd.model).split(" at ")[0];
  promptText.placeholder = "Message " + name + ", " + WHAT_IT_DOES;
  modelButton.hidden = false;
  modelButton.title = "Go on with another model of the same endpoint (now " + cmd.model + ")";
}
// A prompt sent with no model chosen: it comes back into the box (unless the person already
// typed something else there), and Rust opens Model settings.
export function noModel(cmd) {
  if (!promptText.value.trim()) promptText.value = cmd.text;
  setStatus("Choose a model to send your message: it is kept in the box until then.", false);
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
export function setCommands(cmd) {
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

