// The status line and the theme: the host's last word for the person, light or dark.

import { send } from "./page.js";

var statusLine = document.getElementById("status");
var theme = "light";

export function setStatus(text, isError) {
  statusLine.textContent = text;
  // What does not fit in its two lines is in its tooltip: the line is read whole.
  statusLine.title = text;
  statusLine.classList.toggle("error", !!isError);
}

export function setTheme(cmd) {
  theme = cmd.theme === "dark" ? "dark" : "light";
  document.documentElement.dataset.theme = theme;
}

document.getElementById("theme").addEventListener("click", function () {
  send({ kind: "theme", theme: theme === "dark" ? "light" : "dark" });
});
