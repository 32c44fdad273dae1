// A line of code coloured by its language: highlight.js (vendored, the common languages) makes
// spans with classes, DOMPurify keeps only those, and the colours come from board.css.

import hljs from "../vendor/highlight/highlight.min.js";
import DOMPurify from "../vendor/dompurify/purify.es.mjs";

const BY_EXTENSION = {
  py: "python", js: "javascript", mjs: "javascript", cjs: "javascript", jsx: "javascript", ts: "typescript", tsx: "typescript",
  json: "json", md: "markdown", sh: "bash", bash: "bash", yml: "yaml", yaml: "yaml", css: "css", scss: "scss",
  html: "xml", xml: "xml", svg: "xml", go: "go", rs: "rust", java: "java", kt: "kotlin", c: "c", h: "c",
  cpp: "cpp", cc: "cpp", hpp: "cpp", rb: "ruby", php: "php", toml: "ini", ini: "ini", cfg: "ini", sql: "sql",
  swift: "swift", cs: "csharp", lua: "lua", pl: "perl", r: "r", diff: "diff", mk: "makefile",
};
const SPANS = { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"], RETURN_DOM_FRAGMENT: true };

/** The highlight.js language of a file, by its name; null when none fits. */
export function languageOf(path) {
  const name = String(path).split("/").pop().toLowerCase();
  if (name === "makefile") return "makefile";
  if (name === "dockerfile") return "dockerfile";
  const language = BY_EXTENSION[name.split(".").pop()];
  return language && hljs.getLanguage(language) ? language : null;
}

/** `text` coloured as `language` (plain text without one), as a fragment of spans. */
export function highlightLine(text, language) {
  if (!language || !text) return document.createTextNode(text || "");
  try {
    const html = hljs.highlight(text, { language, ignoreIllegals: true }).value;
    return DOMPurify.sanitize(html, SPANS);
  } catch {
    return document.createTextNode(text);
  }
}
