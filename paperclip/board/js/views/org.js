// A company's org chart (GET …/org-chart): each agent under its manager, drawn as a tree, with
// its status and the runs it has going now; refreshed while the page is open.

import { get } from "../api.js";
import { badge, clear, errorBox, h } from "../dom.js";

const REFRESH_MS = 4000;

/** The chart's nodes (depth first, each after its manager) as nested lists. */
function tree(companyId, nodes) {
  const root = h("ul", { class: "org-level", "aria-label": "Org chart" });
  const levels = [root];
  let last = null;
  for (const node of nodes) {
    levels.length = Math.min(levels.length, node.depth + 1);
    if (levels.length < node.depth + 1) {
      const reports = h("ul", { class: "org-level", "aria-label": `Reports of ${last.dataset.orgAgent}` });
      last.append(reports);
      levels.push(reports);
    }
    const a = node.agent;
    last = h("li", { "data-org-agent": a.name, "data-depth": String(node.depth) },
      h("div", { class: "org-card" },
        h("a", { href: `#/c/${companyId}/agents/${a.id}`, class: "org-name" }, a.name),
        a.role ? h("span", { class: "org-role muted" }, a.role) : null,
        h("span", { class: "org-state" }, badge(a.status, a.status === "active" ? "active_agent" : a.status),
          node.active_runs ? h("span", { class: "org-busy", "data-running": String(node.active_runs) }, ` ${node.active_runs} running`) : null)));
    levels[levels.length - 1].append(last);
  }
  return root;
}

export async function orgView(companyId, signal) {
  const body = h("div", { class: "org-chart panel" });
  async function refresh() {
    const { agents } = await get(`/companies/${companyId}/org-chart`);
    const sig = JSON.stringify(agents.map((n) => [n.agent.id, n.agent.reports_to, n.agent.status, n.active_runs]));
    if (body.dataset.sig === sig) return;
    body.dataset.sig = sig;
    clear(body).append(agents.length ? tree(companyId, agents)
      : h("p", { class: "muted" }, "No agent yet. Give an agent a manager with its form's Reports to, or `paperclip agents move`."));
  }
  try { await refresh(); } catch (error) { body.append(errorBox(error)); }
  const timer = setInterval(() => { if (!document.hidden) refresh().catch(() => {}); }, REFRESH_MS);
  signal.addEventListener("abort", () => clearInterval(timer));
  return h("div", {}, h("h1", {}, "Org chart"),
    h("p", { class: "muted" }, "Each agent under the agent it reports to; the top ones report to no one."), body);
}
