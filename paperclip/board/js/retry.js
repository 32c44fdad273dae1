// Retry on a failed run: a new wake of its agent, exactly once. The button is disabled while the
// request is out; each press sends a key of its own, and the server answers every retry of the
// same run with the same wake (201 the first time, 200 after).

import { ApiError, authHeaders } from "./api.js";
import { button, clear, errorBox, h } from "./dom.js";
import { refreshInboxCount } from "./views/companies.js";

const newKey = () => globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random().toString(16).slice(2)}`;

async function retryRun(companyId, runId) {
  const response = await fetch(`/api/companies/${companyId}/runs/${runId}/retry`, {
    method: "POST",
    headers: { Accept: "application/json", "Content-Type": "application/json", "Idempotency-Key": newKey(), ...authHeaders() },
    body: "{}",
    credentials: "same-origin",
    cache: "no-store",
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, data);
  return { ...data, again: response.status === 200 };
}

/** A Retry button for the failed run `runId`; what happened is said beside it. `onDone()` runs
 * after a retry was accepted (the page reads itself again). */
export function retryButton(companyId, runId, { onDone = () => {}, label = "Retry" } = {}) {
  const note = h("span", { class: "retry-note", role: "status" });
  const btn = button(label, { kind: "primary", "data-retry": runId, "aria-label": `${label} run ${runId.slice(0, 8)}` });
  btn.addEventListener("click", async () => {
    if (btn.disabled) return;
    btn.disabled = true;
    clear(note);
    try {
      const done = await retryRun(companyId, runId);
      note.append(done.again ? "Already retried: the agent will run again." : "Retried: the agent will run again.");
      btn.hidden = true;
      refreshInboxCount();
      await onDone(done);
    } catch (error) {
      note.append(errorBox(error));
      btn.disabled = false;
    }
  });
  return h("span", { class: "retry" }, btn, " ", note);
}
