// What waits on a person across the company (GET …/inbox): questions, approvals, stages and
// blockers to answer; holds to resolve; failed runs nobody has moved past. A question's options
// are answered here as on the issue page; the rest link to where they are dealt with.

import { get, post } from "../api.js";
import { badge, button, clear, errorBox, h, plural, statusName, when } from "../dom.js";
import { markdown } from "../markdown.js";
import { retryButton } from "../retry.js";
import { failureDetails } from "./thread.js";
import { refreshInboxCount } from "./companies.js";
import { interactionActions } from "../chat.js";
import { budgetAlerts } from "./budgets.js";
import { issueHref } from "./issues.js";

const REFRESH_MS = 4000;

function issueLink(companyId, issue) {
  return issue ? h("a", { href: issueHref(companyId, issue) }, `${issue.identifier} · ${issue.title}`) : h("span", { class: "muted" }, "no issue");
}

function section(label, count, list, empty) {
  const heading = h("h2", {}, label, " ", h("span", { class: "count badge", "data-count": count }, String(count)));
  if (!list.childElementCount) list.append(h("li", { class: "muted" }, empty));
  return h("section", { class: "panel", "aria-label": label }, heading, list);
}

export async function inboxView(companyId, signal) {
  const base = `/companies/${companyId}`;
  const body = h("div", { class: "inbox-sections" });
  const note = h("div", { "aria-live": "polite" });
  let agents = null;
  const alerts = budgetAlerts(companyId);

  async function refresh() {
    alerts.refresh().catch(() => {});
    const [inbox, agentList] = await Promise.all([get(`${base}/inbox`), agents ? null : get(`${base}/agents?limit=200`)]);
    agents = agents || Object.fromEntries(agentList.items.map((a) => [a.id, a.name]));
    // Keep a half-typed answer: no redraw while the focus is in a form field here.
    const active = document.activeElement;
    if (body.contains(active) && ["INPUT", "TEXTAREA"].includes(active.tagName)) return;
    if (body.dataset.sig === JSON.stringify(inbox)) return;
    body.dataset.sig = JSON.stringify(inbox);

    const cards = h("ul", { class: "inbox-list", "aria-label": "Questions and approvals" },
      inbox.interactions.map((i) => h("li", { class: "card", "data-interaction": i.id, "data-kind": i.kind, "data-status": i.status },
        h("div", { class: "meta" }, statusName(i.kind), " · ", issueLink(companyId, i.issue), " · ", when(i.created_at)),
        h("strong", { class: "title" }, i.title),
        i.body ? markdown(i.body, { cls: "body" }) : null,
        interactionActions(companyId, i, () => refresh().catch(() => {}), note))));
    const holds = h("ul", { class: "inbox-list", "aria-label": "Holds" },
      inbox.holds.map((x) => h("li", { "data-hold": x.id },
        badge(x.status), " ", h("strong", {}, statusName(x.kind)), ": ", x.reason, " · ", issueLink(companyId, x.issue),
        h("span", { class: "muted" }, ` · set by ${x.set_by} `, when(x.created_at)))));
    const failed = h("ul", { class: "inbox-list", "aria-label": "Failed runs" },
      inbox.failed_runs.map((r) => {
        const problem = h("div", { "aria-live": "polite" });
        const dismiss = button("Dismiss", { "aria-label": `Dismiss run ${r.id.slice(0, 8)}` });
        dismiss.addEventListener("click", async () => {
          dismiss.disabled = true;
          try {
            await post(`${base}/runs/${r.id}/dismiss`);
          } catch (error) {
            if (error.code !== "run_already_dismissed") { problem.append(errorBox(error)); dismiss.disabled = false; return; }
          }
          refreshInboxCount();
          await refresh();
        });
        return h("li", { "data-run": r.id },
          h("div", { class: "meta" }, issueLink(companyId, r.issue), " · ", agents[r.agent_id] || "an agent", " · ",
            h("a", { href: `#/c/${companyId}/runs/${r.id}` }, `run ${r.id.slice(0, 8)}`), " · ", when(r.finished_at || r.created_at)),
          h("p", { class: "run-words failed" }, r.reason || "The run failed."), failureDetails(r),
          h("div", { class: "actions" }, r.issue && ["done", "cancelled"].includes(r.issue.status) ? null
            : retryButton(companyId, r.id, { onDone: () => refresh() }), dismiss), problem);
      }));
    const blocked = h("ul", { class: "inbox-list", "aria-label": "Blocked issues" },
      inbox.blocked_issues.map((i) => h("li", { "data-issue": i.id },
        badge(i.status), " ", issueLink(companyId, i),
        h("span", { class: "muted" }, ` · ${i.assignee_agent_id ? agents[i.assignee_agent_id] || "an agent" : "nobody"} is blocked`))));
    const total = inbox.counts.interactions + inbox.counts.holds + inbox.counts.failed_runs + inbox.counts.blocked_issues;
    clear(body).append(
      h("p", { class: "muted", "data-total": total }, total ? `${plural(total, "thing")} wait${total === 1 ? "s" : ""} on a person.` : "Nothing waits on you."),
      section("Questions and approvals", inbox.counts.interactions, cards, "No question or approval waits."),
      section("Holds", inbox.counts.holds, holds, "No task is held."),
      section("Failed runs", inbox.counts.failed_runs, failed, "No failed run waits."),
      section("Blocked issues", inbox.counts.blocked_issues, blocked, "No blocked issue waits."),
    );
  }
  try { await refresh(); } catch (error) { body.append(errorBox(error)); }
  const timer = setInterval(() => { if (!document.hidden) refresh().catch(() => {}); }, REFRESH_MS);
  signal.addEventListener("abort", () => clearInterval(timer));

  return h("div", { class: "inbox" }, h("h1", {}, "Inbox"),
    h("p", { class: "muted" },
      "What waits on a person: questions and approvals to answer, holds to resolve, failed runs nobody has moved past ",
      "(the latest run of an open issue: it leaves the inbox when the issue runs again, or is closed or put in the backlog), ",
      "and blocked issues no agent is on (a blocker goes up the org chart first; past its top, it comes here)."),
    note, alerts.node, body);
}
