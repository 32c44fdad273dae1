import { all, post, q } from "../api.js";
import { badge, clear, errorBox, field, h } from "../dom.js";
import { projectName, projectOptions } from "./projects.js";

export const ISSUE_STATUSES = ["backlog", "todo", "in_progress", "in_review", "blocked", "done", "cancelled"];

export function agentOptions(agents, selected, none = "Nobody") {
  return [h("option", { value: "" }, none),
    ...agents.map((a) => h("option", { value: a.id, selected: a.id === selected }, `${a.name} (${a.provider})`))];
}

export async function issuesView(companyId) {
  const [agents, projects] = await Promise.all([all(`/companies/${companyId}/agents`), all(`/companies/${companyId}/projects`)]);
  const byId = Object.fromEntries(agents.map((a) => [a.id, a]));
  const statusFilter = h("select", { name: "status" },
    h("option", { value: "" }, "Any"), ISSUE_STATUSES.map((s) => h("option", { value: s }, s)));
  const assigneeFilter = h("select", { name: "assignee" }, agentOptions(agents, null, "Anyone"));
  const projectFilter = h("select", { name: "project" }, projectOptions(projects, null, "Any"));
  const tbody = h("tbody");
  const table = h("table", { class: "issues" },
    h("caption", { class: "sr-only" }, "Issues"),
    h("thead", {}, h("tr", {}, ["Issue", "Title", "Status", "Assignee", "Project"].map((t) => h("th", { scope: "col" }, t)))),
    tbody);

  async function load() {
    const filters = { status: statusFilter.value, assignee_agent_id: assigneeFilter.value, project_id: projectFilter.value };
    const issues = await all(`/companies/${companyId}/issues${q(filters)}`);
    clear(tbody).append(...issues.map((i) => h("tr", { "data-issue": i.id },
      h("td", {}, h("a", { href: `#/c/${companyId}/issues/${i.id}` }, i.identifier)),
      h("td", {}, i.title),
      h("td", {}, badge(i.status)),
      h("td", {}, i.assignee_agent_id ? (byId[i.assignee_agent_id] || {}).name || "?" : ""),
      h("td", { class: "project" }, projectName(projects, i.project_id)))));
    if (!issues.length) tbody.append(h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No issue matches.")));
  }
  for (const filter of [statusFilter, assigneeFilter, projectFilter]) filter.addEventListener("change", load);
  await load();

  const title = h("input", { name: "title", required: true, maxlength: 500 });
  const description = h("textarea", { name: "description", rows: 3 });
  const assignee = h("select", { name: "assignee_agent_id" }, agentOptions(agents, null));
  const project = h("select", { name: "project_id" }, projectOptions(projects, null, "The assignee's default, if any"));
  const status = h("div", { "aria-live": "polite" });
  const form = h("form", {
    class: "panel", "aria-label": "New issue",
    onsubmit: async (e) => {
      e.preventDefault();
      try {
        const body = { title: title.value, description: description.value };
        if (assignee.value) body.assignee_agent_id = assignee.value;
        if (project.value) body.project_id = project.value;
        const issue = await post(`/companies/${companyId}/issues`, body);
        location.hash = `#/c/${companyId}/issues/${issue.id}`;
      } catch (error) { clear(status).append(errorBox(error)); }
    },
  }, h("h2", {}, "New issue"), field("Title", title), field("Description", description),
  field("Assignee", assignee), field("Project", project), h("button", { type: "submit" }, "Create issue"), status);

  return h("div", {}, h("h1", {}, "Issues"),
    h("div", { class: "filters", role: "group", "aria-label": "Filters" },
      field("Status", statusFilter), field("Assignee", assigneeFilter), field("Project", projectFilter)),
    h("div", { class: "scroll" }, table), form);
}
