// Keyboard shortcuts for the main actions; `?` lists them. A shortcut never fires while the
// focus is in a field (typing a "c" in a comment is a "c"), nor with Ctrl, Alt or Meta held.

import { h } from "./dom.js";
import { currentCompany } from "./views/companies.js";

const company = () => currentCompany((location.hash.match(/^#\/c\/([0-9a-f-]{36})/) || [])[1]);
const go = (suffix) => () => { const c = company(); if (c) location.hash = `#/c/${c}${suffix}`; };
const focus = (selector) => () => {
  const el = document.querySelector(selector);
  if (!el) return false;
  el.focus();
  if (el.select && el.type !== "select-one") el.select();
  el.scrollIntoView({ block: "nearest" });
  return true;
};

/** Focus what `selector` finds once the page shows it (after a route change renders). */
function focusSoon(selector, tries = 30) {
  if (focus(selector)() || tries <= 0) return;
  setTimeout(() => focusSoon(selector, tries - 1), 100);
}

const NEW_ISSUE = "[data-new-issue]";

/** Press what `selector` finds once the page shows it. */
function pressSoon(selector, tries = 30) {
  const el = document.querySelector(selector);
  if (el) { el.click(); return; }
  if (tries > 0) setTimeout(() => pressSoon(selector, tries - 1), 100);
}

/** [keys, what it does, action]: "g i" is g then i. An action that finds nothing to do on this
 * page returns false (and nothing happens). */
export const SHORTCUTS = [
  ["?", "Show these shortcuts", () => toggleHelp()],
  ["g i", "Go to the inbox", go("/inbox")],
  ["g d", "Go to the dashboard", go("/dashboard")],
  ["g l", "Go to the issue list", go("")],
  ["g k", "Go to the kanban board", go("/kanban")],
  ["g a", "Go to the agents", go("/agents")],
  ["g p", "Go to the projects", go("/projects")],
  ["g c", "Go to the companies", () => { location.hash = "#/"; }],
  ["/", "Search the issues", () => { if (!focus("[data-search]")()) { go("")(); focusSoon("[data-search]"); } }],
  ["c", "Create an issue (opens the New issue form)", () => {
    if (document.querySelector(NEW_ISSUE)) return pressSoon(NEW_ISSUE);
    go("")();
    return pressSoon(NEW_ISSUE);
  }],
  ["a", "Assign the issue (issue page)", focus(".issue select[name=assignee_agent_id]")],
  ["s", "Change the issue's status (issue page)", focus(".issue select[name=status]")],
  ["m", "Write a comment (issue page)", focus(".issue textarea[name=body]")],
  ["e", "Edit the issue's title and description (issue page)", () => {
    const edit = document.querySelector("[data-edit-issue]");
    if (edit) edit.click();
    return Boolean(edit);
  }],
  ["r", "Show the raw events, or the transcript again (run and issue pages)", () => {
    const toggle = document.querySelector("[data-raw-toggle]");
    if (toggle) toggle.click();
    return Boolean(toggle);
  }],
];

let dialog = null;

function toggleHelp() {
  if (!dialog) {
    dialog = h("dialog", { id: "shortcuts", "aria-labelledby": "shortcuts-title" },
      h("h2", { id: "shortcuts-title" }, "Keyboard shortcuts"),
      h("table", {}, h("tbody", {}, SHORTCUTS.map(([keys, what]) => h("tr", {},
        h("th", { scope: "row" }, keys.split(" ").map((k, i) => [i ? " then " : "", h("kbd", {}, k)])), h("td", {}, what))),
      h("tr", {}, h("th", { scope: "row" }, h("kbd", {}, "Shift+→"), " ", h("kbd", {}, "Shift+←")),
        h("td", {}, "Move the focused kanban card to the next or previous status")))),
      h("p", { class: "muted" }, "Not while typing in a field. Esc closes this."),
      h("button", { type: "button", onclick: () => dialog.close() }, "Close"));
    document.body.append(dialog);
  }
  if (dialog.open) dialog.close();
  else dialog.showModal();
}

function typing(target) {
  return target instanceof HTMLElement && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
}

/** Listen for the shortcuts on the whole page. */
export function installShortcuts() {
  document.getElementById("shortcuts-button")?.addEventListener("click", () => toggleHelp());
  let pending = "";
  let timer = null;
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.altKey || e.metaKey || e.defaultPrevented || typing(e.target)) return;
    if (dialog && dialog.open && e.key !== "?") return; // the dialog handles Esc itself
    const typed = pending ? `${pending} ${e.key}` : e.key;
    const match = SHORTCUTS.find(([keys]) => keys === typed);
    if (!match && SHORTCUTS.some(([keys]) => keys.startsWith(`${typed} `))) {
      pending = typed;
      clearTimeout(timer);
      timer = setTimeout(() => { pending = ""; }, 1500);
      e.preventDefault();
      return;
    }
    pending = "";
    if (!match) return;
    if (match[2]() !== false) e.preventDefault();
  });
}
