// An issue's thread, oldest first: the comments (Markdown, a person's own editable) and the runs
// in between, each run in words (how it ended, why it failed, Retry), the latest one with its
// transcript live. The box for a new comment is at its end.

import { api, keyFor, patch, post } from "../api.js";
import { badge, button, clear, confirmed, duration, errorBox, field, h, statusName, when } from "../dom.js";
import { markdown } from "../markdown.js";
import { retryButton } from "../retry.js";
import { followRun } from "../stream.js";
import { transcript } from "../transcript.js";

const ACTIVE = ["queued", "running"];
const took = (r) => (r.started_at && r.finished_at ? duration(Date.parse(r.finished_at) - Date.parse(r.started_at)) : "");

/** Why a run ended as it did (its `status_reason`), as people say it. */
const ENDED_BECAUSE = {
  task_completed: "the task is done", task_yielded: "the agent waits for an answer",
  task_blocked: "the task is blocked", task_review_requested: "its changes wait for review",
  task_neither_done_nor_held: "the task is neither done nor held",
};
export const endedBecause = (reason) => ENDED_BECAUSE[reason] || statusName(reason).toLowerCase();

/** A run in words: "Succeeded in 12 s", "Failed: <reason>", "Running". */
export function runSummary(r) {
  if (r.status === "failed") return r.reason || "The run failed.";
  if (r.status === "succeeded") return `Succeeded${took(r) ? ` in ${took(r)}` : ""}${r.status_reason ? ` · ${endedBecause(r.status_reason)}` : ""}.`;
  if (r.status === "cancelled") return "Cancelled.";
  return r.status === "queued" ? "Starting: waiting for a runner." : "The agent is working.";
}

/** The code behind a failure, folded: the error code and the provider's own words. */
export function failureDetails(r) {
  if (!r.error_code && !r.error_message) return null;
  return h("details", { class: "code" }, h("summary", {}, "Details"),
    r.error_code ? h("code", {}, r.error_code) : "", r.error_message ? h("div", { class: "muted small" }, r.error_message) : "");
}

/**
 * The thread of an issue. `node.update(comments, runs)` draws what changed; `node.onWorkspaceEvent`
 * is called with each event of the live run; `refresh()` (given) reads the page again.
 */
export function issueThread({ companyId, issue, agentName, refresh, onEvent = () => {} }) {
  const path = `/companies/${companyId}/issues/${issue.id}`;
  const list = h("ol", { class: "thread", "aria-label": "Thread", "data-thread": "" });
  const runNodes = new Map(); // run id -> { li, sig }
  const commentNodes = new Map();
  let liveRunId = null;
  let live = null;
  let stopFollowing = null;
  const livePanel = h("div", { class: "live-run" });

  function follow(run) {
    if (liveRunId === run.id) return;
    if (stopFollowing) stopFollowing();
    liveRunId = run.id;
    live = transcript(run.id, { compact: true });
    const state = h("span", { class: "stream-state", "data-state": "connecting" }, "connecting");
    clear(livePanel).append(h("div", { class: "live-head muted small" }, "Transcript ", state), live);
    stopFollowing = followRun(companyId, run.id, {
      onEvent: (event) => { live.add(event); onEvent(event); },
      onState: (s) => { state.dataset.state = s; clear(state).append(s === "live" ? "live" : s); },
    });
  }

  function runItem(r, latest) {
    const li = h("li", { class: `t-run run-${r.status}`, "data-run": r.id, "data-status": r.status });
    const head = h("div", { class: "entry-head" },
      h("span", { class: "who" }, agentName(r.agent_id)), " ",
      h("a", { href: `#/c/${companyId}/runs/${r.id}` }, `run ${r.id.slice(0, 8)}`), " ", badge(r.status), " ",
      h("span", { class: "muted small" }, when(r.created_at)));
    const words = h("div", { class: r.status === "failed" ? "run-words failed" : "run-words" }, runSummary(r));
    li.append(head, words);
    if (r.status === "failed") {
      li.append(failureDetails(r) || "");
      if (latest && !["done", "cancelled"].includes(issue.status)) {
        li.append(h("div", { class: "actions" }, retryButton(companyId, r.id, { onDone: refresh })));
      }
    }
    if (latest) li.append(livePanel);
    return li;
  }

  function commentItem(c) {
    const byPerson = !c.author_agent_id;
    const li = h("li", { class: `t-comment${byPerson ? " by-person" : ""}`, "data-comment": c.id });
    const body = c.deleted_at ? h("p", { class: "muted" }, "(deleted)") : markdown(c.body);
    body.classList.add("body");
    const problem = h("div", { "aria-live": "polite" });
    const actions = h("span", { class: "entry-actions" });
    if (byPerson && !c.deleted_at) {
      actions.append(
        button("Edit", { kind: "ghost", "aria-label": `Edit comment of ${new Date(c.created_at).toLocaleString()}`, onclick: () => edit() }),
        confirmed("Delete", async () => { await api("DELETE", `${path}/comments/${c.id}`); await refresh(); },
          { onError: (e) => clear(problem).append(errorBox(e)), "aria-label": "Delete the comment" }));
    }
    function edit() {
      const box = h("textarea", { rows: 4, "aria-label": "Edit the comment" });
      box.value = c.body;
      const save = button("Save comment", { kind: "primary" });
      const cancel = button("Cancel", { onclick: () => { form.replaceWith(body); actions.hidden = false; } });
      const form = h("div", { class: "edit-comment" }, box, h("div", { class: "actions" }, save, " ", cancel), problem);
      save.addEventListener("click", async () => {
        save.disabled = true;
        try {
          await patch(`${path}/comments/${c.id}`, { body: box.value });
          commentNodes.delete(c.id);
          await refresh();
        } catch (error) { clear(problem).append(errorBox(error)); save.disabled = false; }
      });
      body.replaceWith(form);
      actions.hidden = true;
      box.focus();
    }
    li.append(h("div", { class: "entry-head" },
      h("span", { class: "who" }, c.author_agent_id ? agentName(c.author_agent_id) : "You"), " ",
      h("span", { class: "muted small" }, when(c.created_at), c.edited_at ? " · edited" : ""), " ", actions),
    body, problem);
    return li;
  }

  /** Draw the thread: entries already on the page stay (a transcript or a half-typed edit with
   * them) unless what they show changed. */
  function update(comments, runs) {
    const latestRun = runs[0] || null; // runs come newest first
    if (latestRun) follow(latestRun);
    const entries = [
      ...comments.map((c) => ({ at: c.created_at, kind: "comment", item: c })),
      ...runs.map((r) => ({ at: r.created_at, kind: "run", item: r })),
    ].sort((a, b) => a.at.localeCompare(b.at));
    const wanted = [];
    for (const { kind, item } of entries) {
      const nodes = kind === "run" ? runNodes : commentNodes;
      const latest = kind === "run" && item === latestRun;
      const sig = JSON.stringify([item, latest, issue.status]);
      let known = nodes.get(item.id);
      if (!known || known.sig !== sig) {
        if (known && known.li.querySelector(".edit-comment")) { wanted.push(known.li); continue; }
        const li = kind === "run" ? runItem(item, latest) : commentItem(item);
        if (known) known.li.replaceWith(li);
        known = { li, sig };
        nodes.set(item.id, known);
      }
      wanted.push(known.li);
    }
    // In order, without moving what is already in place (a moved node loses its scroll).
    wanted.forEach((li, index) => { if (list.children[index] !== li) list.insertBefore(li, list.children[index] || null); });
    while (list.children.length > wanted.length) list.lastElementChild.remove();
    if (!entries.length) list.append(h("li", { class: "muted empty" }, "Nothing yet: assign an agent to start, or write a comment."));
    return live;
  }

  // A new comment: sent once (a retry after a lost answer keeps its key).
  const commentBody = h("textarea", { name: "body", rows: 3, required: true, placeholder: "Markdown. A comment wakes the assignee." });
  const commentStatus = h("div", { "aria-live": "polite" });
  const sendComment = h("button", { type: "submit", class: "btn primary" }, "Post comment");
  let unsent = null;
  const commentForm = h("form", {
    "aria-label": "New comment", class: "comment-form",
    onsubmit: async (e) => {
      e.preventDefault();
      sendComment.disabled = true;
      clear(commentStatus);
      try {
        unsent = keyFor(unsent, commentBody.value);
        await post(`${path}/comments`, { body: commentBody.value, idempotency_key: unsent.key });
        unsent = null;
        commentBody.value = "";
        await refresh();
      } catch (error) { commentStatus.append(errorBox(error)); } finally { sendComment.disabled = false; }
    },
  }, field("Comment", commentBody), sendComment, commentStatus);

  const node = h("section", { class: "panel thread-panel", "aria-label": "Thread" },
    h("h2", {}, "Thread"), list, commentForm);
  node.update = update;
  node.live = () => live;
  node.stop = () => { if (stopFollowing) stopFollowing(); };
  node.isActive = (runs) => runs.length && ACTIVE.includes(runs[0].status);
  return node;
}
