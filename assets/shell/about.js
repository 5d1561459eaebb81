// The header's menu, the keyboard shortcuts (F1, Ctrl+?: the window's accelerators ask for
// them) and the About dialog (the host sends its facts: the version, the license, what it is
// built from). Ctrl+N and the header's button start a new conversation.

import { queueLayout } from "./layout.js";
import { el, send } from "./page.js";

var menuButton = document.getElementById("menu-open");
var menu = document.getElementById("menu");

function openDialog(box, focus) {
  if (box.hidden) {
    box.lastFocus = document.activeElement;
    box.hidden = false;
    // The shell holds the keyboard while a dialog is open: no View takes what the person types.
    send({ kind: "keyboard", dialog: true });
    queueLayout();
  }
  focus.focus();
}

function closeDialog(box) {
  if (box.hidden) return;
  box.hidden = true;
  if (document.querySelector(".dialog:not([hidden])") === null) send({ kind: "keyboard", dialog: false });
  queueLayout();
  if (box.lastFocus && box.lastFocus.focus && document.contains(box.lastFocus)) box.lastFocus.focus();
}

function setMenu(open) {
  menu.hidden = !open;
  menuButton.setAttribute("aria-expanded", String(open));
  queueLayout();
  if (open) menu.querySelector("[role=menuitem]").focus();
}

menuButton.addEventListener("click", function () { setMenu(menu.hidden); });
menu.addEventListener("keydown", function (e) {
  var items = Array.prototype.slice.call(menu.querySelectorAll("[role=menuitem]"));
  var at = items.indexOf(document.activeElement);
  if (e.key === "ArrowDown" || e.key === "ArrowUp") {
    e.preventDefault();
    var next = (at + (e.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
    items[next].focus();
  } else if (e.key === "Escape") {
    e.preventDefault();
    e.stopPropagation();
    setMenu(false);
    menuButton.focus();
  }
});
// A click or the focus elsewhere closes the menu, as a popover does.
document.addEventListener("pointerdown", function (e) {
  if (!menu.hidden && !menu.contains(e.target) && e.target !== menuButton) setMenu(false);
});
menu.addEventListener("focusout", function (e) {
  if (e.relatedTarget && !menu.contains(e.relatedTarget) && e.relatedTarget !== menuButton) setMenu(false);
});

var shortcutsBox = document.getElementById("shortcuts");
var aboutBox = document.getElementById("about");

document.getElementById("menu-shortcuts").addEventListener("click", function () { setMenu(false); shortcuts(); });
document.getElementById("menu-about").addEventListener("click", function () { setMenu(false); send({ kind: "about" }); });
document.getElementById("shortcuts-close").addEventListener("click", function () { closeDialog(shortcutsBox); });
document.getElementById("about-close").addEventListener("click", function () { closeDialog(aboutBox); });
document.getElementById("new-conversation").addEventListener("click", function () { send({ kind: "new-conversation" }); });
[shortcutsBox, aboutBox].forEach(function (box) {
  box.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && document.querySelectorAll(".dialog:not([hidden])").length === 1) {
      e.preventDefault();
      e.stopPropagation();
      closeDialog(box);
    }
  });
});

// The shortcuts window (F1).
export function shortcuts() {
  if (document.querySelector(".dialog:not([hidden])") && shortcutsBox.hidden) return; // another dialog has the person
  openDialog(shortcutsBox, document.getElementById("shortcuts-close"));
}

// The About dialog, with the host's facts (text only).
export function about(cmd) {
  if (document.querySelector(".dialog:not([hidden])") && aboutBox.hidden) return;
  document.getElementById("about-version").textContent = "Version " + cmd.version;
  document.getElementById("about-license").textContent = "License: " + cmd.license + ". No warranty: see the license texts that come with it.";
  var list = document.getElementById("about-list");
  list.textContent = "";
  (cmd.components || []).forEach(function (c) {
    var row = el("tr");
    row.append(el("td", "", String(c[0])), el("td", "muted", String(c[1])), el("td", "", String(c[2])));
    list.append(row);
  });
  document.getElementById("about-components-title").textContent = "Built with " + (cmd.components || []).length + " components and their licenses";
  openDialog(aboutBox, document.getElementById("about-close"));
}
