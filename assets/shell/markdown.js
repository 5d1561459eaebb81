// The model's Markdown, drawn with elements and text nodes only (never as HTML): paragraphs,
// headings, lists, fenced code, inline code, bold and italics.

import { el } from "./page.js";

function inline(parent, text) {
  var re = /(`[^`\n]+`|\*\*[^*\n]+\*\*|\*[^*\s][^*\n]*\*|_[^_\s][^_\n]*_)/g;
  var at = 0, m;
  while ((m = re.exec(text))) {
    if (m.index > at) parent.append(document.createTextNode(text.slice(at, m.index)));
    var t = m[0];
    if (t[0] === "`") parent.append(el("code", "", t.slice(1, -1)));
    else if (t.slice(0, 2) === "**") parent.append(el("strong", "", t.slice(2, -2)));
    else parent.append(el("em", "", t.slice(1, -1)));
    at = m.index + t.length;
  }
  if (at < text.length) parent.append(document.createTextNode(text.slice(at)));
}
export function drawMarkdown(target, raw) {
  target.textContent = "";
  var lines = raw.split("\n");
  var para = null, list = null, code = null;
  function close() { para = null; list = null; }
  lines.forEach(function (line) {
    if (code) {
      if (/^\s*```/.test(line)) { code = null; return; }
      code.textContent += (code.textContent ? "\n" : "") + line;
      return;
    }
    if (/^\s*```/.test(line)) {
      close();
      var pre = el("pre", "turn-code");
      code = el("code");
      pre.append(code);
      target.append(pre);
      return;
    }
    var h = /^(#{1,4})\s+(.*)$/.exec(line);
    var bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
    var number = /^\s*\d+[.)]\s+(.*)$/.exec(line);
    if (!line.trim()) { close(); return; }
    if (h) { close(); var hd = el("h4", "turn-heading"); inline(hd, h[2]); target.append(hd); return; }
    if (bullet || number) {
      var tag = bullet ? "UL" : "OL";
      if (!list || list.tagName !== tag) { para = null; list = el(tag.toLowerCase()); target.append(list); }
      var li = el("li");
      inline(li, (bullet || number)[1]);
      list.append(li);
      return;
    }
    list = null;
    if (!para) { para = el("p"); target.append(para); } else para.append(document.createTextNode("\n"));
    inline(para, line);
  });
}
