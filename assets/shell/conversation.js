// The conversation: the person's and the Apps' words, the model's answers as they stream,
// Stop, Retry and Edit, and the list of saved conversations to reopen, rename or delete.

import { drawMarkdown } from "./markdown.js";
import { editPrompt } from "./composer.js";
import { el, send, stream } from "./page.js";

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
export var stopButton = document.getElementById("prompt-stop");
var turnsRunning = 0;
stopButton.addEventListener("click", function () { send({ kind: "stop-turn" }); });
// Retry and Edit act on the last turn, once the model is done with it.
var retryButton = document.getElementById("prompt-retry");
var editButton = document.getElementById("prompt-edit");
var lastPrompt = null;
function turnButtons() {
  var idle = turnsRunning === 0;
  retryButton.hidden = !idle || lastPrompt === null;
  editButton.hidden = !idle || lastPrompt === null;
}
retryButton.addEventListener("click", function () { send({ kind: "retry" }); });
editButton.addEventListener("click", function () { editPrompt(lastPrompt); });
// A tool's card (a View, a result) ends the model's answer: what it says next starts a new card.
export function endAnswer() { answerCard = null; }
export function chat(cmd) {
  turnsRunning++;
  stopButton.hidden = false;
  answerCard = null;
  if (cmd.role === "user" && !cmd.from) lastPrompt = cmd.text;
  turnCard(cmd.role, cmd.from ? "From " + cmd.from : "You", cmd.text);
  turnButtons();
}
// Redrawn at most once a frame.
export function chatText(cmd) {
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
export function chatEnd(cmd) {
  turnsRunning = Math.max(0, turnsRunning - 1);
  stopButton.hidden = turnsRunning === 0;
  turnButtons();
  if (cmd.error) {
    if (!answerCard) answerCard = turnCard("assistant", "Model", "");
    answerCard.append(el("div", "turn-error", cmd.error));
  }
  answerCard = null;
}
export function conversations(cmd) {
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
export function chatClear() {
  answerCard = null;
  turnsRunning = 0;
  stopButton.hidden = true;
  stream.querySelectorAll(".card:not([data-view])").forEach(function (card) { card.remove(); });
}
