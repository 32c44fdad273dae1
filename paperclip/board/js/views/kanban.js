// A company's issues as a kanban board: one column per status. A card dragged to another column
// changes the issue's status (PATCH, as the issue page does); from the keyboard, a focused card
// moves with Shift+Left and Shift+Right; its menu button offers every status. The API's refusal
// is shown. Any column folds to a narrow rail (Done and Cancelled start folded: they only grow,
// and are read least); on a phone the columns are sections, one under the other.

import { all, patch, q } from "../api.js";
import { clear, errorBox, h, statusName } from "../dom.js";
import { liveFollower } from "../live.js";
import { ISSUE_STATUSES, issueFilters } from "./issues.js";
import { kanbanCard } from "./kanban_card.js";

const REFRESH_MS = 5000;
const FOLDED_KEY = "paperclip.kanban.folded";
const FOLDED_FIRST = ["done", "cancelled"];

/** The folded columns, as this browser left them. */
function foldedColumns() {
  try {
    const saved = JSON.parse(localStorage.getItem(FOLDED_KEY));
    if (Array.isArray(saved)) return new Set(saved.filter((s) => ISSUE_STATUSES.includes(s)));
  } catch { /* none saved, or storage refused */ }
  return new Set(FOLDED_FIRST);
}

function saveFolded(folded) {
  try { localStorage.setItem(FOLDED_KEY, JSON.stringify([...folded])); } catch { /* storage refused: this visit only */ }
}

export async function kanbanView(companyId, signal) {
  const base = `/companies/${companyId}`;
  const [agents, projects] = await Promise.all([all(`${base}/agents`), all(`${base}/projects`)]);
  const agentName = (id) => (agents.find((a) => a.id === id) || { name: "?" }).name;
  const announce = h("p", { class: "sr-only", role: "status", "aria-live": "polite", "data-announce": "" });
  const problem = h("div", { "aria-live": "assertive" });
  const columns = new Map();
  const folded = foldedColumns();
  let issues = [];
  let params = {};
  let dragging = null;
  let menuOpen = false;
  let shown = null; // what the board shows, to draw it again only when it changed

  async function move(issue, status, { follow = false } = {}) {
    if (issue.status === status) return;
    const before = issue.status;
    clear(problem);
    issue.status = status; // shown at once; put back if the API refuses
    if (follow && folded.has(status)) fold(status, false); // the focus follows the card there
    draw();
    if (follow) focusCard(issue.id);
    try {
      Object.assign(issue, await patch(`${base}/issues/${issue.id}`, { status }));
      clear(announce).append(`${issue.identifier} moved to ${statusName(status)}.`);
    } catch (error) {
      issue.status = before;
      draw();
      if (follow) focusCard(issue.id);
      problem.append(errorBox(error));
    }
  }

  function focusCard(id) {
    const card = board.querySelector(`[data-issue="${id}"]`);
    if (card) card.focus();
  }

  function fold(status, yes) {
    if (yes) folded.add(status); else folded.delete(status);
    saveFolded(folded);
    const { column, toggle } = columns.get(status);
    column.classList.toggle("folded", yes);
    toggle.setAttribute("aria-expanded", String(!yes));
  }

  const drag = { start: (issue) => { dragging = issue; }, end: () => { dragging = null; } };
  const card = (issue) => kanbanCard(companyId, issue, { agentName, move, drag, onMenu: (open) => { menuOpen = open; } });

  const board = h("div", { class: "kanban", "data-kanban": "" },
    ISSUE_STATUSES.map((status) => {
      const list = h("ul", { class: "kanban-cards", "aria-label": statusName(status), id: `kanban-${status}` });
      const count = h("span", { class: "count" });
      const toggle = h("button", {
        type: "button", class: "column-toggle", "aria-expanded": String(!folded.has(status)), "aria-controls": list.id,
        title: `Fold or unfold ${statusName(status)}`,
      }, h("span", { class: "column-name" }, statusName(status)), " ", count);
      toggle.addEventListener("click", () => fold(status, !folded.has(status)));
      const column = h("section", {
        class: `kanban-column${folded.has(status) ? " folded" : ""}`, "data-column": status, "aria-label": statusName(status),
      }, h("h2", {}, toggle), list);
      column.addEventListener("dragover", (e) => {
        if (!dragging) return;
        e.preventDefault();
        e.dataTransfer.dropEffect = "move";
        column.classList.add("drop-target");
      });
      column.addEventListener("dragleave", () => column.classList.remove("drop-target"));
      column.addEventListener("drop", (e) => {
        e.preventDefault();
        column.classList.remove("drop-target");
        const id = e.dataTransfer.getData("text/plain");
        const issue = issues.find((i) => i.id === id) || dragging;
        if (issue) move(issue, status);
      });
      columns.set(status, { column, list, count, toggle });
      return column;
    }));

  function draw() {
    for (const [status, { list, count }] of columns) {
      const mine = issues.filter((i) => i.status === status);
      clear(list).append(...mine.map(card));
      if (!mine.length) list.append(h("li", { class: "muted empty" }, "None"));
      clear(count).append(`(${mine.length})`);
      count.dataset.count = String(mine.length);
    }
  }

  async function load() {
    const { status, ...rest } = params; // every column shows: the status filter does not apply
    issues = await all(`${base}/issues${q({ ...rest, sort: "-updated" })}`);
    follower.track(issues);
    if (dragging || menuOpen) return; // drawn again at the next pass
    const sig = JSON.stringify(issues);
    if (sig === shown) return; // nothing changed: the focus stays where it is
    shown = sig;
    const active = document.activeElement;
    const focused = board.contains(active) ? active.closest("[data-issue]") : null;
    const part = focused && active !== focused ? [...active.classList].find((c) => ["menu-trigger", "card-title"].includes(c)) : null;
    draw();
    if (!focused) return;
    focusCard(focused.dataset.issue);
    const again = part && board.querySelector(`[data-issue="${focused.dataset.issue}"] .${part}`);
    if (again) again.focus();
  }
  const follower = liveFollower(companyId, () => load().catch(() => {}));
  const filters = issueFilters(agents, projects, (wanted) => { params = wanted; load().catch(() => {}); }, { sort: false });
  filters.querySelector("[name=status]").closest(".field").hidden = true;
  params = filters.values();
  await load();
  const timer = setInterval(() => { if (!document.hidden) load().catch(() => {}); }, REFRESH_MS);
  signal.addEventListener("abort", () => { clearInterval(timer); follower.stop(); });

  return h("div", { class: "kanban-page" },
    h("div", { class: "title-row" }, h("h1", {}, "Kanban"), h("a", { href: `#/c/${companyId}`, class: "button-link" }, "List view")),
    filters,
    h("p", { class: "muted keyboard-only small", id: "kanban-help" },
      "Drag a card to another column, or focus it and press Shift+→ or Shift+←, or use its ⋯ button to change its status. A column's name folds it."),
    problem, announce, board);
}
