// The side panel: the Views' messages to the conversation and the context they last gave.

import { el, side, trim } from "./page.js";

var MAX_MESSAGES = 200, MAX_CONTEXTS = 100;

export function message(cmd) {
  side.hidden = false;
  var item = el("li");
  item.append(el("strong", "", cmd.from + " (" + cmd.role + "): "), document.createTextNode(cmd.text));
  var list = document.getElementById("messages");
  list.append(item);
  trim(list, MAX_MESSAGES, 1);
}

export function context(cmd) {
  side.hidden = false;
  var list = document.getElementById("contexts");
  var id = "ctx-" + cmd.view;
  var dd = document.getElementById(id);
  if (!dd) {
    list.append(el("dt", "", cmd.from));
    dd = el("dd");
    dd.id = id;
    list.append(dd);
    trim(list, MAX_CONTEXTS, 2);
  }
  dd.textContent = cmd.text === null ? "(cleared)" : cmd.text;
}
