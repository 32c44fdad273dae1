// What an issue is doing now (the list API's `live`), in words: "Running for 2 min", "Failed:
// the model's rate limit", "Waiting on you: Ship 2.0?", "Held: release freeze". Lists keep it
// live: each running row follows its run's event stream and reads the list again when the run
// ends; the list is read again now and then for what no stream says (a run starting).

import { ago, h, runningFor } from "./dom.js";
import { followRun } from "./stream.js";

const WORDS = { running: "Running", waiting: "Waiting on you", held: "Held", failed: "Failed", idle: "" };
const MAX_FOLLOWED = 6; // run streams a list follows at once (the server allows a key 32)

/** The state as a compact line: an icon-like badge, its words, and (failures) the code folded. */
export function liveState(live, { compact = false } = {}) {
  if (!live) return "";
  const node = h("span", { class: `live live-${live.state}`, "data-live": live.state, title: live.reason });
  if (live.state === "idle") {
    node.append(h("span", { class: "muted small" }, live.run_id ? live.reason.replace(/\.$/, "") : "Not started"));
    return node;
  }
  node.append(h("span", { class: "dot", "aria-hidden": "true" }), " ");
  if (live.state === "running") {
    node.append(h("strong", {}, "Running"), " ", live.since ? runningFor(live.since, "for ") : "");
    return node;
  }
  if (live.state === "waiting" || live.state === "held") {
    const what = live.reason.replace(/^[^:]*:\s*/, "");
    node.append(h("strong", {}, `${WORDS[live.state]}:`), " ", h("span", { class: "why" }, compact ? what.replace(/\.$/, "") : what));
    return node;
  }
  // Failed: when, and why in words (the code folded where there is room).
  node.append(h("strong", {}, WORDS.failed), " ",
    live.since ? h("span", { class: "muted small", title: new Date(live.since).toLocaleString() }, ago(live.since)) : "",
    h("span", { class: "why" }, live.reason));
  if (live.code && !compact) node.append(h("details", { class: "code" }, h("summary", {}, "Code"), h("code", {}, live.code)));
  return node;
}

/**
 * Keep `issues` live: each running one's run stream is followed (at most a few at once), and
 * `reload()` runs when a followed run ends. Returns { track(issues), stop() }.
 */
export function liveFollower(companyId, reload) {
  const followed = new Map(); // run id -> stop
  let stopped = false;
  function track(issues) {
    if (stopped) return;
    const running = issues.filter((i) => i.live && i.live.state === "running" && i.live.run_id)
      .slice(0, MAX_FOLLOWED).map((i) => i.live.run_id);
    for (const [runId, stop] of followed) {
      if (!running.includes(runId)) { stop(); followed.delete(runId); }
    }
    for (const runId of running) {
      if (followed.has(runId)) continue;
      // Past the log's end: no history replayed, only the stream's end when the run ends.
      const stop = followRun(companyId, runId, {
        afterSeq: 2147483647,
        onEvent: () => {},
        onState: (state) => { if (state === "ended") reload(); },
      });
      followed.set(runId, stop);
    }
  }
  return {
    track,
    stop() { stopped = true; for (const stop of followed.values()) stop(); followed.clear(); },
  };
}
