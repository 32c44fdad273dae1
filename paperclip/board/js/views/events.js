// One line per run event (the transcript's "raw" view): its seq, its type and what it says, briefly.

import { h } from "../dom.js";

export const WORKSPACE_EVENTS = ["workspace.ready", "workspace.state"];

/** A work product in one line: where the branch is and what changed. */
export function workProductLine(state) {
  const files = state.files || [];
  const count = `${files.length}${state.files_truncated ? "+" : ""}`;
  return [
    `${state.branch || "?"} at ${String(state.head || "").slice(0, 7)}`,
    `${state.ahead || 0} ahead`,
    `${count} ${files.length === 1 && !state.files_truncated ? "file" : "files"} changed`,
    state.dirty ? "uncommitted changes" : "clean",
  ].join(" · ");
}

function summary(event) {
  const p = event.payload || {};
  const item = p.item || {};
  if (item.type === "agentMessage") return item.text || "";
  if (item.type === "mcpToolCall") return `tool ${item.tool || ""}${item.status ? ` (${item.status})` : ""}`;
  if (item.type === "commandExecution") return item.command || "";
  if (item.type === "userMessage") return "user message";
  if (WORKSPACE_EVENTS.includes(event.type)) return workProductLine(p);
  if (event.type === "progress") return p.summary || "";
  if (event.type === "run.finished") return [p.status, p.outcome, p.reason].filter(Boolean).join(" · ");
  if (p.delta && typeof p.delta === "string") return p.delta;
  if (p.turn && p.turn.status) return p.turn.status;
  return "";
}

export function eventItem(event) {
  return h("li", { "data-seq": event.seq, "data-type": event.type },
    h("span", { class: "seq" }, `#${event.seq}`), " ",
    h("code", { class: "type" }, event.type), " ",
    h("span", { class: "summary" }, summary(event)));
}

/** An ordered list that a live stream appends to; it counts gaps and repeats it sees. */
export function eventList(runId) {
  const list = h("ol", { class: "events", "data-run": runId, "aria-label": "Run events", "data-last-seq": "0", "data-anomalies": "0" });
  list.add = (event) => {
    const last = Number(list.dataset.lastSeq);
    if (event.seq !== last + 1) list.dataset.anomalies = String(Number(list.dataset.anomalies) + 1);
    list.dataset.lastSeq = String(event.seq);
    // Follow the tail, unless the reader scrolled up to look at something.
    const atEnd = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    list.append(eventItem(event));
    if (atEnd) list.scrollTop = list.scrollHeight;
    if (list.childElementCount > 2000) list.firstElementChild.remove(); // bounded
  };
  return list;
}
