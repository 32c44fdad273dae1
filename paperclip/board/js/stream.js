// A run's events, live: server-sent events read over fetch (so an API key can ride along),
// resumed from the last seq seen after any break (a restart, a replica gone, a stream's end).

import { ApiError, authHeaders } from "./api.js";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Follow a run's log from `afterSeq`. Calls onEvent(event) for each stored event, in order,
 * onState(state, detail) as the link changes ("connecting", "live", "reconnecting",
 * "ended", "failed"). Returns a function that stops following.
 */
export function followRun(companyId, runId, { afterSeq = 0, onEvent, onState = () => {} }) {
  let lastSeq = afterSeq;
  let stopped = false;
  let abort = null;
  let retryMs = 1000;

  async function readStream(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let message = { data: [], event: "message", id: null };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return false;
      buffer += value;
      let newline;
      while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
        if (line === "") {
          if (message.data.length) {
            const data = JSON.parse(message.data.join("\n"));
            if (message.event === "end") return true;
            if (message.event === "run_event") {
              lastSeq = data.seq;
              onEvent(data);
            }
          }
          message = { data: [], event: "message", id: null };
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const name = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (name === "data") message.data.push(val);
        else if (name === "event") message.event = val;
        else if (name === "id") message.id = val;
        else if (name === "retry" && /^\d+$/.test(val)) retryMs = Number(val);
      }
    }
  }

  (async () => {
    let first = true;
    while (!stopped) {
      onState(first ? "connecting" : "reconnecting", lastSeq);
      first = false;
      abort = new AbortController();
      try {
        const headers = { Accept: "text/event-stream", ...authHeaders() };
        if (lastSeq > 0) headers["Last-Event-ID"] = String(lastSeq);
        const url = `/api/companies/${companyId}/runs/${runId}/events/stream?after_seq=${lastSeq}`;
        const response = await fetch(url, { headers, signal: abort.signal, cache: "no-store", credentials: "same-origin" });
        if (!response.ok) {
          const body = await response.json().catch(() => null);
          // A refusal will not change by asking again; an outage (5xx) will.
          if (response.status < 500 && response.status !== 429) {
            onState("failed", new ApiError(response.status, body));
            return;
          }
        } else {
          onState("live", lastSeq);
          if (await readStream(response.body)) {
            onState("ended", lastSeq);
            return;
          }
        }
      } catch (error) {
        if (stopped) return;
      }
      await sleep(retryMs);
    }
  })();

  return () => {
    stopped = true;
    if (abort) abort.abort();
  };
}
