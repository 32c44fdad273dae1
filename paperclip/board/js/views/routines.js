// A company's routines: each one's schedule, next runs and policies, a Run now button, and
// a routine's page with its next runs and the history of its executions; make one.

import { all, get, keyFor, post } from "../api.js";
import { cronWords } from "../cron.js";
import { formDialog } from "../dialog.js";
import { badge, clear, errorBox, field, h, labelCells, scrollTable, statusName, when } from "../dom.js";

/** The policies in words: what a slot does while the last issue is open, and after downtime. */
const CONCURRENCY = {
  skip_if_open: ["Skip the run", "Skipped while its last issue is open"],
  queue: ["Queue it", "Queued behind its last open issue"],
  allow: ["Run anyway", "Runs even while its last issue is open"],
};
const CATCH_UP = {
  skip_missed: ["Skip missed runs", "runs missed during downtime are skipped"],
  run_latest_once: ["Run the latest once", "the latest run missed during downtime is made up"],
  run_all: ["Run them all", "every run missed during downtime is made up"],
};
const policies = (r) => `${(CONCURRENCY[r.concurrency] || [, r.concurrency])[1]}; ${(CATCH_UP[r.catch_up] || [, r.catch_up])[1]}.`;

/** Why an execution did not run, in words (the reason's code otherwise, made readable). */
const REASONS = { open_execution: "its last issue is still open", budget_exceeded: "a budget is spent" };
const why = (reason) => (reason ? REASONS[reason] || reason.replace(/_/g, " ") : "");

/** A moment at the routine's clock: "Mon 8 Dec, 09:00" in its time zone. */
function zoned(iso, timeZone) {
  try {
    return new Intl.DateTimeFormat(undefined, {
      weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZone,
    }).format(new Date(iso));
  } catch { return new Date(iso).toLocaleString(); } // a zone this browser does not know
}

/** The next run: how soon, and when at the routine's clock. */
function nextRun(iso, timeZone) {
  return h("span", { class: "next-run" }, when(iso), h("span", { class: "muted" }, ` · ${zoned(iso, timeZone)}`));
}

function schedule(r) {
  if (!r.enabled) return badge("disabled");
  if (!r.cron) return h("span", { class: "muted" }, "No schedule (Run now or the webhook only)");
  const words = cronWords(r.cron);
  const zone = r.timezone === "UTC" ? "UTC" : `${r.timezone.replace(/_/g, " ")} time`;
  return h("span", { class: "schedule", "data-cron": r.cron },
    words ? [`${words}, ${zone}`, " ", h("details", { class: "code" }, h("summary", {}, "Cron"), h("code", {}, r.cron))]
      : [h("code", {}, r.cron), h("span", { class: "muted" }, `, ${zone}`)]);
}

/** A "Run now" button: one press, one execution (a retry after a lost answer keeps its key).
 * What it did goes to `status`, a live region the page keeps across reloads of the list. */
function runButton(base, r, onDone, status) {
  let sent = null;
  const button = h("button", {
    type: "button", "aria-label": `Run ${r.name} now`,
    onclick: async () => {
      button.disabled = true;
      clear(status);
      sent = keyFor(sent, r.id);
      try {
        const e = await post(`${base}/${r.id}/run`, { idempotency_key: sent.key });
        sent = null; // done: the next press is a new execution
        status.append(`${r.name}: `, badge(e.status), e.reason ? h("span", { class: "muted" }, ` · ${why(e.reason)}`) : "");
        await onDone();
      } catch (error) { status.append(errorBox(error)); } finally { button.disabled = false; }
    },
  }, "Run now");
  return button;
}

export async function routinesView(companyId) {
  const base = `/companies/${companyId}/routines`;
  const agents = await all(`/companies/${companyId}/agents`);
  const agentName = (id) => (agents.find((a) => a.id === id) || { name: "?" }).name;
  const tbody = h("tbody");
  const ran = h("p", { class: "ran", "aria-live": "polite" });

  async function load() {
    const routines = await all(base);
    clear(tbody).append(...routines.map((r) => h("tr", { "data-routine": r.id },
      h("th", { scope: "row" }, h("a", { href: `#/c/${companyId}/routines/${r.id}` }, r.name)),
      h("td", {}, schedule(r)),
      h("td", {}, r.next_runs.length ? nextRun(r.next_runs[0], r.timezone) : h("span", { class: "muted" }, "none")),
      h("td", {}, agentName(r.agent_id)),
      h("td", { class: "policies", "data-concurrency": r.concurrency, "data-catch-up": r.catch_up }, policies(r)),
      h("td", {}, r.webhook ? "Yes" : "No"),
      h("td", { class: "actions" }, runButton(base, r, load, ran)))));
    if (!routines.length) tbody.append(h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No routine yet: New routine makes an issue for an agent on a schedule, or on a signed webhook.")));
  }
  await load();

  const name = h("input", { name: "name", required: true, maxlength: 200 });
  const agent = h("select", { name: "agent_id", required: true },
    agents.map((a) => h("option", { value: a.id }, a.name)));
  const title = h("input", { name: "title", required: true, maxlength: 500, placeholder: "Triage {{date}}" });
  const description = h("textarea", { name: "description", rows: 3 });
  const cron = h("input", { name: "cron", maxlength: 200, placeholder: "0 9 * * 1-5", spellcheck: "false" });
  const zone = h("input", { name: "timezone", maxlength: 64, value: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC", spellcheck: "false" });
  const concurrency = h("select", { name: "concurrency" },
    Object.entries(CONCURRENCY).map(([v, [words]]) => h("option", { value: v }, words)));
  const catchUp = h("select", { name: "catch_up" },
    Object.entries(CATCH_UP).map(([v, [words]]) => h("option", { value: v }, words)));
  const webhook = h("input", { type: "checkbox", name: "webhook" });
  const status = h("div", { "aria-live": "polite" });
  const form = h("form", {
    class: "panel", "aria-label": "New routine",
    onsubmit: async (e) => {
      e.preventDefault();
      clear(status);
      const body = {
        name: name.value, agent_id: agent.value, title: title.value, description: description.value,
        cron: cron.value.trim() || null, timezone: zone.value.trim() || "UTC",
        concurrency: concurrency.value, catch_up: catchUp.value, webhook: webhook.checked,
      };
      try {
        const made = await post(base, body);
        form.reset();
        if (made.webhook_secret) {
          status.append(h("p", { class: "panel secret", role: "status" },
            "Webhook secret (shown this once): ", h("code", {}, made.webhook_secret),
            h("br"), "POST signed bodies to ", h("code", {}, made.webhook_path)));
        }
        if (!made.webhook_secret) dialog.close(); // a secret stays in sight until closed
        await load();
      } catch (error) { status.append(errorBox(error)); }
    },
  }, h("h2", {}, "New routine"), field("Name", name), field("Agent", agent),
  field("Issue title", title), field("Issue description", description),
  h("div", { class: "filters" }, field("Cron (five fields; empty: no schedule)", cron), field("Time zone", zone)),
  h("div", { class: "filters" }, field("When the last issue is open", concurrency), field("After downtime", catchUp)),
  h("label", { class: "check" }, webhook, " A signed webhook"),
  h("p", { class: "muted hint" }, "Placeholders: {{date}}, {{time}}, {{datetime}}, {{weekday}}, {{routine}}, {{trigger}}."),
  h("button", { type: "submit", class: "btn primary", disabled: !agents.length }, "Create routine"), status);
  const dialog = formDialog(form, { label: "New routine" });

  // On a phone each routine is a card, each value labelled by its column.
  const table = h("table", { class: "routines cardify" },
    h("caption", { class: "sr-only" }, "Routines"),
    h("thead", {}, h("tr", {}, ["Name", "Schedule", "Next run", "Agent", "Policies", "Webhook", ""].map((t) => h("th", { scope: "col" }, t)))),
    tbody);
  labelCells(table);
  return h("div", {}, h("div", { class: "title-row" }, h("h1", {}, "Routines"), dialog.button), dialog.dialog, ran,
    h("div", { class: "scroll" }, table));
}

export async function routineView(companyId, routineId) {
  const base = `/companies/${companyId}/routines`;
  const history = h("tbody");
  const next = h("ul", { "aria-label": "Next runs" });
  const head = h("div");
  const ran = h("p", { class: "ran", "aria-live": "polite" });

  async function load() {
    const r = await get(`${base}/${routineId}`);
    const executions = await get(`${base}/${routineId}/executions?limit=50`);
    clear(head).append(h("h1", {}, r.name),
      h("p", {}, schedule(r), r.missed_slots ? h("span", { class: "muted" }, ` · ${r.missed_slots} late slot(s) not run`) : ""),
      h("p", {}, "Issue: ", h("strong", {}, r.title), h("span", { class: "muted" }, ` (${r.priority} priority)`)),
      h("p", { class: "muted" }, policies(r)),
      r.webhook_path ? h("p", {}, "Webhook: ", h("code", {}, `POST ${r.webhook_path}`)) : "",
      h("div", { class: "buttons" }, runButton(base, r, load, ran)), ran);
    clear(next).append(...(r.next_runs.length ? r.next_runs.map((t) => h("li", {}, nextRun(t, r.timezone)))
      : [h("li", { class: "muted" }, "none")]));
    clear(history).append(...executions.items.map((e) => h("tr", { "data-execution": e.id },
      h("td", {}, when(e.slot_at)), h("td", {}, statusName(e.trigger)), h("td", {}, badge(e.status)),
      h("td", {}, why(e.reason)),
      h("td", {}, e.issue_id ? h("a", { href: `#/c/${companyId}/issues/${e.issue_id}` }, "issue") : ""))));
    if (!executions.items.length) history.append(h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No execution yet.")));
  }
  await load();

  return h("div", {}, head, h("h2", {}, "Next runs"), next, h("h2", {}, "History"),
    scrollTable(h("table", { class: "executions" },
      h("caption", { class: "sr-only" }, "Executions, newest first"),
      h("thead", {}, h("tr", {}, ["Slot", "Trigger", "Status", "Why", ""].map((t) => h("th", { scope: "col" }, t)))),
      history), "History"));
}
