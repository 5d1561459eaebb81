// What a test runner reads of the window (the test interface's `readWindow`, asked by Rust
// only for a runner): what a person sees, as a browser automation would read the host page.

import { send } from "./page.js";

function visible(node) {
  if (!node || node.closest("[hidden]")) return false;
  var r = node.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
}

function words(node) {
  return (node.getAttribute("aria-label") || node.textContent || node.value || node.placeholder || "").trim().slice(0, 200);
}

// Where the keyboard is, and whether a person can see it there.
function focus() {
  var at = document.activeElement;
  if (!at || at === document.body) return null;
  var style = getComputedStyle(at);
  var ring = style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0;
  var box = at.closest(".dialog");
  return { id: at.id || null, tag: at.tagName.toLowerCase(), words: words(at), ring: ring, shown: visible(at),
    dialog: box ? box.id : null, view: at.classList.contains("slot") };
}

export function readWindow(cmd) {
  var dialogs = Array.prototype.filter.call(document.querySelectorAll(".dialog"), function (d) { return !d.hidden; });
  var status = document.getElementById("status");
  var servers = Array.prototype.map.call(document.querySelectorAll("#tools li.server"), function (li) {
    var state = li.querySelector(".state");
    return { name: li.dataset.server, state: state ? state.textContent : "", text: li.textContent.slice(0, 600) };
  });
  var answers = document.querySelectorAll(".card.turn:not(.user) .turn-text");
  var prompt = document.getElementById("prompt-text");
  var window_ = {
    status: { text: status.textContent, error: status.classList.contains("error") },
    focus: focus(),
    dialog: dialogs.length ? dialogs[dialogs.length - 1].id : null,
    dialogText: dialogs.length ? dialogs[dialogs.length - 1].textContent.slice(0, 2000) : null,
    welcome: visible(document.getElementById("welcome")),
    servers: servers,
    composer: { shown: visible(prompt), value: prompt.value, placeholder: prompt.placeholder },
    answer: answers.length ? answers[answers.length - 1].textContent.slice(0, 2000) : null,
    cards: document.querySelectorAll("#stream > .card").length,
    size: { width: innerWidth, height: innerHeight }
  };
  send({ kind: "window-read", read: cmd.read, window: window_ });
}
