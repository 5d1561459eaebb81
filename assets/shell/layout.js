// Where the Views go: the slots' rectangles reported to the host, which places each View's
// webview over its slot, and which Views are near sight (the others may sleep).

import { send, stream } from "./page.js";

// view id -> { slot, origin, card, height }: the Views' cards, whose slots are reported here.
export var views = new Map();

// Where the Views go: each slot's rectangle in this page, and the rectangle they are clipped
// to (the stream; in fullscreen and pip the one View's slot). No slot is reported while a
// dialog is open (the dialog is above everything), or for a View behind another's fullscreen.
// Reported after layout, once per frame at most, and only when something moved.
var lastLayout = "";
var layoutQueued = false;
export function queueLayout() {
  if (layoutQueued) return;
  layoutQueued = true;
  requestAnimationFrame(reportLayout);
}
function rectOf(node) {
  var r = node.getBoundingClientRect();
  return { x: r.left, y: r.top, w: r.width, h: r.height };
}
function reportLayout() {
  layoutQueued = false;
  var focus = null;
  views.forEach(function (v) {
    if (v.card.classList.contains("fullscreen") || v.card.classList.contains("pip")) focus = v;
  });
  var clip;
  if (focus) {
    clip = rectOf(focus.slot);
  } else {
    var s = stream.getBoundingClientRect();
    clip = { x: s.left + stream.clientLeft, y: s.top + stream.clientTop, w: stream.clientWidth, h: stream.clientHeight };
  }
  // The header's menu is above the stream too: the Views step aside while it is open.
  var modal = document.querySelector(".dialog:not([hidden]), .menu:not([hidden])") !== null;
  var slots = [];
  if (!modal) {
    views.forEach(function (v, id) {
      if (focus && v !== focus) return;
      var r = rectOf(v.slot);
      if (r.w < 1 || r.h < 1) return;
      if (r.y + r.h <= clip.y || r.y >= clip.y + clip.h || r.x + r.w <= clip.x || r.x >= clip.x + clip.w) return;
      slots.push({ view: id, x: r.x, y: r.y, w: r.w, h: r.h });
    });
  }
  reportSight(clip);
  var text = JSON.stringify([clip, slots]);
  if (text === lastLayout) return;
  lastLayout = text;
  send({ kind: "frames", clip: clip, slots: slots });
}

// Which Views are near sight: in the clip or within its height above or below it, whatever
// covers them now (a dialog, another View's fullscreen). Views far from it may sleep.
//
// Sleeping is fair: a View that changes its height moves the cards after it, but that alone
// never makes another View sleep or wake. What is near is worked out again only when the
// person scrolls or resizes the window, or a card comes, goes or changes its display mode
// (sightDirty); a scroll that comes right after a View's resize and no input of the person's
// (the browser keeping the scroll position in range) is the View's doing and counts not.
var lastSight = "";
var sightDirty = true;
var personAt = -Infinity;
var resizedAt = -Infinity;
var SIGHT_OPS = { mount: true, unmount: true, asleep: true, display: true, pending: true, text: true };
export function personActs() { personAt = performance.now(); }
["wheel", "keydown", "pointerdown", "touchstart"].forEach(function (type) {
  window.addEventListener(type, personActs, { capture: true, passive: true });
});
stream.addEventListener("scroll", function () {
  var now = performance.now();
  if (now - resizedAt > 250 || now - personAt < 1000) sightDirty = true;
}, { passive: true });
window.addEventListener("resize", function () { sightDirty = true; });
function reportSight(clip) {
  if (!sightDirty) return;
  sightDirty = false;
  var near = [];
  views.forEach(function (v, id) {
    var r = rectOf(v.card);
    if (r.h < 1) return;
    if (r.y + r.h > clip.y - clip.h && r.y < clip.y + 2 * clip.h) near.push(id);
  });
  near.sort();
  var text = near.join(",");
  if (text === lastSight) return;
  lastSight = text;
  send({ kind: "sight", near: near });
}
export var resizes = new ResizeObserver(queueLayout);
resizes.observe(stream);
stream.addEventListener("scroll", queueLayout, { passive: true });
window.addEventListener("resize", queueLayout);
new MutationObserver(queueLayout).observe(document.body, {
  subtree: true, childList: true, attributes: true, attributeFilter: ["class", "hidden", "style"]
});

// A command of the host may move a card: what is near sight is worked out again.
export function noteCommand(cmd) {
  if (SIGHT_OPS[cmd.op]) sightDirty = true;
  if (cmd.op === "resize") resizedAt = performance.now();
}
