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
// What the person types to find a conversation, kept while the list is drawn again.
var finding = "";
var findField = null;
function filterConversations() {
  var needle = finding.trim().toLowerCase();
  var shown = 0;
  document.querySelectorAll("#conversation-list li.conversation").forEach(function (li) {
    var match = !needle || (li.dataset.title || "").toLowerCase().indexOf(needle) >= 0;
    li.hidden = !match;
    if (match) shown++;
  });
  var none = document.getElementById("conversation-none");
  if (none) none.hidden = shown > 0 || !needle;
}

// At start, before anything is in the stream: the last conversation, offered to pick up. It
// leaves as soon as anything else comes into the stream.
var offer = null;
function offerLast(list) {
  var busy = Array.prototype.some.call(stream.children, function (c) { return c !== offer; });
  var last = list.find(function (c) { return !c.open && c.said; });
  if (offer && (busy || !last)) { offer.remove(); offer = null; }
  if (busy || !last || offer === false) return;
  if (offer) offer.remove();
  offer = el("section", "card resume-offer");
  offer.setAttribute("aria-label", "Pick up your last conversation");
  var text = el("p", "");
  text.append("Pick up where you left off: ", el("strong", "", last.title));
  var reopen = el("button", "primary", "Reopen");
  reopen.type = "button";
  reopen.dataset.reopen = last.id;
  reopen.addEventListener("click", function () { send({ kind: "reopen", id: last.id }); });
  offer.append(text, reopen);
  stream.append(offer);
}
new MutationObserver(function () {
  if (offer && Array.prototype.some.call(stream.children, function (c) { return c !== offer; })) {
    offer.remove();
    offer = false; // once the person has started, it is not offered again in this window
  }
}).observe(stream, { childList: true });

export function conversations(cmd) {
  var section = document.getElementById("conversations");
  var list = document.getElementById("conversation-list");
  list.textContent = "";
  if (!findField) {
    findField = el("input", "conversation-find");
    findField.type = "search";
    findField.id = "conversation-find";
    findField.placeholder = "Find a conversation";
    findField.setAttribute("aria-label", "Find a conversation by its title");
    findField.addEventListener("input", function () { finding = findField.value; filterConversations(); });
    list.before(findField);
    var none = el("p", "muted", "No conversation has that in its title.");
    none.id = "conversation-none";
    none.hidden = true;
    list.after(none);
  }
  findField.hidden = (cmd.list || []).length < 2;
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
    li.dataset.title = c.title;
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
  filterConversations();
  offerLast(cmd.list || []);
}
// Another conversation is reopened: this one's cards go (the Views close on their own).
export function chatClear() {
  answerCard = null;
  turnsRunning = 0;
  stopButton.hidden = true;
  stream.querySelectorAll(".card:not([data-view])").forEach(function (card) { card.remove(); });
}
