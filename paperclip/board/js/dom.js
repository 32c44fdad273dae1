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

/** How long ago (or ahead) a moment is, as people say it: "just now", "3 min ago", "in 2 h". */
export function ago(iso, now = Date.now()) {
  const ms = now - Date.parse(iso);
  if (Number.isNaN(ms)) return "";
  const ahead = ms < 0;
  const s = Math.abs(ms) / 1000;
  let text;
  if (s < 45) return ahead ? "in a moment" : "just now";
  if (s < 3600) text = `${Math.max(1, Math.round(s / 60))} min`;
  else if (s < 86400) text = `${Math.round(s / 3600)} h`;
  else if (s < 86400 * 30) text = plural(Math.round(s / 86400), "day");
  else return new Date(iso).toLocaleDateString();
  return ahead ? `in ${text}` : `${text} ago`;
}

/** How long something has gone on: "12 s", "2 min", "1 h 5 min". */
export function elapsed(iso, now = Date.now()) {
  const s = Math.max(0, (now - Date.parse(iso)) / 1000);
  if (Number.isNaN(s)) return "";
  if (s < 60) return `${Math.floor(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** A moment as a relative time ("3 min ago"), the exact one on hover (its title). The page
 * keeps it current (`tickTimes`). */
export function when(iso) {
  if (!iso) return "";
  const exact = new Date(iso).toLocaleString();
  return h("time", { datetime: iso, title: exact, "data-rel": "ago" }, ago(iso));
}

/** "running for 2 min": how long since `iso`, kept current. */
export function runningFor(iso, prefix = "running for ") {
  if (!iso) return "";
  return h("time", { datetime: iso, title: new Date(iso).toLocaleString(), "data-rel": "for", "data-prefix": prefix },
    `${prefix}${elapsed(iso)}`);
}

/** Bring every relative time on the page up to date. */
export function tickTimes(root = document) {
  const now = Date.now();
  for (const t of root.querySelectorAll("time[data-rel]")) {
    const iso = t.getAttribute("datetime");
    const text = t.dataset.rel === "for" ? `${t.dataset.prefix || ""}${elapsed(iso, now)}` : ago(iso, now);
    if (t.textContent !== text) t.textContent = text;
  }
}

/** A button of a weight: `primary` (the page's main action), `secondary`, `danger`
 * (destructive: styled apart, and confirmed by a second press, see `confirmed`). */
export function button(label, { kind = "secondary", onclick, ...attrs } = {}) {
  return h("button", { type: "button", class: `btn ${kind}`, onclick, ...attrs }, label);
}

/**
 * A destructive action's button: the first press arms it ("Confirm: Delete"), the second does
 * it; it disarms after a few seconds or on blur. `action()` runs on the second press; a
 * refusal goes to `onError`.
 */
export function confirmed(label, action, { onError = () => {}, ...attrs } = {}) {
  const btn = button(label, { kind: "danger", ...attrs });
  let armed = false;
  let timer = null;
  const disarm = () => { armed = false; btn.classList.remove("armed"); btn.textContent = label; };
  btn.addEventListener("click", async () => {
    if (!armed) {
      armed = true;
      btn.classList.add("armed");
      btn.textContent = `Confirm: ${label.toLowerCase()}`;
      clearTimeout(timer);
      timer = setTimeout(disarm, 6000);
      return;
    }
    clearTimeout(timer);
    btn.disabled = true;
    try { await action(); } catch (error) { onError(error); } finally { btn.disabled = false; disarm(); }
  });
  return btn;
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
  if (table.classList && table.classList.contains("cardify")) labelCells(table);
  return wrap;
}

/** On a phone a `cardify` table is a list of cards: each cell is labelled by its column (its
 * `data-label`), kept as rows are drawn again. */
export function labelCells(table) {
  const label = () => {
    const heads = [...table.querySelectorAll("thead th")].map((th) => th.textContent);
    for (const row of table.querySelectorAll("tbody tr")) {
      [...row.children].forEach((cell, i) => { if (!cell.dataset.label && heads[i] && cell.colSpan === 1) cell.dataset.label = heads[i]; });
    }
  };
  label();
  if (globalThis.MutationObserver) new MutationObserver(label).observe(table, { childList: true, subtree: true });
}

/** A refusal where the action was: the API's message in words, its code behind a disclosure. */
export function errorBox(error) {
  const message = error && error.message ? error.message : String(error);
  const box = h("div", { class: "error", role: "alert", "data-code": (error && error.code) || null },
    message[0] ? message[0].toUpperCase() + message.slice(1) : message);
  if (error && error.code) {
    box.append(" ", h("details", { class: "code" }, h("summary", {}, "Details"), h("code", {}, error.code),
      error.status ? ` (HTTP ${error.status})` : ""));
  }
  return box;
}
