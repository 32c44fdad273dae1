// One card of the kanban board: the issue's identifier and title (two lines at most), what it
// does now, its priority and assignee, and a menu button for its status. The card is dragged to
// another column, or, focused, moved with Shift+Left and Shift+Right.

import { h, statusName } from "../dom.js";
import { liveState } from "../live.js";
import { choiceMenu } from "../menu.js";
import { ISSUE_STATUSES, issueHref } from "./issues.js";

/**
 * The card of `issue`. `move(issue, status, { follow })` changes its status (`follow`: the card
 * had the focus, so the page keeps it on the card); `drag.start(issue)` and `drag.end()` say
 * what is being dragged; `onMenu(open)` says when its status menu opens and closes.
 */
export function kanbanCard(companyId, issue, { agentName, move, drag, onMenu }) {
  const status = choiceMenu({
    label: `Change status of ${issue.identifier}`,
    title: `Move ${issue.identifier} to`,
    choices: ISSUE_STATUSES.map((s) => [s, statusName(s)]),
    current: issue.status,
    onChoose: (value) => move(issue, value, { follow: true }),
    onToggle: onMenu,
  });
  const live = issue.live && issue.live.state !== "idle" ? liveState(issue.live, { compact: true }) : null;
  const assignee = issue.assignee_agent_id ? agentName(issue.assignee_agent_id) : null;
  const node = h("li", {
    class: "kanban-card", draggable: "true", tabindex: 0, "data-issue": issue.id, "data-identifier": issue.identifier,
    "data-status": issue.status, "aria-label": `${issue.identifier} ${issue.title}`,
    "data-live": issue.live ? issue.live.state : null, "aria-describedby": "kanban-help",
  },
  h("div", { class: "card-top" }, h("span", { class: "card-id" }, issue.identifier), status.button),
  h("a", { href: issueHref(companyId, issue), draggable: "false", class: "card-title", title: issue.title }, issue.title),
  live ? h("div", { class: "card-state" }, live) : null,
  h("div", { class: "card-meta" },
    h("span", { class: `priority priority-${issue.priority}`, "data-priority": issue.priority }, statusName(issue.priority)),
    assignee ? h("span", { class: "assignee" }, assignee) : h("span", { class: "assignee muted" }, "Unassigned")),
  status.menu);
  node.addEventListener("dragstart", (e) => {
    drag.start(issue);
    e.dataTransfer.setData("text/plain", issue.id);
    e.dataTransfer.effectAllowed = "move";
    node.classList.add("dragging");
  });
  node.addEventListener("dragend", () => { drag.end(); node.classList.remove("dragging"); });
  node.addEventListener("keydown", (e) => {
    if (e.target !== node || !e.shiftKey || !["ArrowLeft", "ArrowRight"].includes(e.key)) return;
    e.preventDefault();
    const at = ISSUE_STATUSES.indexOf(issue.status) + (e.key === "ArrowRight" ? 1 : -1);
    if (at >= 0 && at < ISSUE_STATUSES.length) move(issue, ISSUE_STATUSES[at], { follow: true });
  });
  return node;
}
