// A company's issues as a kanban board: one column per status. A card dragged to another column
// changes the issue's status (PATCH, as the issue page does); from the keyboard, a focused card
// moves with Shift+Left and Shift+Right, or with its own status menu. The API's refusal is shown.

import { all, patch, q } from "../api.js";
import { clear, errorBox, h, statusName } from "../dom.js";
import { liveFollower, liveState } from "../live.js";
import { ISSUE_STATUSES, issueFilters, issueHref } from "./issues.js";

const REFRESH_MS = 5000;

export async function kanbanView(companyId, signal) {
  const base = `/companies/${companyId}`;
  const [agents, projects] = await Promise.all([all(`${base}/agents`), all(`${base}/projects`)]);
  const agentName = (id) => (agents.find((a) => a.id === id) || { name: "?" }).name;
  const announce = h("p", { class: "sr-only", role: "status", "aria-live": "polite", "data-announce": "" });
  const problem = h("div", { "aria-live": "assertive" });
  const columns = new Map();
  let issues = [];
  let params = {};
  let dragging = null;

  async function move(issue, status) {
    if (issue.status === status) return;
    const before = issue.status;
    clear(problem);
    issue.status = status; // shown at once; put back if the API refuses
    draw();
    focusCard(issue.id);
    try {
      Object.assign(issue, await patch(`${base}/issues/${issue.id}`, { status }));
      clear(announce).append(`${issue.identifier} moved to ${statusName(status)}.`);
    } catch (error) {
      issue.status = before;
      draw();
      focusCard(issue.id);
      problem.append(errorBox(error));
    }
  }

  function focusCard(id) {
    const card = board.querySelector(`[data-issue="${id}"]`);
    if (card) card.focus();
  }

  function card(issue) {
    const menu = h("select", { class: "card-status", "aria-label": `Status of ${issue.identifier}` },
      ISSUE_STATUSES.map((s) => h("option", { value: s, selected: s === issue.status }, statusName(s))));
    menu.addEventListener("change", () => move(issue, menu.value));
    const node = h("li", {
      class: "kanban-card", draggable: "true", tabindex: 0, "data-issue": issue.id, "data-identifier": issue.identifier,
      "data-status": issue.status, "aria-label": `${issue.identifier} ${issue.title}`,
      "data-live": issue.live ? issue.live.state : null,
      "aria-describedby": "kanban-help",
    },
    h("a", { href: issueHref(companyId, issue), draggable: "false" }, issue.identifier), " ",
    h("span", { class: "card-title" }, issue.title),
    issue.live && issue.live.state !== "idle" ? h("div", { class: "card-state" }, liveState(issue.live, { compact: true })) : null,
    h("div", { class: "muted small" }, statusName(issue.priority), issue.assignee_agent_id ? ` · ${agentName(issue.assignee_agent_id)}` : ""),
    menu);
    node.addEventListener("dragstart", (e) => {
      dragging = issue;
      e.dataTransfer.setData("text/plain", issue.id);
      e.dataTransfer.effectAllowed = "move";
      node.classList.add("dragging");
    });
    node.addEventListener("dragend", () => { dragging = null; node.classList.remove("dragging"); });
    node.addEventListener("keydown", (e) => {
      if (e.target !== node || !e.shiftKey || !["ArrowLeft", "ArrowRight"].includes(e.key)) return;
      e.preventDefault();
      const at = ISSUE_STATUSES.indexOf(issue.status) + (e.key === "ArrowRight" ? 1 : -1);
      if (at >= 0 && at < ISSUE_STATUSES.length) move(issue, ISSUE_STATUSES[at]);
    });
    return node;
  }

  const board = h("div", { class: "kanban", "data-kanban": "" },
    ISSUE_STATUSES.map((status) => {
      const list = h("ul", { class: "kanban-cards", "aria-label": statusName(status) });
      const count = h("span", { class: "muted" });
      const column = h("section", { class: "kanban-column", "data-column": status, "aria-label": statusName(status) },
        h("h2", {}, statusName(status), " ", count), list);
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
      columns.set(status, { list, count });
      return column;
    }));

  function draw() {
    for (const [status, { list, count }] of columns) {
      const mine = issues.filter((i) => i.status === status);
      clear(list).append(...mine.map(card));
      if (!mine.length) list.append(h("li", { class: "muted empty" }, "None"));
      clear(count).append(`(${mine.length})`);
    }
  }

  async function load() {
    const { status, ...rest } = params; // every column shows: the status filter does not apply
    issues = await all(`${base}/issues${q({ ...rest, sort: "-updated" })}`);
    follower.track(issues);
    if (dragging || (board.contains(document.activeElement) && document.activeElement.tagName === "SELECT")) return;
    const focused = board.contains(document.activeElement) ? document.activeElement.closest("[data-issue]") : null;
    draw();
    if (focused) focusCard(focused.dataset.issue);
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
    h("p", { class: "muted keyboard-only", id: "kanban-help" }, "Drag a card to another column to change its status; or focus a card and press Shift+→ or Shift+←, or pick its status."),
    problem, announce, board);
}
