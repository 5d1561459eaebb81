// Consent dialogs and a server's questions (elicitation), one at a time, the askers taking
// turns. A fresh dialog's accept button waits a moment; while one is open it has the keyboard.

import { stopButton } from "./conversation.js";
import { fillFields, putPath, readFields } from "./forms.js";
import { el, send } from "./page.js";

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
  // The install dialog: what will run, whole (escaped by the host), and its warnings in words.
  var detail = document.getElementById("elicit-detail");
  detail.textContent = cmd.detail || "";
  detail.hidden = !cmd.detail;
  var warnings = document.getElementById("elicit-warnings");
  warnings.textContent = "";
  (cmd.warnings || []).forEach(function (line) { warnings.append(el("li", "", "Warning: " + line)); });
  warnings.hidden = !(cmd.warnings || []).length;
  var urlLine = document.getElementById("elicit-url");
  urlLine.textContent = cmd.url || "";
  urlLine.hidden = !cmd.url;
  var fields = document.getElementById("elicit-fields");
  fillFields(fields, "elicit-", cmd.schema || {}, { paths: !!cmd.host });
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
  // The keyboard stays with the shell while another dialog (the model settings) is open.
  if (!current && document.querySelector(".dialog:not([hidden])") === null) send({ kind: "keyboard", dialog: false });
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

// A dialog asked by the host (a consent, a server's question), shown in its turn.
export function ask(cmd) { dialogs.push(cmd); showNextDialog(); }

// The path the person chose for a field of the host's own install dialog.
export function pathChosen(cmd) {
  if (current && current.op === "elicit" && current.host && String(cmd.field).indexOf("elicit-") === 0) putPath(cmd.field, cmd.path);
}

// A dialog the host no longer asks (its asker went): it goes, shown or waiting.
export function dismiss(cmd) {
  dialogs = dialogs.filter(function (d) { return d.dialog !== cmd.dialog; });
  if (current && current.dialog === cmd.dialog) closeCurrent();
}
