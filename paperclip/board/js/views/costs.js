// A company's costs over a date range (this month in the company's time zone unless the address
// says otherwise): the totals, a chart of the days, each agent's spend, runs and budget use, the
// spend by project, model and issue; and the budgets, made and changed here.

import { all, get } from "../api.js";
import { dailyChart } from "../chart.js";
import { clear, errorBox, field, h, scrollTable } from "../dom.js";
import { addDays, costText, count, daysBetween, midnight, monthOf, today, tokensText } from "../usage.js";
import { budgetsPanel, usedText, stateBadge } from "./budgets.js";
import { issueHref } from "./issues.js";

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** The range in the address (`?from=2026-12-01&to=2026-12-31`, both days included), else
 * this month in the company's time zone. */
function rangeOf(params, zone) {
  const [first, last] = monthOf(today(zone));
  const from = DATE.test(params.get("from") || "") ? params.get("from") : first;
  const to = DATE.test(params.get("to") || "") ? params.get("to") : last;
  return [from, to];
}

/** The company's zone, or UTC when this browser does not know it (the page then says UTC). */
function knownZone(zone) {
  try { new Intl.DateTimeFormat("en-US", { timeZone: zone || "UTC" }); return zone || "UTC"; } catch { return "UTC"; }
}

const figure = (label, value, name) => h("div", { class: "figure", "data-figure": name }, h("dt", {}, label), h("dd", {}, value));

/** The grand totals, as a row of figures. */
function totalsBlock(t) {
  return h("dl", { class: "figures", "aria-label": "Totals" },
    figure("Cost", costText(t), "cost"),
    figure("Input tokens", count(t.input_tokens), "input"),
    figure("Cached input", count(t.cached_input_tokens), "cached"),
    figure("Output tokens", count(t.output_tokens), "output"),
    figure("Reasoning", count(t.reasoning_tokens), "reasoning"),
    figure("Responses", count(t.events), "events"),
    figure("Runs", count(t.runs), "runs"));
}

/** One group's figures as table cells: cost, tokens, responses, runs. */
const cells = (t) => [h("td", {}, costText(t)), h("td", {}, tokensText(t)), h("td", { class: "n" }, count(t.events)), h("td", { class: "n", "data-runs": t.runs }, count(t.runs))];

function groupTable(caption, firstColumn, groups, label, empty) {
  const rows = groups.map((g) => h("tr", { "data-key": g.key ?? "" }, h("th", { scope: "row" }, label(g)), ...cells(g.totals)));
  if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: 5, class: "muted" }, empty)));
  return scrollTable(h("table", { class: "cost-groups" }, h("caption", { class: "sr-only" }, caption),
    h("thead", {}, h("tr", {}, [firstColumn, "Cost", "Tokens", "Responses", "Runs"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows)), caption);
}

/** Every agent with its spend in the range, and its own budget this month (if it has one). */
function agentsTable(companyId, agents, groups, budgets) {
  const byAgent = Object.fromEntries(groups.map((g) => [g.key, g.totals]));
  const budgetOf = Object.fromEntries(budgets.filter((b) => b.scope === "agent").map((b) => [b.scope_id, b]));
  // An agent no longer listed keeps its spend, under the name the costs API gives.
  const known = new Set(agents.map((a) => a.id));
  const gone = groups.filter((g) => !known.has(g.key)).map((g) => ({ id: g.key, name: g.name || "a deleted agent" }));
  const ordered = [...agents, ...gone].sort((a, b) => ((byAgent[b.id]?.cost_micros || 0) - (byAgent[a.id]?.cost_micros || 0)) || a.name.localeCompare(b.name));
  const empty = { events: 0, input_tokens: 0, cached_input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cost_micros: 0, unpriced_events: 0, runs: 0 };
  const rows = ordered.map((a) => {
    const b = budgetOf[a.id];
    return h("tr", { "data-agent": a.id },
      h("th", { scope: "row" }, a.name, a.provider ? h("span", { class: "muted" }, ` (${a.provider})`) : null),
      ...cells(byAgent[a.id] || empty),
      h("td", { class: "budget-use" }, b ? [stateBadge(b), " ", usedText(b)] : h("span", { class: "muted" }, "no budget of its own")));
  });
  if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No agent yet.")));
  return scrollTable(h("table", { class: "cost-agents" }, h("caption", { class: "sr-only" }, "Spend per agent"),
    h("thead", {}, h("tr", {}, ["Agent", "Cost", "Tokens", "Responses", "Runs", "Its budget this month"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows)), "Spend per agent");
}

export async function costsView(companyId, signal) {
  const base = `/companies/${companyId}`;
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const [company, agents, projects] = await Promise.all([get(base), all(`${base}/agents`), all(`${base}/projects`)]);
  const zone = knownZone(company.time_zone);
  const [from, to] = rangeOf(params, zone);
  const focus = params.get("budget");

  // The range form: two days, both included; the address keeps them.
  const fromInput = h("input", { type: "date", name: "from", value: from, required: true });
  const toInput = h("input", { type: "date", name: "to", value: to, required: true });
  const go = (a, b) => { location.hash = `#/c/${companyId}/costs?from=${a}&to=${b}`; };
  const rangeStatus = h("div", { "aria-live": "polite" });
  const [thisFirst, thisLast] = monthOf(today(zone));
  const [lastFirst, lastLast] = monthOf(today(zone), -1);
  const rangeForm = h("form", {
    class: "panel inline range", "aria-label": "Date range",
    onsubmit: (e) => {
      e.preventDefault();
      clear(rangeStatus);
      if (fromInput.value > toInput.value) { rangeStatus.append(h("p", { class: "error", role: "alert" }, "The first day comes after the last.")); return; }
      go(fromInput.value, toInput.value);
    },
  }, field("From", fromInput), field("To (included)", toInput), h("button", { type: "submit" }, "Show"),
  h("a", { href: `#/c/${companyId}/costs?from=${thisFirst}&to=${thisLast}` }, "This month"),
  h("a", { href: `#/c/${companyId}/costs?from=${lastFirst}&to=${lastLast}` }, "Last month"),
  h("a", { href: `#/c/${companyId}/costs?from=${addDays(today(zone), -29)}&to=${today(zone)}` }, "Last 30 days"),
  h("span", { class: "muted" }, `Days are calendar days in ${zone}, the company's time zone.`), rangeStatus);

  // Each day starts at midnight in the company's zone; the range ends where the next day starts.
  const since = midnight(from, zone).toISOString();
  const until = midnight(addDays(to, 1), zone).toISOString();
  const query = (groupBy) => get(`${base}/costs?group_by=${groupBy}&since=${encodeURIComponent(since)}&until=${encodeURIComponent(until)}`);

  const budgets = budgetsPanel(companyId, { agents, projects, focus, onChange: () => load() });
  const body = h("div", { class: "costs-body" });
  const projectName = Object.fromEntries(projects.map((p) => [p.id, p.name]));
  const choice = { metric: "cost", open: false }; // the chart's, kept across redraws

  async function load() {
    const [byDay, byAgent, byProject, byModel, byIssue, budgetList] = await Promise.all([
      query("day"), query("agent"), query("project"), query("model"), query("issue"), budgets.load(),
    ]);
    // A range of more than 400 days draws the days that had usage only.
    const every = daysBetween(from, to, 401);
    const days = every.length > 400 ? byDay.groups.map((g) => g.key).sort() : every;
    // Drawn again only when a figure changed: a redraw would move the keyboard's focus.
    const sig = JSON.stringify([byDay, byAgent, byProject, byModel, byIssue, budgetList]);
    if (body.dataset.sig === sig) return;
    body.dataset.sig = sig;
    const perDay = Object.fromEntries(byDay.groups.map((g) => [g.key, g.totals]));
    const t = byDay.totals;
    clear(body).append(
      h("section", { class: "panel", "aria-label": "Totals" }, h("h2", {}, "Totals"), totalsBlock(t),
        t.unpriced_events ? h("p", { class: "muted unpriced-note" },
          `${count(t.unpriced_events)} of ${count(t.events)} responses had no price for their model: their tokens are counted, their cost is unknown (set a price on the server: /api/prices).`) : null),
      h("section", { class: "panel", "aria-label": "Per day" }, h("h2", {}, "Per day"), dailyChart(days, perDay, choice)),
      h("section", { class: "panel", "aria-label": "Per agent" }, h("h2", {}, "Per agent"), agentsTable(companyId, agents, byAgent.groups, budgetList)),
      h("div", { class: "columns even" },
        h("section", { class: "panel", "aria-label": "Per project" }, h("h2", {}, "Per project"),
          groupTable("Spend per project", "Project", byProject.groups, (g) => (g.key ? g.name || projectName[g.key] || "a deleted project" : h("span", { class: "muted" }, "no project")), "No usage.")),
        h("section", { class: "panel", "aria-label": "Per model" }, h("h2", {}, "Per model"),
          groupTable("Spend per model", "Model", byModel.groups, (g) => h("code", {}, g.key), "No usage."))),
      h("section", { class: "panel", "aria-label": "Per issue" }, h("h2", {}, "Per issue"),
        groupTable("Spend per issue", "Issue", byIssue.groups,
          (g) => (g.key ? h("a", { href: issueHref(companyId, { identifier: g.name || g.key }) }, g.name || g.key.slice(0, 8)) : h("span", { class: "muted" }, "no issue")),
          "No usage.")),
    );
  }
  try { await load(); } catch (error) { body.append(errorBox(error)); }
  // A link to a budget lands on it (once the page is in place).
  if (focus) setTimeout(() => (document.getElementById(`budget-${focus}`) || budgets.node).scrollIntoView({ block: "center" }), 0);
  const timer = setInterval(() => { if (!document.hidden && !budgets.node.contains(document.activeElement)) load().catch(() => {}); }, 15000);
  signal.addEventListener("abort", () => clearInterval(timer));

  return h("div", { class: "costs", "data-from": from, "data-to": to, "data-since": since, "data-until": until },
    h("h1", {}, "Costs"), rangeForm, body, budgets.node);
}
