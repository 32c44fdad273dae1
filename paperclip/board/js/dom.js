// Building the page from data without ever parsing data as HTML: every text is a text node.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      el.className = value;
    } else if (value === true) {
      el.setAttribute(name, "");
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

let uid = 0;
/** A labelled form control: the label names it for screen readers and tests alike. */
export function field(label, control) {
  if (!control.id) control.id = `f${++uid}`;
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control);
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return h("time", { datetime: iso, title: iso }, d.toLocaleString());
}

export function badge(text, kind = text) {
  return h("span", { class: `badge badge-${String(kind).replace(/[^a-z_]/g, "")}` }, String(text).replace(/_/g, " "));
}

/** A message in the page's live region, and in a box where the action was. */
export function errorBox(error) {
  const code = error && error.code ? `${error.code}: ` : "";
  return h("p", { class: "error", role: "alert" }, code + (error && error.message ? error.message : String(error)));
}
