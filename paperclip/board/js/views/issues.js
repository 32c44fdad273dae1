// A company's issues: searched, filtered and sorted by the API's list parameters; make one.
// The same filters serve the kanban view (views/kanban.js).

import { ApiError, all, get, post, q } from "../api.js";
import { emptyState, formDialog } from "../dialog.js";
import { badge, button, clear, errorBox, field, h, scrollTable, statusName, when } from "../dom.js";
import { liveFollower, liveState } from "../live.js";
import { projectName, projectOptions } from "./projects.js";

export const ISSUE_STATUSES = ["backlog", "todo", "in_progress", "in_review", "blocked", "done", "cancelled"];
export const PRIORITIES = ["urgent", "high", "medium", "low"];
export const SORTS = [
  ["-created", "Newest first"], ["created", "Oldest first"], ["-updated", "Last changed first"], ["updated", "Least recently changed"],
];
const IDENTIFIER = /^[A-Za-z][A-Za-z0-9]{1,9}-\d+$/;

export function agentOptions(agents, selected, none = "Nobody") {
  return [h("option", { value: "" }, none),
    ...agents.map((a) => h("option", { value: a.id, selected: a.id === selected }, `${a.name} (${a.provider})`))];
}

/** The issue a URL names, by its identifier (`ACM-1`, any case) or its id. */
export async function resolveIssue(companyId, ref) {
  const base = `/companies/${companyId}/issues`;
  if (!IDENTIFIER.test(ref)) return get(`${base}/${ref}`);
  const { items } = await get(`${base}${q({ identifier: ref, limit: "1" })}`);
  if (!items.length) throw new ApiError(404, { code: "issue_not_found", message: `no issue ${ref.toUpperCase()} in this company` });
  return items[0];
}

/** The link of an issue's page: its identifier, as people name it. */
export const issueHref = (companyId, issue) => `#/c/${companyId}/issues/${issue.identifier}`;

/**
 * The search box, filters and sort of a company's issues, kept in the URL's query
 * (`#/c/<id>?q=build&status=todo`) so a filtered list can be linked and reloaded.
 * `onChange(params)` is called with the API's list parameters.
 */
export function issueFilters(agents, projects, onChange, { sort = true } = {}) {
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const search = h("input", { type: "search", name: "q", value: params.get("q") || "", maxlength: 200, placeholder: "Words or an identifier", "data-search": "" });
  const status = h("select", { name: "status" }, h("option", { value: "" }, "Any"),
    ISSUE_STATUSES.map((s) => h("option", { value: s, selected: params.get("status") === s }, statusName(s))));
  const assignee = h("select", { name: "assignee" }, agentOptions(agents, params.get("assignee_agent_id"), "Anyone"));
  const project = h("select", { name: "project" }, projectOptions(projects, params.get("project_id"), "Any"));
  const priority = h("select", { name: "priority" }, h("option", { value: "" }, "Any"),
    PRIORITIES.map((p) => h("option", { value: p, selected: params.get("priority") === p }, statusName(p))));
  const order = h("select", { name: "sort" }, SORTS.map(([v, label]) => h("option", { value: v, selected: (params.get("sort") || "-created") === v }, label)));
  const values = () => ({
    q: search.value.trim(), status: status.value, assignee_agent_id: assignee.value, project_id: project.value,
    priority: priority.value, sort: sort ? order.value : "",
  });
  let timer = null;
  const route = location.hash.split("?")[0];
  const changed = () => {
    // A search typed just before leaving the page changes nothing of the next one.
    if (!node.isConnected || location.hash.split("?")[0] !== route) return;
    const wanted = values();
    history.replaceState(null, "", `${route}${q(wanted)}`);
    onChange(wanted);
  };
  search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(changed, 250); });
  search.addEventListener("keydown", (e) => { if (e.key === "Enter") { clearTimeout(timer); changed(); } });
  for (const control of [status, assignee, project, priority, order]) control.addEventListener("change", changed);
  const node = h("div", { class: "filters", role: "group", "aria-label": "Filters" },
    field("Search", search), field("Status", status), field("Assignee", assignee), field("Project", project),
    field("Priority", priority), sort ? field("Sort", order) : null);
  node.values = values;
  node.search = search;
  return node;
}

const REFRESH_MS = 10000;

/** The New issue form (in a dialog): title, description, assignee, project, priority. */
export function newIssueForm(companyId, agents, projects) {
  const title = h("input", { name: "title", required: true, maxlength: 500 });
  const description = h("textarea", { name: "description", rows: 4, placeholder: "Markdown: what to do, and how to know it is done" });
  const assignee = h("select", { name: "assignee_agent_id" }, agentOptions(agents, null));
  const project = h("select", { name: "project_id" }, projectOptions(projects, null, "The assignee's default, if any"));
  const priority = h("select", { name: "priority" }, PRIORITIES.map((p) => h("option", { value: p, selected: p === "medium" }, statusName(p))));
  const status = h("div", { "aria-live": "polite" });
  return h("form", {
    class: "panel", "aria-label": "New issue", id: "new-issue",
    onsubmit: async (e) => {
      e.preventDefault();
      clear(status);
      try {
        const body = { title: title.value, description: description.value, priority: priority.value };
        if (assignee.value) body.assignee_agent_id = assignee.value;
        if (project.value) body.project_id = project.value;
        const issue = await post(`/companies/${companyId}/issues`, body);
        location.hash = issueHref(companyId, issue);
      } catch (error) { status.append(errorBox(error)); }
    },
  }, h("h2", {}, "New issue"), field("Title", title), field("Description", description),
  h("div", { class: "filters" }, field("Assignee", assignee), field("Project", project), field("Priority", priority)),
  h("button", { type: "submit", class: "btn primary" }, "Create issue"), status);
}

/** A row of the list; on a phone the row is a card (each cell says what it is). */
function issueRow(companyId, i, byId, projects, listed) {
  const cell = (label, ...children) => h("td", { "data-label": label }, ...children);
  // The tree: a part names the issue it is a part of (linked when it is in the list too).
  const parent = i.parent_id ? listed[i.parent_id] : null;
  const partOf = !i.parent_id ? null : h("span", { class: "muted part-of", "data-part-of": parent ? parent.identifier : "" },
    " · part of ", parent ? h("a", { href: issueHref(companyId, parent) }, parent.identifier) : "another issue");
  return h("tr", { "data-issue": i.id, "data-identifier": i.identifier, "data-live": i.live ? i.live.state : null },
    cell("Issue", h("a", { href: issueHref(companyId, i) }, i.identifier)),
    cell("Title", h("a", { href: issueHref(companyId, i), class: "row-title" }, i.title), partOf),
    h("td", { class: "state", "data-label": "Now" }, liveState(i.live, { compact: true })),
    cell("Status", badge(i.status)),
    h("td", { class: "priority", "data-label": "Priority" }, statusName(i.priority)),
    cell("Assignee", i.assignee_agent_id ? (byId[i.assignee_agent_id] || {}).name || "?" : h("span", { class: "muted" }, "nobody")),
    h("td", { class: "project", "data-label": "Project" }, projectName(projects, i.project_id)),
    cell("Changed", when(i.updated_at)));
}

export async function issuesView(companyId, signal) {
  const [agents, projects] = await Promise.all([all(`/companies/${companyId}/agents`), all(`/companies/${companyId}/projects`)]);
  const byId = Object.fromEntries(agents.map((a) => [a.id, a]));
  const tbody = h("tbody");
  const count = h("p", { class: "muted", role: "status", "data-count": "" });
  const table = h("table", { class: "issues cardify" },
    h("caption", { class: "sr-only" }, "Issues"),
    h("thead", {}, h("tr", {}, ["Issue", "Title", "Now", "Status", "Priority", "Assignee", "Project", "Changed"].map((t) => h("th", { scope: "col" }, t)))),
    tbody);
  const dialog = formDialog(newIssueForm(companyId, agents, projects), { label: "New issue" });
  dialog.button.dataset.newIssue = "";
  const empty = h("div");

  let asked = 0;
  let shown = null;
  const follower = liveFollower(companyId, () => load(filters.values()).catch(() => {}));
  async function load(params) {
    const mine = ++asked;
    const issues = await all(`/companies/${companyId}/issues${q(params)}`);
    if (mine !== asked) return; // a later search answered first
    follower.track(issues);
    const sig = JSON.stringify(issues);
    if (sig === shown) return;
    shown = sig;
    const listed = Object.fromEntries(issues.map((i) => [i.id, i]));
    clear(tbody).append(...issues.map((i) => issueRow(companyId, i, byId, projects, listed)));
    clear(empty);
    table.hidden = !issues.length;
    const filtered = Object.entries(params).some(([k, v]) => v && k !== "sort");
    if (!issues.length && filtered) {
      empty.append(emptyState("No issue matches these filters.", h("a", { href: `#/c/${companyId}` }, "Show every issue")));
    } else if (!issues.length) {
      empty.append(emptyState("No issue yet. An issue is a piece of work for an agent: say what to do, and assign it.",
        button("Make the first issue", { kind: "primary", onclick: dialog.open })));
    }
    clear(count).append(`${issues.length} ${issues.length === 1 ? "issue" : "issues"}`);
  }
  const filters = issueFilters(agents, projects, (params) => load(params).catch((e) => clear(count).append(errorBox(e))));
  await load(filters.values());
  const timer = setInterval(() => { if (!document.hidden) load(filters.values()).catch(() => {}); }, REFRESH_MS);
  if (signal) signal.addEventListener("abort", () => { clearInterval(timer); follower.stop(); });

  return h("div", { class: "issues-page" }, h("div", { class: "title-row" }, h("h1", {}, "Issues"),
    h("div", { class: "title-actions" }, h("a", { href: `#/c/${companyId}/kanban`, class: "button-link" }, "Kanban view"), " ", dialog.button)),
  filters, count, empty, scrollTable(table, "Issues"), dialog.dialog);
}
