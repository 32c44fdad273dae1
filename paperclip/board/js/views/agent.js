// One agent's page (#/c/<company>/agents/<agent>): what it does now, its issues, its runs (each
// failure in words, with Retry on the latest), what it cost this month, and its settings with
// the advanced ones folded (the whole configuration as JSON).

import { all, get, post, q } from "../api.js";
import { badge, button, clear, errorBox, h, scrollTable, statusName, when } from "../dom.js";
import { liveState } from "../live.js";
import { retryButton } from "../retry.js";
import { count, money } from "../usage.js";
import { issueHref } from "./issues.js";
import { failureDetails, runSummary } from "./thread.js";

const REFRESH_MS = 5000;
const SETTINGS_SHOWN = ["launch", "model"];

function monthStart() {
  const d = new Date();
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)).toISOString().slice(0, 10);
}

export async function agentView(companyId, agentId, signal) {
  const base = `/companies/${companyId}`;
  let agent = await get(`${base}/agents/${agentId}`);
  const facts = h("dl", { class: "facts" });
  const issues = h("tbody");
  const runs = h("tbody");
  const cost = h("dl", { class: "usage-facts", "aria-label": "This month's cost" });
  const note = h("div", { "aria-live": "polite" });
  const toggle = button("", { kind: "secondary" });

  function showFacts() {
    const config = agent.provider_config || {};
    const can = agent.capabilities ? Object.entries(agent.capabilities).filter(([, y]) => y).map(([c]) => c.replace(/_/g, " ")).join(", ") : "provider not installed";
    clear(facts).append(...[
      ["Status", badge(agent.status, agent.status === "active" ? "active_agent" : agent.status)],
      ["Provider", agent.provider], ["Model", config.model || "the provider's default"],
      ["Role", agent.role || h("span", { class: "muted" }, "none")], ["Can", can || "none"],
    ].flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
    clear(toggle).append(agent.status === "paused" ? "Resume" : "Pause");
  }
  toggle.addEventListener("click", async () => {
    clear(note);
    try {
      agent = await post(`${base}/agents/${agentId}/${agent.status === "paused" ? "resume" : "pause"}`);
      showFacts();
    } catch (error) { note.append(errorBox(error)); }
  });

  async function refresh() {
    const [mine, recent, costs] = await Promise.all([
      all(`${base}/issues${q({ assignee_agent_id: agentId, sort: "-updated" })}`, 200),
      get(`${base}/runs${q({ agent_id: agentId, sort: "-created", limit: "20" })}`),
      get(`${base}/costs${q({ agent_id: agentId, since: monthStart(), group_by: "model" })}`),
    ]);
    clear(issues).append(...mine.map((i) => h("tr", { "data-issue": i.id, "data-live": i.live.state },
      h("td", { "data-label": "Issue" }, h("a", { href: issueHref(companyId, i) }, i.identifier)),
      h("td", { "data-label": "Title" }, i.title),
      h("td", { class: "state", "data-label": "Now" }, liveState(i.live, { compact: true })),
      h("td", { "data-label": "Status" }, badge(i.status)))));
    if (!mine.length) issues.append(h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No issue is assigned to this agent. Assign one from its page, or make one with New issue.")));
    const latestFailed = new Set();
    const seen = new Set();
    for (const r of recent.items) {
      const key = r.issue_id || "none";
      if (!seen.has(key)) { seen.add(key); if (r.status === "failed") latestFailed.add(r.id); }
    }
    clear(runs).append(...recent.items.map((r) => h("tr", { "data-run": r.id, "data-status": r.status },
      h("td", { "data-label": "Run" }, h("a", { href: `#/c/${companyId}/runs/${r.id}` }, r.id.slice(0, 8))),
      h("td", { "data-label": "Status" }, badge(r.status)),
      h("td", { class: "state", "data-label": "What happened" }, h("div", {}, runSummary(r)), r.status === "failed" ? failureDetails(r) : "",
        latestFailed.has(r.id) ? retryButton(companyId, r.id, { onDone: refresh }) : ""),
      h("td", { "data-label": "When" }, when(r.created_at)))));
    if (!recent.items.length) runs.append(h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No run yet: the agent runs when it is given an issue.")));
    const t = costs.totals;
    clear(cost).append(...[
      ["Spent", t.unpriced_events && !t.cost_micros ? "unknown" : money(t.cost_micros, "USD")],
      ["Runs", count(t.runs)], ["Model responses", count(t.events)],
      ["Tokens", `${count(t.input_tokens)} in · ${count(t.output_tokens)} out`],
    ].flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
  }
  showFacts();
  await refresh();
  const timer = setInterval(() => { if (!document.hidden) refresh().catch(() => {}); }, REFRESH_MS);
  signal.addEventListener("abort", () => clearInterval(timer));

  const config = agent.provider_config || {};
  const shown = Object.entries(config).filter(([k]) => SETTINGS_SHOWN.includes(k));
  const table = (label, headers, body) => scrollTable(h("table", { class: "cardify" }, h("caption", { class: "sr-only" }, label),
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))), body), label);
  return h("div", { class: "agent-page", "data-agent": agentId },
    h("p", { class: "muted small" }, h("a", { href: `#/c/${companyId}/agents` }, "Agents"), " ›"),
    h("div", { class: "title-row" }, h("h1", {}, agent.name), h("div", { class: "title-actions" }, toggle)), note,
    h("div", { class: "issue-layout" },
      h("div", {},
        h("section", { class: "panel", "aria-label": "Its issues" }, h("h2", {}, "Its issues"), table("Its issues", ["Issue", "Title", "Now", "Status"], issues)),
        h("section", { class: "panel", "aria-label": "Its runs" }, h("h2", {}, "Its runs"), table("Its runs", ["Run", "Status", "What happened", "When"], runs))),
      h("aside", { class: "issue-side" },
        h("section", { class: "panel", "aria-label": "About" }, h("h2", {}, "About"), facts),
        h("section", { class: "panel", "aria-label": "Cost" }, h("h2", {}, "This month"), cost,
          h("p", { class: "small" }, h("a", { href: `#/c/${companyId}/costs` }, "The company's costs"))),
        h("section", { class: "panel", "aria-label": "Settings" }, h("h2", {}, "Settings"),
          h("dl", { class: "facts" }, ...shown.flatMap(([k, v]) => [h("dt", {}, statusName(k)), h("dd", {}, h("code", {}, String(v)))])),
          h("details", { class: "fold" }, h("summary", {}, "Advanced settings"),
            h("pre", { class: "out" }, JSON.stringify(config, null, 2)),
            h("p", { class: "small" }, h("a", { href: `#/c/${companyId}/agents` }, "Change them on the Agents page (Edit)")))))));
}
