// The cards of tool calls: a pending call, a View's card with the slot its webview is placed
// over (the View is not in this page), asleep, hung, in another display mode, or a text result.

import { endAnswer } from "./conversation.js";
import { addViewOption, fitCard } from "./dev.js";
import { queueLayout, resizes, views } from "./layout.js";
import { el, send, stream } from "./page.js";

// Cards waiting for their View (or text result), by view id.
var pendingCards = new Map();

export function pending(cmd) {
  endAnswer();
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

export function mount(cmd) {
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
  fitCard(card);
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
export function asleep(cmd) {
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

export function resize(cmd) {
  var v = views.get(cmd.view);
  if (!v || typeof cmd.height !== "number") return;
  v.height = cmd.height;
  v.slot.style.height = cmd.height + "px";
}

// A View whose web process does not answer: the card says so, with Wait and Stop. This is
// above the View's slot, so the View cannot cover it.
export function hung(cmd) {
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

export function display(cmd) {
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

export function unmount(cmd) {
  var placeholder = takePending(cmd.view);
  if (placeholder) placeholder.remove();
  var v = views.get(cmd.view);
  if (!v) return;
  views.delete(cmd.view);
  resizes.unobserve(v.slot);
  if (v.card.classList.contains("pip")) document.body.classList.remove("pip");
  v.card.remove();
}

export function text(cmd) {
  endAnswer();
  var placeholder = cmd.view ? takePending(cmd.view) : null;
  var card = el("section", "card");
  var head = el("header");
  head.append(el("span", "title", cmd.title));
  card.append(head, el("pre", cmd.error ? "text error" : "text", cmd.text));
  if (placeholder) placeholder.replaceWith(card); else stream.append(card);
}
