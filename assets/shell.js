// The host shell: trusted UI on mcp-host://app. It never renders server-provided HTML itself
// (text only, via textContent). Views are not in this page: each has a webview of its own, in its
// server's web process, which the host places over the View's slot in its card. This page tells
// the host where the slots are (shell/layout.js) whenever they move.
//
// To Rust it speaks only through window.__mcpHostSend, which the host's main-frame init script
// defines with the per-launch IPC secret in a closure. From Rust it receives commands through
// window.__mcpShell.dispatch(command).
//
// This module is the entry: the host's commands, each to the panel that draws it. Each panel is
// a module of its own under shell/, served by the host scheme as it is (no bundler).
import * as about from "./shell/about.js";
import * as cards from "./shell/cards.js";
import * as composer from "./shell/composer.js";
import * as conversation from "./shell/conversation.js";
import * as dev from "./shell/dev.js";
import * as dialogs from "./shell/dialogs.js";
import * as layout from "./shell/layout.js";
import * as read from "./shell/read.js";
import "./shell/modal.js";
import { send, stream } from "./shell/page.js";
import * as servers from "./shell/servers.js";
import * as settings from "./shell/settings.js";
import * as side from "./shell/side.js";
import * as status from "./shell/status.js";
import * as welcome from "./shell/welcome.js";

var handlers = {
  mount: cards.mount, resize: cards.resize, hung: cards.hung, unmount: cards.unmount, text: cards.text,
  display: cards.display, asleep: cards.asleep, pending: cards.pending,
  servers: servers.servers, "server-log": servers.serverLog, welcome: welcome.welcome,
  dev: dev.showDev, log: dev.log, csp: dev.csp, "view-tools": dev.viewTools, diagnostic: dev.diagnostic,
  message: side.message, context: side.context, theme: status.setTheme,
  chat: conversation.chat, "chat-text": conversation.chatText, "chat-end": conversation.chatEnd,
  "chat-ready": composer.chatReady, "no-model": composer.noModel, conversations: conversation.conversations,
  "chat-clear": conversation.chatClear, commands: composer.setCommands, "model-settings": settings.modelSettings,
  shortcuts: about.shortcuts, about: about.about, "read-window": read.readWindow,
  confirm: dialogs.ask, elicit: dialogs.ask, dismiss: dialogs.dismiss, "path-chosen": dialogs.pathChosen,
  status: function (cmd) { status.setStatus(cmd.text, cmd.error); }
};

Object.defineProperty(window, "__mcpShell", {
  value: Object.freeze({
    dispatch: function (cmd) {
      layout.noteCommand(cmd);
      var h = handlers[cmd.op];
      if (h) h(cmd);
    },
    // The wheel over a View that did not scroll it scrolls the stream, as in a browser.
    scrollStream: function (dx, dy) { layout.personActs(); stream.scrollBy(dx, dy); }
  })
});

send({ kind: "ready" });
// The heartbeat: when it stops, the host knows the web content hangs (a View's busy loop
// stops this page too) and asks the person natively.
setInterval(function () { send({ kind: "alive" }); }, 250);
