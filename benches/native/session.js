// Automation for the native host's "session" run (evaluated in the host shell by
// `mcp-apps-host run --automation`). compare.mjs prepends `const PLAN = [...]`: the arguments of
// each bench-view call, made one after the other through the tool picker, as a person would:
// click the tool, fill the generated form, press Call. Each View closes itself when its benchmark
// is done (request-teardown); the next one is opened only once its card is gone, so exactly one
// View is open at a time, as in the reference host.
// Nothing here is timed: all figures come from the host's trace.
(async function () {
  "use strict";
  var stream = document.getElementById("stream");
  var cards = function () { return stream.querySelectorAll(".card").length; };
  // Resolves when pred() holds, re-checked on every change under #stream (no polling timers
  // running while a benchmark is in progress).
  function when(pred, root) {
    return new Promise(function (resolve) {
      if (pred()) return resolve();
      var mo = new MutationObserver(function () { if (pred()) { mo.disconnect(); resolve(); } });
      mo.observe(root || stream, { childList: true, subtree: true });
    });
  }
  var picker = document.getElementById("tools");
  await when(function () { return picker.querySelector('button[data-tool="bench-view"]'); }, picker);
  // The crowd run: first wait until the Views named on the command line are all mounted and
  // have sized themselves (the App SDK reports its size once it initialized, and the host then
  // resizes the slot: each slot's height leaves the first height it was given, recorded as the
  // slot appears), then a moment more. The driver checks in the trace that all had initialized.
  if (typeof CROWD === "number" && CROWD > 0) {
    var first = new Map();
    var record = function () {
      stream.querySelectorAll(".card .slot").forEach(function (s) { if (!first.has(s)) first.set(s, s.style.height); });
    };
    record();
    var seen = new MutationObserver(record);
    seen.observe(stream, { childList: true, subtree: true });
    await when(function () {
      return stream.querySelectorAll(".card .slot").length >= CROWD && !stream.querySelector(".card.pending");
    });
    seen.disconnect();
    record();
    var deadline = Date.now() + 300000;
    await new Promise(function (resolve) {
      var check = function () {
        var waiting = 0;
        // A card that went to sleep, or was replaced by a View that woke, waits for nothing.
        first.forEach(function (h, s) {
          if (s.isConnected && !s.closest(".card.asleep") && s.style.height === h) waiting++;
        });
        if (waiting === 0 || Date.now() > deadline) resolve(); else setTimeout(check, 250);
      };
      check();
    });
    await new Promise(function (r) { setTimeout(r, CROWD_SETTLE_MS); });
  }
  for (var i = 0; i < PLAN.length; i++) {
    var args = PLAN[i];
    picker.querySelector('button[data-tool="bench-view"]').click();
    Object.keys(args).forEach(function (name) {
      var input = document.getElementById("arg-" + name);
      input.value = input.dataset.kind === "enum" ? JSON.stringify(args[name]) : String(args[name]);
    });
    var before = cards();
    document.getElementById("form-call").click();
    await when(function () { return cards() > before; });   // the pending card, then the View
    await when(function () { return cards() === before; }); // unmounted after its teardown
  }
  document.title = "bench:automation-done";
})().catch(function (e) { document.title = "bench:automation-failed " + e; });
