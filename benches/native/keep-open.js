// Automation for the native host's memory runs (evaluated in the host shell). The bench View asks
// to be torn down once it has reported; for the memory figure every View must stay open, as the
// reference host does by ignoring request-teardown there. This capturing listener, added after the
// shell's own, runs first on the window (capture listeners fire before bubble ones at the target)
// and drops that one notification, so it never reaches the host. Everything else passes through.
window.addEventListener("message", function (event) {
  var d = event.data;
  if (d && typeof d === "object" && d.method === "ui/notifications/request-teardown") {
    event.stopImmediatePropagation();
  }
}, true);
