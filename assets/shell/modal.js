// Modal dialogs keep the keyboard: while one is open (Model settings, a consent question, a
// server's form, the install dialog), Tab and Shift+Tab go round its own controls and never
// land on the page behind its overlay (Tab from anywhere else enters the dialog). The topmost open dialog holds it: the consent dialogs
// come after Model settings in the page and stay above it.

var FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex='-1'])";

function topmost() {
  var open = document.querySelectorAll(".dialog:not([hidden])");
  return open.length ? open[open.length - 1] : null;
}

// The controls of `box` a person can reach now (shown, enabled).
function stops(box) {
  return Array.prototype.filter.call(box.querySelectorAll(FOCUSABLE), function (e) {
    if (e.disabled || e.closest("[hidden]")) return false;
    var r = e.getBoundingClientRect();
    return r.width > 0 || r.height > 0;
  });
}

document.addEventListener("keydown", function (e) {
  if (e.key !== "Tab") return;
  var box = topmost();
  if (!box) return;
  var list = stops(box);
  if (!list.length) { e.preventDefault(); return; }
  var at = list.indexOf(document.activeElement);
  var next = at < 0 ? (e.shiftKey ? list.length - 1 : 0) :
    e.shiftKey ? (at === 0 ? list.length - 1 : -1) : (at === list.length - 1 ? 0 : -1);
  if (next >= 0) {
    e.preventDefault();
    list[next].focus();
  }
}, true);

// Shift+Tab from a dialog's first control reaches WebKit's own focus navigation without a
// keydown the page sees: focus that leaves the open dialog from inside it goes round to the
// dialog's other end instead (its last control when it left from the first, else its first).
document.addEventListener("focusin", function (e) {
  var box = topmost();
  var from = e.relatedTarget;
  if (!box || box.contains(e.target) || !from || !box.contains(from)) return;
  var list = stops(box);
  if (!list.length) return;
  (from === list[0] ? list[list.length - 1] : list[0]).focus();
});
