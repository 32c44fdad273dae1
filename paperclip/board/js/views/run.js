// One run: its summary, its turns (with the steer slot on a running one) and its events, live.

import { get } from "../api.js";
import { badge, clear, h, when } from "../dom.js";
import { slots } from "../slots.js";
import { followRun } from "../stream.js";
import { eventList } from "./events.js";

export async function runView(companyId, runId, signal) {
  const base = `/companies/${companyId}`;
  let run = await get(`${base}/runs/${runId}`);
  const agent = await get(`${base}/agents/${run.agent_id}`);
  const summary = h("dl", { class: "facts" });
  const turns = h("tbody");
  const steer = h("div");
  let steerPanel = null;

  async function refresh() {
    run = await get(`${base}/runs/${runId}`);
    const { items } = await get(`${base}/runs/${runId}/turns`);
    const facts = [
      ["Status", badge(run.status)], ["Phase", run.phase], ["Agent", `${agent.name} (${run.provider})`],
      ["Issue", run.issue_id ? h("a", { href: `#/c/${companyId}/issues/${run.issue_id}` }, "open the issue") : "none"],
      ["Controller", `${run.controller_instance || "none"} · epoch ${run.controller_epoch}`],
      ["Started", when(run.started_at)], ["Finished", when(run.finished_at)],
      ["Outcome", [run.status_reason, run.error_code, run.error_message].filter(Boolean).join(" · ")],
      ["Answer", run.answer || ""],
    ];
    clear(summary).append(...facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
    summary.dataset.status = run.status;
    clear(turns).append(...items.map((t) => h("tr", { "data-turn": t.number },
      h("td", {}, t.number), h("td", {}, t.kind), h("td", {}, badge(t.status)),
      h("td", {}, t.runner_id ? t.runner_id.slice(0, 8) : ""), h("td", {}, t.provider_turn_id || ""),
      h("td", {}, [t.error_code, t.error_message].filter(Boolean).join(" · ")))));
    const running = items.find((t) => t.status === "running") || null;
    const context = { companyId, run, agent, turn: running };
    if (steerPanel) steerPanel.update(context);
    else steer.append((steerPanel = slots.turnSteer(context)));
  }
  await refresh();

  const list = eventList(runId);
  const state = h("span", { class: "stream-state", "data-state": "connecting" }, "connecting");
  const stop = followRun(companyId, runId, {
    onEvent: (event) => list.add(event),
    onState: (s) => {
      state.dataset.state = s; clear(state).append(s);
      if (s === "ended" || s === "live") refresh().catch(() => {});
    },
  });
  const ended = () => ["succeeded", "failed", "cancelled"].includes(run.status);
  const timer = setInterval(() => { if (!document.hidden && !ended()) refresh().catch(() => {}); }, 2000);
  signal.addEventListener("abort", () => { stop(); clearInterval(timer); });

  return h("div", { class: "run", "data-run": runId },
    h("h1", {}, `Run ${runId.slice(0, 8)}`), summary,
    h("section", { class: "panel", "aria-label": "Turns" }, h("h2", {}, "Turns"),
      h("div", { class: "scroll" }, h("table", {},
        h("thead", {}, h("tr", {}, ["#", "Kind", "Status", "Runner", "Provider turn", "Error"].map((t) => h("th", { scope: "col" }, t)))),
        turns))),
    steer,
    h("section", { class: "panel", "aria-label": "Events" }, h("h2", {}, "Events ", state), list));
}
