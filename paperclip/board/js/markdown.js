// Markdown as people wrote it, rendered safely: marked turns it into HTML, raw HTML in the text
// shown as written (escaped, never markup: a parser given `<img onerror>` would meet the
// handler, which the CSP refuses), DOMPurify keeps only harmless markup (no script, no inline
// style, no event handler, no image from elsewhere), and the result is parsed into a node. The
// page's CSP ('self' only) holds whatever slips by.

import { marked } from "../vendor/marked/marked.esm.js";
import DOMPurify from "../vendor/dompurify/purify.es.mjs";
import { h } from "./dom.js";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (text) => String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);

marked.use({ gfm: true, breaks: true, async: false, renderer: { html: ({ text }) => escapeHtml(text) } });

const PURIFY = {
  FORBID_TAGS: ["style", "img", "svg", "math", "form", "input", "button", "textarea", "select", "iframe"],
  FORBID_ATTR: ["style", "class", "id"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  RETURN_DOM_FRAGMENT: true,
};

// Links open in a new tab without the page's name or address.
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.getAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/** `text` (Markdown) as a sanitised node: a `div.md`. An empty text gives `empty` in muted. */
export function markdown(text, { empty = "", inline = false, cls = "" } = {}) {
  const box = h("div", { class: `${inline ? "md md-inline" : "md"}${cls ? ` ${cls}` : ""}` });
  if (!text || !String(text).trim()) {
    if (empty) box.append(h("span", { class: "muted" }, empty));
    return box;
  }
  const html = marked.parse(String(text));
  box.append(DOMPurify.sanitize(html, PURIFY));
  // No blank text at the ends: the box reads as what was written.
  for (const end of ["firstChild", "lastChild"]) {
    while (box[end] && box[end].nodeType === Node.TEXT_NODE && !box[end].textContent.trim()) box[end].remove();
  }
  return box;
}
