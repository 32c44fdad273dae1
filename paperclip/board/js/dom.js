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

/** A status or kind as people read it: `in_progress` is "In progress". */
export function statusName(value) {
  const text = String(value ?? "").replace(/[_-]+/g, " ").trim();
  return text ? text[0].toUpperCase() + text.slice(1) : "";
}

export function badge(text, kind = text) {
  return h("span", { class: `badge badge-${String(kind).replace(/[^a-z_]/g, "")}`, "data-value": String(text) },
    statusName(text));
}

/** A duration in milliseconds as people read it: 820 ms, 4.2 s, 3 min 5 s. */
export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms) || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
  const minutes = Math.floor(ms / 60000);
  return `${minutes} min ${Math.round((ms % 60000) / 1000)} s`;
}

export const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** A table in a box that scrolls sideways on a narrow screen, and says so when it can. */
export function scrollTable(table, label) {
  // Focusable, so the keyboard scrolls it too; named apart from the panel around it.
  const box = h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": `${label || "The"} table` }, table);
  const hint = h("p", { class: "scroll-hint", hidden: true, "aria-hidden": "true" }, "Scroll sideways for more →");
  const wrap = h("div", { class: "scroll-wrap" }, hint, box);
  const update = () => { hint.hidden = box.scrollWidth <= box.clientWidth + 1; };
  if (globalThis.ResizeObserver) new ResizeObserver(update).observe(box);
  box.addEventListener("scroll", () => wrap.classList.toggle("scrolled", box.scrollLeft > 0));
  queueMicrotask(update);
  return wrap;
}

/** A message in the page's live region, and in a box where the action was. */
export function errorBox(error) {
  const code = error && error.code ? `${error.code}: ` : "";
  return h("p", { class: "error", role: "alert" }, code + (error && error.message ? error.message : String(error)));
}
