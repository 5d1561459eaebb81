// The page's pieces every panel uses: the one line to the host, elements made with text only
// (never HTML: what a server, a View or a model wrote is shown as text), the stream of cards and
// the side panel, and lists that keep their newest entries only.

export var send = window.__mcpHostSend;
export var stream = document.getElementById("stream");
export var side = document.getElementById("side");

export function el(tag, className, text) {
  var node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// Side panels and the log keep their newest entries only: a View or server can add entries
// without end, the page must not grow without end.
export function trim(list, max, per) {
  while (list.children.length > max * per) {
    for (var i = 0; i < per; i++) list.firstElementChild.remove();
  }
}
