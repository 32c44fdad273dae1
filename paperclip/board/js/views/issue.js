// One issue, read top-down: what it is (title, what it is doing now, its description), the
// question or approval waiting on you, its changes under review, then the thread (comments and
// runs, the latest run's transcript live in it); the details in a side column (status,
// assignee, project, priority, its parent and parts, holds, questions, workspace, cost, chat).

import { all, get, post } from "../api.js";
import { badge, clear, errorBox, field, h, plural, statusName } from "../dom.js";
import { interactionActions } from "../chat.js";
import { markdown } from "../markdown.js";
import { slots } from "../slots.js";
import { budgetHref, count, usageFacts } from "../usage.js";
import { budgetReason } from "./budgets.js";
import { resolveIssue } from "./issues.js";
import { issueDetails, issueHead } from "./issue_head.js";
import { issueParts } from "./issue_parts.js";
import { reviewPanel } from "./review.js";
import { issueThread } from "./thread.js";
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

/** What waits on a person, at the top of the page: the pending questions and approvals with
 * their answers and decisions right there (the full list is in the side column). */
function waitingBanner(companyId, refresh) {
  const node = h("section", { class: "panel waiting-banner", "aria-label": "Waiting on you", hidden: true });
  const note = h("p", { class: "muted", role: "status" });
  node.show = (pending) => {
    if (node.contains(document.activeElement) && document.activeElement.tagName === "INPUT") return;
    if (unchanged(node, pending)) return;
    node.hidden = !pending.length;
    clear(node).append(h("h2", {}, pending.length === 1 ? "Waiting on you" : `${pending.length} things wait on you`),
      ...pending.map((i) => h("div", { class: "waiting-item", "data-waiting": i.id, "data-kind": i.kind },
        h("div", { class: "meta" }, statusName(i.kind)), h("strong", {}, i.title),
        i.body ? markdown(i.body) : null, interactionActions(companyId, i, refresh, note))), note);
  };
  return node;
}

export async function issueView(companyId, issueRef, signal) {
  const base = `/companies/${companyId}`;
  const issue = await resolveIssue(companyId, issueRef);
  const issueId = issue.id;
  const path = `${base}/issues/${issueId}`;
  const [agents, projects] = await Promise.all([all(`${base}/agents`), all(`${base}/projects`)]);
  const agentName = (id) => (agents.find((a) => a.id === id) || { name: "an agent" }).name;

  const head = issueHead(companyId, issue, { onSaved: () => refresh().catch(() => {}) });
  const details = issueDetails(companyId, issue, agents, projects, { onSaved: () => { head.show(); refresh().catch(() => {}); } });
  const banner = waitingBanner(companyId, () => refresh());
  const parts = issueParts(companyId);

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
  }, field("Reason to hold", holdReason), h("button", { type: "submit", class: "btn secondary" }, "Hold task"), holdStatus);
  function holdItem(hold) {
    const resolve = h("button", {
      type: "button", class: "btn secondary", "aria-label": `Resolve hold: ${hold.reason}`,
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

  // The changes under review, and the worktree they are in.
  const review = reviewPanel(companyId, issue, { onCommented: () => refresh().catch(() => {}), onMerged: () => refresh().catch(() => {}) });
  const workspace = workspacePanel(companyId, issueId, { onLoaded: (ws) => review.load(ws) });

  // What its runs used and cost, and why it waits when a budget holds it.
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

  // The thread: comments and runs, the latest run's transcript live.
  const thread = issueThread({ companyId, issue, agentName, refresh: () => refresh(), onEvent: (event) => workspace.runEvent(event) });
  let journalRead = null;

  async function refresh() {
    const [fresh, comments, runs, holds, interactions] = await Promise.all([
      get(path), all(`${path}/comments`), all(`${base}/runs?issue_id=${issueId}&sort=-created`),
      all(`${base}/holds?issue_id=${issueId}`), all(`${path}/interactions`),
    ]);
    Object.assign(issue, fresh); // the same object the slots were given: they see it too
    head.show();
    details.show();
    workspace.follow(issue, runs);
    const live = thread.update(comments, runs);
    // The latest run's journal, while it works and once more when it ended.
    const journalKey = runs.length ? `${runs[0].id}:${runs[0].status}` : null;
    if (live && journalKey && (journalKey !== journalRead || ["queued", "running"].includes(runs[0].status))) {
      journalRead = journalKey;
      all(`${base}/runs/${runs[0].id}/tool-calls`).then(live.journal).catch(() => { journalRead = null; });
    }
    const holding = interactions.filter((i) => i.status === "pending" || i.status === "revision_requested");
    banner.show(interactions.filter((i) => i.status === "pending"));
    passes += 1;
    await Promise.all([readCost(runs).catch(() => { costRead = null; }), showWaits(holds), parts.show(issue).catch(() => {})]);
    if (unchanged(holdList, [holds, holding])) return;
    clear(holdList).append(...holding.map(holdingItem), ...holds.map(holdItem));
    const standing = holds.filter((x) => x.status === "active").length + holding.length;
    holdList.dataset.holding = String(standing);
    if (!holds.length && !holding.length) holdList.append(h("li", { class: "muted" }, "Nothing holds this task."));
    else if (!standing) holdList.append(h("li", { class: "muted" }, "Nothing holds this task now."));
  }
  await refresh();

  const timer = setInterval(() => { if (!document.hidden) refresh().catch(() => {}); }, REFRESH_MS);
  signal.addEventListener("abort", () => { clearInterval(timer); thread.stop(); });

  const ctx = { companyId, issue };
  return h("div", { class: "issue", "data-issue": issueId, "data-identifier": issue.identifier },
    banner,
    h("div", { class: "issue-layout" },
      h("div", { class: "issue-main" },
        head, waits, review, thread),
      h("aside", { class: "issue-side", "aria-label": "Details of the issue" },
        details,
        parts,
        h("section", { class: "panel", "aria-label": "Holds" }, h("h2", {}, "Holds"), holdList, holdForm),
        slots.issueInteractions(ctx),
        workspace,
        h("section", { class: "panel", "aria-label": "Cost" }, h("h2", {}, "Cost"), costFacts,
          h("p", { class: "muted small" }, "Summed over the issue's runs. ", h("a", { href: `#/c/${companyId}/costs` }, "The company's costs"))),
        slots.issueChat(ctx))));
}
