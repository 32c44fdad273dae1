// A company's issues: searched, filtered and sorted by the API's list parameters; make one.
// The same filters serve the kanban view (views/kanban.js).

import { ApiError, all, get, post, q } from "../api.js";
import { badge, clear, errorBox, field, h, scrollTable, statusName, when } from "../dom.js";
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

export async function issuesView(companyId) {
  const [agents, projects] = await Promise.all([all(`/companies/${companyId}/agents`), all(`/companies/${companyId}/projects`)]);
  const byId = Object.fromEntries(agents.map((a) => [a.id, a]));
  const tbody = h("tbody");
  const count = h("p", { class: "muted", role: "status", "data-count": "" });
  const table = h("table", { class: "issues" },
    h("caption", { class: "sr-only" }, "Issues"),
    h("thead", {}, h("tr", {}, ["Issue", "Title", "Status", "Priority", "Assignee", "Project", "Changed"].map((t) => h("th", { scope: "col" }, t)))),
    tbody);

  let asked = 0;
  async function load(params) {
    const mine = ++asked;
    const issues = await all(`/companies/${companyId}/issues${q(params)}`);
    if (mine !== asked) return; // a later search answered first
    clear(tbody).append(...issues.map((i) => h("tr", { "data-issue": i.id, "data-identifier": i.identifier },
      h("td", {}, h("a", { href: issueHref(companyId, i) }, i.identifier)),
      h("td", {}, i.title),
      h("td", {}, badge(i.status)),
      h("td", { class: "priority" }, statusName(i.priority)),
      h("td", {}, i.assignee_agent_id ? (byId[i.assignee_agent_id] || {}).name || "?" : ""),
      h("td", { class: "project" }, projectName(projects, i.project_id)),
      h("td", {}, when(i.updated_at)))));
    if (!issues.length) tbody.append(h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No issue matches.")));
    clear(count).append(`${issues.length} ${issues.length === 1 ? "issue" : "issues"}`);
  }
  const filters = issueFilters(agents, projects, (params) => load(params).catch((e) => clear(count).append(errorBox(e))));
  await load(filters.values());

  const title = h("input", { name: "title", required: true, maxlength: 500 });
  const description = h("textarea", { name: "description", rows: 3 });
  const assignee = h("select", { name: "assignee_agent_id" }, agentOptions(agents, null));
  const project = h("select", { name: "project_id" }, projectOptions(projects, null, "The assignee's default, if any"));
  const priority = h("select", { name: "priority" }, PRIORITIES.map((p) => h("option", { value: p, selected: p === "medium" }, statusName(p))));
  const status = h("div", { "aria-live": "polite" });
  const form = h("form", {
    class: "panel", "aria-label": "New issue", id: "new-issue",
    onsubmit: async (e) => {
      e.preventDefault();
      try {
        const body = { title: title.value, description: description.value, priority: priority.value };
        if (assignee.value) body.assignee_agent_id = assignee.value;
        if (project.value) body.project_id = project.value;
        const issue = await post(`/companies/${companyId}/issues`, body);
        location.hash = issueHref(companyId, issue);
      } catch (error) { clear(status).append(errorBox(error)); }
    },
  }, h("h2", {}, "New issue"), field("Title", title), field("Description", description),
  h("div", { class: "filters" }, field("Assignee", assignee), field("Project", project), field("Priority", priority)),
  h("button", { type: "submit" }, "Create issue"), status);

  return h("div", {}, h("div", { class: "title-row" }, h("h1", {}, "Issues"),
    h("a", { href: `#/c/${companyId}/kanban`, class: "button-link" }, "Kanban view")),
  filters, count, scrollTable(table, "Issues"), form);
}
