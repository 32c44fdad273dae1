// One issue: what it is, who has it, its comments, runs (newest first, the latest one's
// transcript live), its workspace, what holds it, and the slots for the chat and the cards.

import { all, get, keyFor, patch, post } from "../api.js";
import { badge, clear, errorBox, field, h, plural, statusName, when } from "../dom.js";
import { slots } from "../slots.js";
import { followRun } from "../stream.js";
import { transcript } from "../transcript.js";
import { budgetHref, count, usageFacts } from "../usage.js";
import { budgetReason } from "./budgets.js";
import { ISSUE_STATUSES, agentOptions, resolveIssue } from "./issues.js";
import { projectName, projectOptions } from "./projects.js";
import { workspacePanel } from "./workspace.js";

const REFRESH_MS = 1500;

/** Whether `data` is what `el` shows already (re-rendering would only move the focus). */
function unchanged(el, data) {
  const sig = JSON.stringify(data);
  if (el.dataset.sig === sig) return true;
  el.dataset.sig = sig;
  return false;
}

function sending(statusBox, action) {
  return async (e) => {
    e.preventDefault();
    const button = e.target.querySelector("button[type=submit]") || e.target;
    button.disabled = true;
    clear(statusBox);
    try { await action(); } catch (error) { statusBox.append(errorBox(error)); } finally { button.disabled = false; }
  };
}

/** What holds the task beside its holds: an interaction waiting for a person (or, an approval
 * sent back, for the agent) keeps the agent from finishing it. */
function holdingItem(i) {
  const waitsOn = i.status === "revision_requested" ? "the agent's revision" : "a person";
  return h("li", { "data-holding-interaction": i.id, "data-status": "active" },
    badge("active"), " ", h("strong", {}, statusName(i.kind)), ": ", i.title,
    h("span", { class: "muted" }, ` · holds the task until ${i.status === "revision_requested" ? "resubmitted" : "answered"} (waits on ${waitsOn}; see Questions and approvals)`));
}

export async function issueView(companyId, issueRef, signal) {
  const base = `/companies/${companyId}`;
  const issue = await resolveIssue(companyId, issueRef);
  const issueId = issue.id;
  const path = `${base}/issues/${issueId}`;
  const [agents, projects] = await Promise.all([all(`${base}/agents`), all(`${base}/projects`)]);
  const agentName = (id) => (agents.find((a) => a.id === id) || { name: "an agent" }).name;

  // Summary, refreshed in place.
  const title = h("h1", {});
  const statusBadge = h("span", { id: "issue-status" });
  const assigneeText = h("span", { id: "issue-assignee" });
  const projectText = h("span", { id: "issue-project" });
  const description = h("p", { class: "description" });
  let assignee = null;
  let statusSelect = null;
  let projectSelect = null;
  function showIssue() {
    // The form follows the issue unless someone is changing it right now.
    if (statusSelect && !statusSelect.matches(":focus")) statusSelect.value = issue.status;
    if (assignee && !assignee.matches(":focus")) assignee.value = issue.assignee_agent_id || "";
    if (projectSelect && !projectSelect.matches(":focus")) projectSelect.value = issue.project_id || "";
    clear(title).append(`${issue.identifier} · ${issue.title}`);
    clear(statusBadge).append(badge(issue.status));
    statusBadge.dataset.status = issue.status;
    clear(assigneeText).append(issue.assignee_agent_id ? agentName(issue.assignee_agent_id) : "nobody");
    clear(projectText).append(issue.project_id ? projectName(projects, issue.project_id) : "none (runs use a scratch folder)");
    projectText.dataset.project = issue.project_id || "";
    clear(description).append(issue.description || "No description.");
  }
  showIssue();

  // Assign and change status.
  assignee = h("select", { name: "assignee_agent_id" }, agentOptions(agents, issue.assignee_agent_id));
  statusSelect = h("select", { name: "status" },
    ISSUE_STATUSES.map((s) => h("option", { value: s, selected: s === issue.status }, statusName(s))));
  projectSelect = h("select", { name: "project_id" }, projectOptions(projects, issue.project_id));
  const editStatus = h("div", { "aria-live": "polite" });
  const editForm = h("form", {
    class: "panel inline", "aria-label": "Assignment",
    onsubmit: sending(editStatus, async () => {
      const body = {};
      if ((assignee.value || null) !== issue.assignee_agent_id) body.assignee_agent_id = assignee.value || null;
      if (statusSelect.value !== issue.status) body.status = statusSelect.value;
      if ((projectSelect.value || null) !== issue.project_id) body.project_id = projectSelect.value || null;
      if (!Object.keys(body).length) return;
      Object.assign(issue, await patch(path, body));
      showIssue();
    }),
  }, field("Assignee", assignee), field("Status", statusSelect), field("Project", projectSelect),
  h("button", { type: "submit" }, "Save"), editStatus);

  // Comments.
  const commentList = h("ol", { class: "comments", "aria-label": "Comments" });
  const commentBody = h("textarea", { name: "body", rows: 3, required: true });
  const commentStatus = h("div", { "aria-live": "polite" });
  let unsent = null; // the comment not known to be posted, and its idempotency key
  const commentForm = h("form", {
    "aria-label": "New comment",
    onsubmit: sending(commentStatus, async () => {
      unsent = keyFor(unsent, commentBody.value);
      await post(`${path}/comments`, { body: commentBody.value, idempotency_key: unsent.key });
      unsent = null;
      commentBody.value = "";
      await refresh();
    }),
  }, field("Comment", commentBody), h("button", { type: "submit" }, "Post comment"), commentStatus);

  // Holds.
  const holdList = h("ul", { class: "holds", "aria-label": "Holds" });
  const holdReason = h("input", { name: "reason", required: true, maxlength: 2000 });
  const holdStatus = h("div", { "aria-live": "polite" });
  const holdForm = h("form", {
    class: "inline", "aria-label": "Hold this task",
    onsubmit: sending(holdStatus, async () => {
      await post(`${base}/holds`, { issue_id: issueId, reason: holdReason.value });
      holdReason.value = "";
      await refresh();
    }),
  }, field("Reason to hold", holdReason), h("button", { type: "submit" }, "Hold task"), holdStatus);
  function holdItem(hold) {
    const resolve = h("button", {
      type: "button", "aria-label": `Resolve hold: ${hold.reason}`,
      onclick: async () => {
        resolve.disabled = true;
        try { await post(`${base}/holds/${hold.id}/resolve`, { resolution: "released" }); await refresh(); } catch (error) { li.append(errorBox(error)); resolve.disabled = false; }
      },
    }, "Resolve");
    const li = h("li", { "data-hold": hold.id, "data-status": hold.status },
      badge(hold.status), " ", h("strong", {}, statusName(hold.kind)), ": ", hold.reason,
      h("span", { class: "muted" }, ` set by ${hold.set_by}`, hold.replay_forbidden ? " · no replay" : "",
        hold.resolution ? ` · ${hold.resolution} by ${hold.resolved_by}` : ""),
      hold.kind === "budget_exceeded" ? [" · ", h("a", { href: budgetHref(companyId, hold.details && hold.details.budget_id) }, "Raise the budget")] : [],
      hold.status === "active" ? [" ", resolve] : []);
    return li;
  }

  // The worktree its runs work in; its events say when it changed.
  const workspace = workspacePanel(companyId, issueId);

  // What its runs used and cost (the costs API filtered by the issue), read again when its runs
  // change and every few passes while one works; and why it waits, when a budget holds it.
  const costFacts = h("dl", { class: "usage-facts", "aria-label": "Usage of its runs" });
  const waits = h("div", { class: "why" });
  let costRead = null;
  let passes = 0;
  let waitsFor = null;
  async function readCost(runs) {
    const key = JSON.stringify(runs.map((r) => [r.id, r.status]));
    const working = runs.some((r) => ["queued", "running"].includes(r.status));
    if (key === costRead && !(working && passes % 3 === 0)) return;
    costRead = key;
    const { totals, groups } = await get(`${base}/costs?issue_id=${issueId}&group_by=model`);
    const models = groups.map((g) => `${g.key} (${plural(g.totals.events, "response")})`).join(", ");
    clear(costFacts).append(...[...usageFacts(totals), ["Runs", count(totals.runs)], ["Models", models || "none"]]
      .flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
  }
  async function showWaits(holds) {
    const hold = holds.find((x) => x.status === "active" && x.kind === "budget_exceeded") || null;
    if ((hold && hold.id) === waitsFor) return;
    waitsFor = hold && hold.id;
    clear(waits);
    if (hold) {
      waits.append(await budgetReason(companyId, {
        lead: "Waiting for a budget:", message: hold.reason, budgetId: hold.details && hold.details.budget_id,
        agentId: issue.assignee_agent_id, projectId: issue.project_id,
      }));
    }
  }

  // Runs, newest first, and the latest one's transcript live.
  const runList = h("ul", { class: "runs", "aria-label": "Runs" });
  const livePanel = h("div", { class: "live-run" });
  let liveRunId = null;
  let live = null;
  let journalRead = null;
  let stopFollowing = null;
  function follow(run) {
    if (liveRunId === run.id) return;
    if (stopFollowing) stopFollowing();
    liveRunId = run.id;
    live = transcript(run.id, { compact: true });
    const state = h("span", { class: "stream-state", "data-state": "connecting" }, "connecting");
    clear(livePanel).append(
      h("h3", {}, "Latest run ", h("a", { href: `#/c/${companyId}/runs/${run.id}` }, run.id.slice(0, 8)), " ", state),
      live);
    stopFollowing = followRun(companyId, run.id, {
      onEvent: (event) => { live.add(event); workspace.runEvent(event); },
      onState: (s) => { state.dataset.state = s; clear(state).append(s); },
    });
  }

  async function refresh() {
    const [fresh, comments, runs, holds, interactions] = await Promise.all([
      get(path), all(`${path}/comments`), all(`${base}/runs?issue_id=${issueId}&sort=-created`),
      all(`${base}/holds?issue_id=${issueId}`), all(`${path}/interactions`),
    ]);
    Object.assign(issue, fresh); // the same object the slots were given: they see it too
    showIssue();
    workspace.follow(issue, runs);
    if (runs.length) follow(runs[0]);
    // The latest run's journal, while it works and once more when it ended.
    const journalKey = runs.length ? `${runs[0].id}:${runs[0].status}` : null;
    if (live && journalKey && (journalKey !== journalRead || ["queued", "running"].includes(runs[0].status))) {
      journalRead = journalKey;
      all(`${base}/runs/${runs[0].id}/tool-calls`).then(live.journal).catch(() => { journalRead = null; });
    }
    const holding = interactions.filter((i) => i.status === "pending" || i.status === "revision_requested");
    passes += 1;
    await Promise.all([readCost(runs).catch(() => { costRead = null; }), showWaits(holds)]);
    if (unchanged(commentList, comments) && unchanged(runList, runs) && unchanged(holdList, [holds, holding])) return;
    clear(commentList).append(...comments.map((c) => h("li", { "data-comment": c.id },
      h("div", { class: "meta" }, c.author_agent_id ? agentName(c.author_agent_id) : "operator", " · ", when(c.created_at)),
      h("div", { class: "body" }, c.deleted_at ? "(deleted)" : c.body))));
    clear(runList).append(...runs.map((r) => h("li", { "data-run": r.id, "data-status": r.status },
      h("a", { href: `#/c/${companyId}/runs/${r.id}` }, r.id.slice(0, 8)), " ", badge(r.status), " ",
      h("span", { class: "muted" }, agentName(r.agent_id), " · ", when(r.created_at),
        r.status_reason ? ` · ${statusName(r.status_reason)}` : "", r.error_code ? ` · ${r.error_code}` : ""))));
    if (!runs.length) runList.append(h("li", { class: "muted" }, "No run yet."));
    clear(holdList).append(...holding.map(holdingItem), ...holds.map(holdItem));
    const standing = holds.filter((x) => x.status === "active").length + holding.length;
    holdList.dataset.holding = String(standing);
    if (!holds.length && !holding.length) holdList.append(h("li", { class: "muted" }, "Nothing holds this task."));
    else if (!standing) holdList.append(h("li", { class: "muted" }, "Nothing holds this task now."));
  }
  await refresh();

  const timer = setInterval(() => { if (!document.hidden) refresh().catch(() => {}); }, REFRESH_MS);
  signal.addEventListener("abort", () => { clearInterval(timer); if (stopFollowing) stopFollowing(); });

  const ctx = { companyId, issue };
  return h("div", { class: "issue", "data-issue": issueId, "data-identifier": issue.identifier },
    title,
    h("p", {}, "Status ", statusBadge, " · assigned to ", assigneeText, " · project ", projectText,
      " · priority ", h("span", { id: "issue-priority" }, statusName(issue.priority))),
    waits,
    description,
    editForm,
    h("div", { class: "columns" },
      h("div", {},
        h("section", { class: "panel", "aria-label": "Runs" }, h("h2", {}, "Runs"), runList, livePanel),
        h("section", { class: "panel", "aria-label": "Cost" }, h("h2", {}, "Cost"), costFacts,
          h("p", { class: "muted small" }, "Summed over the issue's runs. ", h("a", { href: `#/c/${companyId}/costs` }, "The company's costs"))),
        workspace,
        h("section", { class: "panel", "aria-label": "Comments" }, h("h2", {}, "Comments"), commentList, commentForm)),
      h("div", {},
        h("section", { class: "panel", "aria-label": "Holds" }, h("h2", {}, "Holds"), holdList, holdForm),
        slots.issueInteractions(ctx),
        slots.issueChat(ctx))));
}
