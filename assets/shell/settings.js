// The model settings page: which model the conversation uses, where, and its API key, set in
// the app. Rust reads what is kept (the config file's model section, which keys the keyring
// holds) and keeps what the person saves (model_settings.rs); this page only shows and asks.
//
// The key is typed into a password field and sent to Rust once, on Save; it is never shown
// again, and the page never gets it back. The page names the one origin the key goes to, as
// the person types the URL, and says when that is not the provider's own.

import { queueLayout } from "./layout.js";
import { send } from "./page.js";

var box = document.getElementById("settings");
var form = document.getElementById("settings-form");
var provider = document.getElementById("settings-provider");
var nameField = document.getElementById("settings-name");
var urlField = document.getElementById("settings-url");
var keyField = document.getElementById("settings-key");
var saveButton = document.getElementById("settings-save");
var forgetButton = document.getElementById("settings-forget");
var listButton = document.getElementById("settings-list");
var modelList = document.getElementById("settings-models");
var modelListLabel = document.getElementById("settings-models-label");
var shown = null; // the settings Rust sent last
var lastFocus = null;

var NAMES = { openai: "OpenAI", anthropic: "Anthropic", ollama: "Ollama" };
var EXAMPLES = { openai: "gpt-4.1-mini", anthropic: "claude-sonnet-4-5", ollama: "qwen3:8b" };

function text(id, value) { document.getElementById(id).textContent = value || ""; }

// Where the key goes: the URL's origin, or the provider's own.
function destination() {
  var p = provider.value;
  var own = shown && shown.endpoints ? shown.endpoints[p] : "";
  var typed = urlField.value.trim();
  var origin = own;
  if (typed) {
    try { origin = new URL(typed).origin; } catch (e) { origin = ""; }
  }
  return { origin: origin, own: own, other: !!typed && origin !== own };
}

function describeKey() {
  var p = provider.value;
  var keyed = p !== "ollama";
  keyField.disabled = !keyed;
  forgetButton.hidden = !keyed || !(shown && shown.kept && shown.kept[p]);
  nameField.placeholder = EXAMPLES[p];
  var note = "";
  if (!keyed) {
    note = "Ollama runs on your computer and takes no key.";
  } else {
    var kept = shown && shown.kept && shown.kept[p];
    var env = shown && shown.environment && shown.environment[p];
    note = kept ? "A " + NAMES[p] + " key is kept: leave this empty to keep using it, or type a new one." :
      "No " + NAMES[p] + " key is kept yet.";
    if (env) note += " " + env + " is set in the environment: when the app starts, that key is used.";
  }
  text("settings-key-note", note);
  var d = destination();
  var line = "";
  if (keyed && d.origin) {
    line = "Your key goes to " + d.origin + " only.";
    if (d.other) line += " That is not " + NAMES[p] + "'s own address (" + d.own + "): save only if you trust it.";
  } else if (keyed && urlField.value.trim()) {
    line = "That URL cannot be read.";
  }
  var dest = document.getElementById("settings-destination");
  dest.textContent = line;
  dest.classList.toggle("warning", d.other);
}

// A model list belongs to the address and provider it came from: another one clears it.
function clearModels() {
  modelList.replaceChildren();
  modelList.hidden = true;
  modelListLabel.hidden = true;
  text("settings-list-note", "");
}

// Rust's answer to "list its models": the names at that origin (the connection works), or why
// not, in words.
function showModels(s) {
  listButton.disabled = false;
  if (s.list_error) {
    clearModels();
    text("settings-list-note", s.list_error);
    document.getElementById("settings-list-note").classList.add("warning");
    return;
  }
  document.getElementById("settings-list-note").classList.remove("warning");
  var names = s.models || [];
  modelList.replaceChildren();
  var pick = document.createElement("option");
  pick.value = "";
  pick.textContent = names.length ? "Choose a model…" : "(no model listed)";
  modelList.append(pick);
  names.forEach(function (n) {
    var o = document.createElement("option");
    o.value = n;
    o.textContent = n;
    modelList.append(o);
  });
  if (names.indexOf(nameField.value.trim()) >= 0) modelList.value = nameField.value.trim();
  modelList.hidden = false;
  modelListLabel.hidden = false;
  text("settings-list-note", "Connected to " + s.origin + ": " + (names.length === 1 ? "1 model" : names.length + " models") + " offered.");
}

provider.addEventListener("change", function () { clearModels(); describeKey(); });
urlField.addEventListener("input", function () { clearModels(); describeKey(); });
modelList.addEventListener("change", function () {
  if (modelList.value) nameField.value = modelList.value;
});
listButton.addEventListener("click", function () {
  listButton.disabled = true;
  text("settings-list-note", "Asking " + (destination().origin || "the address") + "…");
  document.getElementById("settings-list-note").classList.remove("warning");
  send({ kind: "list-models", provider: provider.value, url: urlField.value, key: keyField.disabled ? "" : keyField.value });
});

function open() {
  if (!box.hidden) return;
  lastFocus = document.activeElement;
  box.hidden = false;
  // The shell holds the keyboard while the page is open: no View takes what the person types.
  send({ kind: "keyboard", dialog: true });
  queueLayout();
  nameField.focus();
}

function close() {
  if (box.hidden) return;
  box.hidden = true;
  keyField.value = "";
  if (document.querySelector(".dialog:not([hidden])") === null) send({ kind: "keyboard", dialog: false });
  queueLayout();
  if (lastFocus && lastFocus.focus) lastFocus.focus();
}

// Rust's answer: the page's contents, a save's error, a note, or "closed" after a save.
export function modelSettings(cmd) {
  var s = cmd.settings || {};
  if (s.closed) { close(); return; }
  if (s.models || s.list_error) { showModels(s); return; }
  saveButton.disabled = false;
  if (s.error && !s.endpoints) { text("settings-error", s.error); return; }
  if (s.note) { text("settings-error", ""); text("settings-key-note", s.note); return; }
  shown = s;
  text("settings-current", s.current ? "Now: " + s.current : "No model yet: the app runs tools, and the conversation starts once you choose a model.");
  provider.value = NAMES[s.provider] ? s.provider : "openai";
  nameField.value = s.name || "";
  urlField.value = s.url || "";
  keyField.value = "";
  text("settings-place", s.place || "");
  text("settings-where", s.config ? "Saved in " + s.config + " (the key is not: it is kept apart)." :
    "The servers came from the command line: the choice holds for this run.");
  text("settings-error", s.error || "");
  clearModels();
  listButton.disabled = false;
  describeKey();
  open();
}

form.addEventListener("submit", function (e) {
  e.preventDefault();
  if (!nameField.value.trim()) { text("settings-error", "Give the model's name, for example " + EXAMPLES[provider.value] + "."); nameField.focus(); return; }
  // The provider's own endpoint answers nothing without a key (Rust checks it again).
  var p = provider.value;
  var keyless = p !== "ollama" && !keyField.value.trim() && !urlField.value.trim() &&
    !(shown && shown.kept && shown.kept[p]) && !(shown && shown.environment && shown.environment[p]);
  if (keyless) { text("settings-error", "Type your " + NAMES[p] + " API key: none is kept yet."); keyField.focus(); return; }
  text("settings-error", "");
  saveButton.disabled = true;
  send({ kind: "save-model", provider: provider.value, name: nameField.value, url: urlField.value, key: keyField.disabled ? "" : keyField.value });
  keyField.value = "";
});
document.getElementById("settings-cancel").addEventListener("click", close);
forgetButton.addEventListener("click", function () { send({ kind: "forget-model-key", provider: provider.value }); });
document.getElementById("settings-open").addEventListener("click", function () { send({ kind: "model-settings" }); });
box.addEventListener("keydown", function (e) {
  // Escape closes the page, unless a consent dialog above it has the keyboard.
  if (e.key === "Escape" && document.querySelectorAll(".dialog:not([hidden])").length === 1) {
    e.preventDefault();
    e.stopPropagation();
    close();
  }
});

// The welcome's and the composer's way in.
export function openSettings() { send({ kind: "model-settings" }); }
