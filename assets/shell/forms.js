// Forms from a JSON schema (a tool's inputSchema, a server's elicitation): a field per property,
// read back into an object with the schema's checks, each failure said for a person.

import { el, send } from "./page.js";

// The mark the host puts on its own install dialog's folder and file settings.
var PATH_MARK = "x-mcp-apps-host-path";

// Choices of an enum-like schema: `enum`, or `oneOf`/`anyOf` of `{const, title}`.
function choicesOf(schema) {
  if (Array.isArray(schema.enum)) {
    return schema.enum.map(function (v, i) {
      var names = schema.enumNames || [];
      return { value: v, label: names[i] !== undefined ? String(names[i]) : String(v) };
    });
  }
  var alts = schema.oneOf || schema.anyOf;
  if (Array.isArray(alts) && alts.length && alts.every(function (a) { return a && a.const !== undefined; })) {
    return alts.map(function (a) { return { value: a.const, label: a.title || String(a.const) }; });
  }
  return null;
}

var inputTypes = { email: "email", uri: "url", date: "date", "date-time": "datetime-local", password: "password" };

// A property's key as words, for a schema without a title: `notes_dir` reads "Notes dir",
// `apiKey` "Api key" (a person reads a label, not a key).
export function wordsOf(name) {
  var words = String(name).replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/[_\-.]+/g, " ").trim().toLowerCase();
  return words ? words.charAt(0).toUpperCase() + words.slice(1) : String(name);
}

function fieldFor(prefix, name, schema, required, options) {
  var wrap = el("div", "field");
  var label = el("label", "", schema.title || wordsOf(name));
  if (required) label.append(el("span", "required", " (required)"));
  var id = prefix + name;
  label.htmlFor = id;
  if (schema.description) label.append(el("span", "hint", " " + schema.description));
  var input;
  var type = Array.isArray(schema.type) ? schema.type.find(function (x) { return x !== "null"; }) : schema.type;
  var choices = choicesOf(schema);
  var itemChoices = type === "array" && schema.items ? choicesOf(schema.items) : null;
  if (itemChoices) {
    // Multi-select: a checkbox per choice.
    input = el("fieldset", "multi");
    input.dataset.kind = "multi";
    input.dataset.values = JSON.stringify(itemChoices.map(function (c) { return c.value; }));
    var preset = Array.isArray(schema.default) ? schema.default : [];
    itemChoices.forEach(function (c, i) {
      var box = el("input");
      box.type = "checkbox";
      box.id = id + "-" + i;
      box.dataset.index = String(i);
      box.checked = preset.indexOf(c.value) >= 0;
      var l = el("label", "choice", c.label);
      l.prepend(box);
      input.append(l);
    });
    if (schema.minItems !== undefined) input.dataset.min = String(schema.minItems);
    if (schema.maxItems !== undefined) input.dataset.max = String(schema.maxItems);
  } else if (choices) {
    input = el("select");
    if (!required) input.append(el("option", "", ""));
    choices.forEach(function (c) { var o = el("option", "", c.label); o.value = JSON.stringify(c.value); input.append(o); });
    if (schema.default !== undefined) input.value = JSON.stringify(schema.default);
    input.dataset.kind = "enum";
  } else if (type === "boolean") {
    input = el("input");
    input.type = "checkbox";
    input.checked = schema.default === true;
    input.dataset.kind = "boolean";
  } else if (type === "number" || type === "integer") {
    input = el("input");
    input.type = "number";
    if (type === "integer") input.step = "1"; else input.step = "any";
    if (schema.minimum !== undefined) input.min = String(schema.minimum);
    if (schema.maximum !== undefined) input.max = String(schema.maximum);
    if (schema.default !== undefined) input.value = String(schema.default);
    input.dataset.kind = type;
  } else if (type === "array" && schema.items && schema.items.type === "string" && !schema.items.format) {
    // Several plain texts (tags, folders): one a line.
    input = el("textarea");
    input.placeholder = "One a line";
    if (Array.isArray(schema.default)) input.value = schema.default.map(String).join("\n");
    input.dataset.kind = "lines";
  } else if (type === "object" || type === "array" || type === undefined) {
    input = el("textarea");
    input.placeholder = type === "array" ? "[ ]" : "{ }";
    if (schema.default !== undefined) input.value = JSON.stringify(schema.default, null, 2);
    input.dataset.kind = "json";
  } else {
    input = el("input");
    input.type = inputTypes[schema.format] || "text";
    if (schema.default !== undefined) input.value = String(schema.default);
    input.dataset.kind = "string";
  }
  input.id = id;
  input.name = name;
  input.dataset.required = required ? "1" : "";
  input.dataset.schema = JSON.stringify(schema);
  wrap.append(label, input);
  var kind = schema[PATH_MARK];
  if (options && options.paths && (kind === "directory" || kind === "file")) {
    // The host's own form: a native chooser for a folder or a file (the path may be typed too).
    var choose = el("button", "choose", kind === "directory" ? "Choose a folder…" : "Choose a file…");
    choose.type = "button";
    choose.setAttribute("aria-label", (kind === "directory" ? "Choose a folder for " : "Choose a file for ") + (schema.title || wordsOf(name)));
    choose.dataset.chooseFor = id;
    choose.addEventListener("click", function () { send({ kind: "choose-path", field: id, directory: kind === "directory" }); });
    wrap.append(choose);
  }
  return wrap;
}

// A path the person chose in the native chooser: into its field (a list gets a line more).
export function putPath(id, path) {
  var input = document.getElementById(id);
  if (!input || !input.dataset || !input.dataset.kind) return;
  if (input.dataset.kind === "lines") input.value = input.value.replace(/\s*$/, "") + (input.value.trim() ? "\n" : "") + path;
  else input.value = path;
  input.dispatchEvent(new Event("input", { bubbles: true }));
}

// `options.paths`: the host's own form, whose folder and file settings get a chooser.
export function fillFields(container, prefix, schema, options) {
  var props = (schema && schema.properties) || {};
  var required = (schema && schema.required) || [];
  container.textContent = "";
  Object.keys(props).forEach(function (k) { container.append(fieldFor(prefix, k, props[k] || {}, required.indexOf(k) >= 0, options)); });
}

// Reads a form's fields into an object; throws a message for a person when something is wrong.
export function readFields(container) {
  var args = {};
  container.querySelectorAll(":scope > .field > [name]").forEach(function (input) {
    var name = input.name, kind = input.dataset.kind, required = input.dataset.required === "1";
    var schema = JSON.parse(input.dataset.schema || "{}");
    var label = schema.title || wordsOf(name);
    if (kind === "boolean") { args[name] = input.checked; return; }
    if (kind === "multi") {
      var values = JSON.parse(input.dataset.values);
      var picked = [];
      input.querySelectorAll("input[type=checkbox]").forEach(function (box) { if (box.checked) picked.push(values[Number(box.dataset.index)]); });
      if (input.dataset.min !== undefined && picked.length < Number(input.dataset.min)) throw label + ": pick at least " + input.dataset.min;
      if (input.dataset.max !== undefined && picked.length > Number(input.dataset.max)) throw label + ": pick at most " + input.dataset.max;
      if (picked.length || required) args[name] = picked;
      return;
    }
    if (kind === "lines") {
      var lines = input.value.split("\n").map(function (l) { return l.replace(/\r$/, ""); }).filter(function (l) { return l.trim() !== ""; });
      if (!lines.length) { if (required) throw label + " is required"; return; }
      if (schema.minItems !== undefined && lines.length < schema.minItems) throw label + ": give at least " + schema.minItems;
      if (schema.maxItems !== undefined && lines.length > schema.maxItems) throw label + ": give at most " + schema.maxItems;
      args[name] = lines;
      return;
    }
    var raw = input.value;
    if (raw === "") {
      if (required) throw label + " is required";
      return;
    }
    if (kind === "enum") args[name] = JSON.parse(raw);
    else if (kind === "integer" || kind === "number") {
      if (kind === "integer" && !/^-?\d+$/.test(raw)) throw label + " must be a whole number";
      var n = Number(raw);
      if (!isFinite(n)) throw label + " must be a number";
      if (schema.minimum !== undefined && n < schema.minimum) throw label + " must be at least " + schema.minimum;
      if (schema.maximum !== undefined && n > schema.maximum) throw label + " must be at most " + schema.maximum;
      args[name] = kind === "integer" ? parseInt(raw, 10) : n;
    } else if (kind === "json") {
      try { args[name] = JSON.parse(raw); } catch (e) { throw label + " is not valid JSON"; }
    } else {
      if (schema.minLength !== undefined && raw.length < schema.minLength) throw label + " needs at least " + schema.minLength + " characters";
      if (schema.maxLength !== undefined && raw.length > schema.maxLength) throw label + " takes at most " + schema.maxLength + " characters";
      if (input.validity && input.validity.typeMismatch) throw label + " is not a valid " + (schema.format || "value");
      args[name] = raw;
    }
  });
  return args;
}
