// Budgets: each one's month (spent, held by running runs, limit, share used, warning or
// stopped), made, changed and deleted here with the API's refusals shown in the form; and the
// alerts the dashboard and the inbox show for a budget past its warning threshold.

import { all, api, patch, post } from "../api.js";
import { formDialog } from "../dialog.js";
import { clear, errorBox, field, h, scrollTable } from "../dom.js";
import { budgetHref, budgetState, money, percent, scopeName } from "../usage.js";

const STATE_TEXT = {
  ok: "Under its warning",
  warning: "Past its warning",
  stopped: "Spent: no new run starts",
};

/** A budget's state as a badge (the value in data-value for scripts). */
export function stateBadge(b) {
  const state = budgetState(b);
  return h("span", { class: `badge budget-${state}`, "data-value": state, title: STATE_TEXT[state] },
    state === "ok" ? "OK" : state === "warning" ? "Warning" : "Stopped");
}

/** How much of the month's limit is spent: a meter, and the figures in words. */
export function usedText(b) {
  const p = percent(b);
  return h("span", { class: "used" },
    h("meter", { min: 0, max: 100, low: b.warn_percent, high: Math.min(99.9, b.warn_percent), optimum: 0, value: Math.min(100, p),
      "aria-label": `${p}% of the limit spent` }),
    ` ${money(b.spent_micros, b.currency)} of ${money(b.monthly_limit_micros, b.currency)} · `,
    h("strong", { "data-percent": p }, `${p}%`));
}

/** The API's refusal, with what it says of each field (a budget's form has several). */
function refusal(error) {
  const box = errorBox(error);
  const fields = Array.isArray(error && error.details) ? error.details.filter((d) => d && d.message) : [];
  if (fields.length) box.append(h("span", { class: "field-error" }, ` (${fields.map((d) => (d.field ? `${d.field}: ${d.message}` : d.message)).join("; ")})`));
  return box;
}

/** Currency units typed by a person ("12.5") as millionths; NaN when it is not a number. */
const toMicros = (text) => (String(text).trim() === "" ? NaN : Math.round(Number(text) * 1_000_000));
const toUnits = (micros) => String(micros / 1_000_000);

/** The budgets' table and form (`agents` and `projects` name what a budget covers; `focus`: the
 * id of a budget a link pointed at, marked; `onChange`: what reads the page again after a write,
 * else the budgets alone). `load()` reads the budgets again. */
export function budgetsPanel(companyId, { agents, projects, focus, onChange }) {
  const base = `/companies/${companyId}/budgets`;
  const names = Object.fromEntries([...agents, ...projects].map((x) => [x.id, x.name]));
  const tbody = h("tbody");
  let editing = null;

  const scope = h("select", { name: "scope" }, ["company", "agent", "project"].map((v) => h("option", { value: v }, v[0].toUpperCase() + v.slice(1))));
  const agent = h("select", { name: "agent" }, agents.map((a) => h("option", { value: a.id }, a.name)));
  const project = h("select", { name: "project" }, projects.map((p) => h("option", { value: p.id }, p.name)));
  const agentField = field("Agent", agent);
  const projectField = field("Project", project);
  const limit = h("input", { name: "monthly_limit", inputmode: "decimal", required: true, size: 10 });
  const warn = h("input", { name: "warn_percent", inputmode: "numeric", value: "80", size: 4 });
  const reserve = h("input", { name: "run_reserve", inputmode: "decimal", value: "0", size: 8 });
  const currency = h("input", { name: "currency", value: "USD", size: 5, maxlength: 8, spellcheck: "false" });
  const title = h("h3", {}, "New budget");
  const submit = h("button", { type: "submit", class: "btn primary" }, "Create budget");
  const cancel = h("button", { type: "button", class: "btn secondary", hidden: true, onclick: () => { reset(); dialog.close(); } }, "Cancel");
  const status = h("div", { "aria-live": "polite" });
  const showTarget = () => { agentField.hidden = scope.value !== "agent"; projectField.hidden = scope.value !== "project"; };
  scope.addEventListener("change", showTarget);

  function reset() {
    editing = null;
    form.reset();
    clear(title).append("New budget");
    clear(submit).append("Create budget");
    cancel.hidden = true;
    for (const c of [scope, agent, project, currency]) c.disabled = false;
    showTarget();
  }

  function edit(b) {
    editing = b;
    clear(status);
    scope.value = b.scope;
    if (b.scope === "agent") agent.value = b.scope_id;
    if (b.scope === "project") project.value = b.scope_id;
    limit.value = toUnits(b.monthly_limit_micros);
    warn.value = String(b.warn_percent);
    reserve.value = toUnits(b.run_reserve_micros);
    currency.value = b.currency;
    // What a budget covers is fixed: a budget for another scope is another budget.
    for (const c of [scope, agent, project, currency]) c.disabled = true;
    clear(title).append(`Change the budget of ${scopeName(b, names).replace(/^The c/, "the c")}`);
    clear(submit).append("Save budget");
    cancel.hidden = false;
    showTarget();
    dialog.open();
    limit.focus();
  }

  const form = h("form", {
    class: "budget-form", "aria-label": "Budget",
    onsubmit: async (e) => {
      e.preventDefault();
      clear(status);
      // Sent as typed: the API is the one judge of a budget, and its refusal is shown here.
      const body = {
        monthly_limit_micros: toMicros(limit.value),
        warn_percent: Number(warn.value),
        run_reserve_micros: toMicros(reserve.value || "0"),
      };
      submit.disabled = true;
      try {
        if (editing) {
          await patch(`${base}/${editing.id}`, body);
        } else {
          const target = scope.value === "agent" ? agent.value : scope.value === "project" ? project.value : undefined;
          await post(base, { scope: scope.value, scope_id: target || undefined, currency: currency.value.trim(), ...body });
        }
        reset();
        dialog.close();
        await (onChange || load)();
      } catch (error) { status.append(refusal(error)); } finally { submit.disabled = false; }
    },
  }, title, h("div", { class: "filters" }, field("Covers", scope), agentField, projectField),
  h("div", { class: "filters" }, field("Monthly limit (currency units)", limit), field("Warn at (% of the limit)", warn),
    field("Held by each running run (currency units)", reserve), field("Currency", currency)),
  h("div", { class: "buttons" }, submit, " ", cancel), status);
  showTarget();

  const dialog = formDialog(form, { label: "New budget" });
  dialog.button.addEventListener("click", () => { if (editing) reset(); }, { capture: true });
  dialog.dialog.addEventListener("close", () => { if (editing) reset(); });

  function row(b) {
    const state = budgetState(b);
    const actions = h("td", { class: "actions" });
    let armed = false;
    const label = scopeName(b, names);
    const remove = h("button", {
      type: "button", class: "btn danger", "aria-label": `Delete the budget of ${label}`,
      onclick: async () => {
        if (!armed) { armed = true; clear(remove).append("Press again to delete"); return; }
        remove.disabled = true;
        try { await api("DELETE", `${base}/${b.id}`); if (editing && editing.id === b.id) reset(); await (onChange || load)(); } catch (error) { actions.append(errorBox(error)); remove.disabled = false; }
      },
    }, "Delete");
    actions.append(h("button", { type: "button", class: "secondary", "aria-label": `Change the budget of ${label}`, onclick: () => edit(b) }, "Change"), " ", remove);
    const tr = h("tr", { id: `budget-${b.id}`, "data-budget": b.id, "data-scope": b.scope, "data-state": state,
      class: focus === b.id ? "target" : null, "aria-current": focus === b.id ? "true" : null },
    h("th", { scope: "row" }, label),
    h("td", {}, b.month),
    h("td", {}, usedText(b)),
    h("td", { "data-micros": b.reserved_micros }, b.reserved_micros ? money(b.reserved_micros, b.currency) : h("span", { class: "muted" }, "none")),
    h("td", {}, `${b.warn_percent}%`),
    h("td", {}, stateBadge(b), state === "stopped" ? h("div", { class: "muted small" }, "Raise it and held work goes on by itself.") : null),
    actions);
    return tr;
  }

  let budgets = [];
  async function load() {
    budgets = await all(base);
    clear(tbody).append(...budgets.map(row));
    if (!budgets.length) tbody.append(h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No budget yet: nothing caps what the agents spend.")));
    return budgets;
  }

  const node = h("section", { class: "panel budgets", id: "budgets", "aria-label": "Budgets" },
    h("div", { class: "title-row" }, h("h2", {}, "Budgets"), dialog.button),
    h("p", { class: "muted" }, "Monthly caps, in the company's time zone. At its warning share a budget warns; at 100% no new run starts, ",
      "a running turn stops at its next tool call, and the task waits, held, until the budget is raised or a new month begins."),
    scrollTable(h("table", { class: "budget-table" }, h("caption", { class: "sr-only" }, "Budgets this month"),
      h("thead", {}, h("tr", {}, ["Covers", "Month", "Spent of the limit", "Held by running runs", "Warns at", "State", ""].map((t) => h("th", { scope: "col" }, t)))),
      tbody), "Budgets"),
    dialog.dialog);
  return { node, load, budgets: () => budgets };
}

/** The budgets past their warning threshold, for the dashboard and the inbox: a panel that
 * says so (hidden while none is), each linked to its row on the Costs page. */
export function budgetAlerts(companyId) {
  const list = h("ul", { class: "inbox-list", "aria-label": "Budgets past their warning" });
  const node = h("section", { class: "panel budget-alerts", "aria-label": "Budgets past their warning", hidden: true },
    h("h2", {}, "Budgets past their warning"), list);
  let names = null;
  async function refresh() {
    const budgets = (await all(`/companies/${companyId}/budgets`)).filter((b) => b.warned || b.exceeded);
    if (budgets.length && !names) {
      const [agents, projects] = await Promise.all([all(`/companies/${companyId}/agents`), all(`/companies/${companyId}/projects`)]);
      names = Object.fromEntries([...agents, ...projects].map((x) => [x.id, x.name]));
    }
    const sig = JSON.stringify(budgets.map((b) => [b.id, b.spent_micros, b.monthly_limit_micros, b.warned, b.exceeded]));
    if (list.dataset.sig === sig) return;
    list.dataset.sig = sig;
    node.hidden = !budgets.length;
    clear(list).append(...budgets.map((b) => h("li", { "data-budget": b.id, "data-state": budgetState(b) },
      stateBadge(b), " ", h("a", { href: budgetHref(companyId, b.id) }, scopeName(b, names || {})), " · ", usedText(b),
      h("div", { class: "muted" }, b.exceeded
        ? `Spent for ${b.month}: no new run starts and its work waits until it is raised or the month ends.`
        : `Past its warning (${b.warn_percent}%) for ${b.month}.`))));
  }
  return { node, refresh };
}

/** Why work waits on a budget, said plainly, with a link to the budget to raise: the budget the
 * hold names, else the spent one that covers the company, the agent or the project. */
export async function budgetReason(companyId, { lead, message, budgetId, agentId, projectId }) {
  let target = null;
  try {
    const budgets = await all(`/companies/${companyId}/budgets`);
    const covers = (b) => b.scope === "company" || (b.scope === "agent" && b.scope_id === agentId) || (b.scope === "project" && b.scope_id === projectId);
    target = budgets.find((b) => b.id === budgetId) || budgets.find((b) => covers(b) && b.exceeded) || null;
  } catch { /* the reason still shows; the link goes to the list */ }
  const linkText = target ? `Raise the ${target.scope} budget` : "See the budgets";
  return h("div", { class: "why-waits", role: "status", "data-reason": "budget_exceeded", "data-budget": target ? target.id : null },
    h("strong", {}, lead), " ", message || "", " ",
    h("a", { href: budgetHref(companyId, target && target.id), class: "button-link" }, linkText),
    target && !target.exceeded ? h("span", { class: "muted" }, " (it allows runs again now: the work goes on by itself within a minute)") : null);
}
