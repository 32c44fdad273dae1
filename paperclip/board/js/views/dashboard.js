// The company at a glance (GET …/dashboard): what runs now, what failed lately, each agent's
// load, and the issues by status (each count links to the filtered list).

import { get } from "../api.js";
import { badge, clear, errorBox, h, runningFor, scrollTable, statusName, when } from "../dom.js";
import { budgetAlerts } from "./budgets.js";
import { ISSUE_STATUSES, issueHref } from "./issues.js";

const REFRESH_MS = 4000;

function runRows(companyId, runs, agents, empty) {
  if (!runs.length) return [h("tr", {}, h("td", { colspan: 5, class: "muted" }, empty))];
  return runs.map((r) => h("tr", { "data-run": r.id, "data-status": r.status },
    h("th", { scope: "row" }, h("a", { href: `#/c/${companyId}/runs/${r.id}` }, r.id.slice(0, 8))),
    h("td", {}, badge(r.status)),
    h("td", {}, r.issue ? h("a", { href: issueHref(companyId, r.issue) }, `${r.issue.identifier} · ${r.issue.title}`) : h("span", { class: "muted" }, "no issue")),
    h("td", {}, agents[r.agent_id] || "?"),
    h("td", {}, r.status === "failed"
      ? h("div", {}, h("span", { class: "run-words failed" }, r.reason || "The run failed."), " ", h("span", { class: "muted small" }, when(r.finished_at || r.created_at)),
        r.error_code ? h("details", { class: "code" }, h("summary", {}, "Code"), h("code", {}, r.error_code)) : "")
      : runningFor(r.started_at || r.created_at, "for "))));
}

const table = (caption, headers, rows) => scrollTable(h("table", { class: "cardify" }, h("caption", { class: "sr-only" }, caption),
  h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows)), caption);

export async function dashboardView(companyId, signal) {
  const base = `/companies/${companyId}`;
  const body = h("div", { class: "dashboard" });
  const alerts = budgetAlerts(companyId);

  async function refresh() {
    alerts.refresh().catch(() => {});
    const data = await get(`${base}/dashboard`);
    if (body.dataset.sig === JSON.stringify(data)) return;
    body.dataset.sig = JSON.stringify(data);
    const agents = Object.fromEntries(data.agents.map((a) => [a.agent_id, a.name]));
    const counts = h("ul", { class: "status-counts", "aria-label": "Issues by status" },
      ISSUE_STATUSES.map((s) => h("li", { "data-status": s },
        h("a", { href: `#/c/${companyId}?status=${s}` }, h("span", { class: "n" }, String(data.issues_by_status[s] || 0)), " ", statusName(s)))));
    const loads = data.agents.map((a) => h("tr", { "data-agent": a.agent_id },
      h("th", { scope: "row" }, a.name, h("span", { class: "muted" }, ` (${a.provider})`)),
      h("td", {}, badge(a.status, a.status === "active" ? "active_agent" : a.status)),
      h("td", { "data-load": "active" }, String(a.active_runs)), h("td", {}, String(a.queued_wakes)),
      h("td", {}, h("a", { href: `#/c/${companyId}?assignee_agent_id=${a.agent_id}` }, String(a.open_issues))),
      h("td", {}, String(a.runs_recent)),
      h("td", { class: a.failed_recent ? "error" : "" }, String(a.failed_recent))));
    if (!loads.length) loads.push(h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No agent yet.")));
    clear(body).append(
      h("section", { class: "panel", "aria-label": "Running now" }, h("h2", {}, "Running now"),
        table("Runs queued or running", ["Run", "Status", "Issue", "Agent", "Since"], runRows(companyId, data.active_runs, agents, "Nothing runs now."))),
      h("section", { class: "panel", "aria-label": "Recent failures" }, h("h2", {}, "Recent failures"),
        table("The last failed runs", ["Run", "Status", "Issue", "Agent", "Why"], runRows(companyId, data.recent_failures, agents, "No run failed."))),
      h("section", { class: "panel", "aria-label": "Load per agent" }, h("h2", {}, "Load per agent"),
        table("Each agent's load", ["Agent", "Status", "Running", "Wakes waiting", "Open issues", "Runs (24 h)", "Failed (24 h)"], loads)),
      h("section", { class: "panel", "aria-label": "Issues by status" }, h("h2", {}, "Issues by status"), counts));
  }
  try { await refresh(); } catch (error) { body.append(errorBox(error)); }
  const timer = setInterval(() => { if (!document.hidden) refresh().catch(() => {}); }, REFRESH_MS);
  signal.addEventListener("abort", () => clearInterval(timer));
  return h("div", {}, h("h1", {}, "Dashboard"), alerts.node, body);
}
