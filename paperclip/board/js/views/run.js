// One run: its summary, its turns and how each ended (with the steer slot on a running one), its
// transcript, live (raw events a click away), and its tool journal.

import { all, get } from "../api.js";
import { badge, clear, duration, h, runningFor, scrollTable, statusName, when } from "../dom.js";
import { retryButton } from "../retry.js";
import { endedBecause, failureDetails, runSummary } from "./thread.js";
import { slots } from "../slots.js";
import { followRun } from "../stream.js";
import { transcript } from "../transcript.js";
import { usageFacts } from "../usage.js";
import { budgetReason } from "./budgets.js";

const ENDED = ["succeeded", "failed", "cancelled"];
const took = (from, to) => (from && to ? duration(Date.parse(to) - Date.parse(from)) : "");
const fold = (label, value) => h("details", { class: "fold" }, h("summary", {}, label),
  h("pre", { class: "out" }, JSON.stringify(value, null, 2)));

/** Where the run is, in words (the API's `phase`). */
const STAGES = {
  created: "Not started yet", turn: "Working in turns with the agent", resuming: "Waiting for a runner to go on",
  finished: "Finished",
};

/** What an operator looking for a cause reads, in words; the codes stay as they are. */
function techFacts(run) {
  const epoch = run.controller_epoch || 0;
  const keeper = run.controller_instance
    ? [`the server ${run.controller_instance}`, epoch > 1 ? ` (taken over ${epoch - 1 === 1 ? "once" : `${epoch - 1} times`})` : ""]
    : "no server yet";
  return [
    ["Provider", run.provider], ["Stage", STAGES[run.phase] || statusName(run.phase)],
    ["How it ended", run.status_reason ? endedBecause(run.status_reason) : "not yet"],
    ["Error code", run.error_code ? h("code", {}, run.error_code) : "none"], ["Looked after by", keeper],
    ["Provider session", run.session_ref ? h("code", {}, run.session_ref) : "none yet"],
  ];
}

/** The run's tool journal as a table: what the model asked, what it got, and how long it took. */
export function journalRows(calls) {
  if (!calls.length) return [h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No tool call journaled yet."))];
  return calls.map((c) => h("tr", { "data-call": c.call_id, "data-tool": c.tool, "data-status": c.status, "data-error": c.is_error ? "" : null },
    h("th", { scope: "row" }, h("code", {}, c.tool)),
    h("td", {}, c.is_error ? h("span", { class: "error" }, `Refused: ${c.result?.error?.code || "error"}`) : statusName(c.status)),
    h("td", {}, took(c.created_at, c.settled_at)),
    h("td", {}, fold("Arguments", c.arguments)),
    h("td", {}, c.status === "settled" ? fold(c.is_error ? "Error" : "Result", c.result) : h("span", { class: "muted" }, "waiting"))));
}

export async function runView(companyId, runId, signal) {
  const base = `/companies/${companyId}`;
  let run = await get(`${base}/runs/${runId}`);
  const agent = await get(`${base}/agents/${run.agent_id}`);
  const issue = run.issue_id ? await get(`${base}/issues/${run.issue_id}`).catch(() => null) : null;
  const summary = h("dl", { class: "facts" });
  const tech = h("details", { class: "fold tech" });
  let retried = false;
  const turns = h("tbody");
  const calls = h("tbody");
  const steer = h("div");
  const why = h("div", { class: "why" });
  let whyShown = null;
  const log = transcript(runId);
  let steerPanel = null;

  async function refresh() {
    run = await get(`${base}/runs/${runId}`);
    const [{ items }, journal] = await Promise.all([
      get(`${base}/runs/${runId}/turns`), all(`${base}/runs/${runId}/tool-calls`),
    ]);
    const issueLink = issue
      ? h("a", { href: `#/c/${companyId}/issues/${issue.identifier}` }, `${issue.identifier} · ${issue.title}`)
      : run.issue_id ? h("a", { href: `#/c/${companyId}/issues/${run.issue_id}` }, "open the issue") : "none";
    const facts = [
      ["Status", badge(run.status)], ["Agent", h("a", { href: `#/c/${companyId}/agents/${agent.id}` }, agent.name)], ["Issue", issueLink],
      ["What happened", h("div", {}, h("span", { class: run.status === "failed" ? "run-words failed" : "run-words" }, runSummary(run)),
        run.status === "failed" ? failureDetails(run) : "",
        run.status === "failed" && !retried ? retryButton(companyId, run.id, { onDone: () => { retried = true; } }) : "")],
      ["Started", when(run.started_at)],
      ...(run.finished_at ? [["Finished", when(run.finished_at)], ["Took", took(run.started_at, run.finished_at)]]
        : run.started_at ? [["Running", runningFor(run.started_at, "for ")]] : []),
      ...(run.answer ? [["Answer", run.answer]] : []),
      ...usageFacts(run.usage),
    ];
    const sig = JSON.stringify([run, retried]);
    if (summary.dataset.sig !== sig) {
      summary.dataset.sig = sig;
      clear(summary).append(...facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
      const open = tech.open;
      // What only an operator looking for a cause needs: folded.
      clear(tech).append(h("summary", {}, "Technical details"), h("dl", { class: "facts-tech" },
        ...techFacts(run).flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])));
      tech.open = open;
    }
    summary.dataset.status = run.status;
    // A run a budget stopped says so, with the budget to raise.
    if (run.error_code === "budget_exceeded" && whyShown !== run.status) {
      whyShown = run.status;
      clear(why).append(await budgetReason(companyId, {
        lead: "Stopped: a budget is spent.", message: run.error_message, agentId: run.agent_id,
        projectId: issue ? issue.project_id : null,
      }));
    }
    // The runner and the provider's turn id on hover: an operator's, not a reader's.
    clear(turns).append(...items.map((t) => h("tr", {
      "data-turn": t.number, "data-status": t.status,
      title: [t.runner_id ? `Runner ${t.runner_id}` : "", t.provider_turn_id ? `provider turn ${t.provider_turn_id}` : ""].filter(Boolean).join(", ") || null,
    },
    h("td", {}, t.number), h("td", {}, statusName(t.kind)), h("td", {}, badge(t.status)),
    h("td", {}, took(t.started_at || t.created_at, t.finished_at)),
    h("td", {}, t.error_message || (t.error_code ? statusName(t.error_code) : "") || (t.status === "completed" ? "Ended normally" : "")))));
    clear(calls).append(...journalRows(journal));
    log.journal(journal);
    const running = items.find((t) => t.status === "running") || null;
    const context = { companyId, run, agent, turn: running };
    if (steerPanel) steerPanel.update(context);
    else steer.append((steerPanel = slots.turnSteer(context)));
  }
  await refresh();

  const state = h("span", { class: "stream-state", "data-state": "connecting" }, "connecting");
  const stop = followRun(companyId, runId, {
    onEvent: (event) => log.add(event),
    onState: (s) => {
      state.dataset.state = s; clear(state).append(s);
      if (s === "ended" || s === "live") refresh().catch(() => {});
    },
  });
  const timer = setInterval(() => { if (!document.hidden && !ENDED.includes(run.status)) refresh().catch(() => {}); }, 2000);
  signal.addEventListener("abort", () => { stop(); clearInterval(timer); });

  return h("div", { class: "run", "data-run": runId },
    h("h1", {}, `Run ${runId.slice(0, 8)}`, issue ? h("span", { class: "muted" }, ` · ${issue.identifier}`) : ""), why, summary, tech,
    h("div", { class: "columns" },
      h("section", { class: "panel", "aria-label": "Transcript" }, h("h2", {}, "Transcript ", state), log),
      h("div", {},
        h("section", { class: "panel", "aria-label": "Turns" }, h("h2", {}, "Turns"),
          scrollTable(h("table", {},
            h("thead", {}, h("tr", {}, ["#", "Kind", "Status", "Took", "How it ended"].map((t) => h("th", { scope: "col" }, t)))),
            turns), "Turns")),
        steer)),
    h("section", { class: "panel", "aria-label": "Tool calls" }, h("h2", {}, "Tool calls"),
      h("p", { class: "muted" }, "The run's tool journal: every call of a Paperclip tool, as the control plane kept it."),
      scrollTable(h("table", { class: "journal" },
        h("thead", {}, h("tr", {}, ["Tool", "Status", "Took", "Arguments", "Result"].map((t) => h("th", { scope: "col" }, t)))),
        calls), "Tool calls")));
}
