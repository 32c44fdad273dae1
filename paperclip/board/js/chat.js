// The agent chat and the interaction cards of an issue, over the public API (docs/chat.md).
// Both panels poll while they are on the page; a request that fails says why and retries.

import { all, get, keyFor, post, q } from "./api.js";
import { badge, clear, field, h, statusName, when } from "./dom.js";
import { markdown } from "./markdown.js";

const POLL_MS = 1500;

/** Poll `tick` while `node` is in the document. */
function polling(node, tick) {
  const timer = setInterval(() => {
    if (!node.isConnected) return clearInterval(timer);
    if (!document.hidden) tick().catch(() => {});
  }, POLL_MS);
}

function refusal(error) {
  return `Refused (${error.code || error.status}): ${error.message}`;
}

/** The chat with the issue's assignee: its messages, its state, a box to talk. */
export function renderChat({ companyId, issue }) {
  const base = `/companies/${companyId}`;
  let conversation = null;
  const state = h("span", { class: "badge", "data-chat-state": "" });
  const list = h("ol", { class: "chat", "aria-label": "Chat messages", "aria-live": "polite" });
  const note = h("p", { class: "muted", role: "status" });
  const box = h("textarea", { rows: 2 });
  const send = h("button", { type: "button" }, "Send");
  const start = h("button", { type: "button" }, "Start a chat");

  function show() {
    const assignee = issue.assignee_agent_id;
    start.hidden = Boolean(conversation) || !assignee;
    box.disabled = send.disabled = !conversation;
    clear(state).append(conversation ? statusName(conversation.state) : "No chat");
    state.dataset.chatState = conversation ? conversation.state : "";
    if (!assignee && !conversation) clear(note).append("Assign an agent to chat with it.");
  }

  async function refresh() {
    if (!conversation) {
      const found = await get(`${base}/conversations${q({ issue_id: issue.id, limit: "1" })}`);
      conversation = found.items[0] || null;
    } else {
      conversation = await get(`${base}/conversations/${conversation.id}`);
    }
    if (conversation) {
      const messages = await all(`${base}/conversations/${conversation.id}/messages`);
      // Drawn again only when they changed: a selection or an open link stays.
      const sig = JSON.stringify(messages.map((m) => [m.id, m.body, m.delivery]));
      if (list.dataset.sig !== sig) {
        list.dataset.sig = sig;
        // Each message's Markdown, rendered and sanitised (as comments are).
        clear(list).append(...messages.map((m) => h("li", { "data-role": m.role, "data-message": m.id },
          h("div", { class: "meta" }, m.role === "agent" ? "Agent" : "You", m.delivery === "steer" ? " · steered into the running turn" : ""),
          markdown(m.body, { cls: "body" }))));
      }
    }
    show();
  }

  start.addEventListener("click", async () => {
    try {
      conversation = await post(`${base}/conversations`, { issue_id: issue.id, agent_id: issue.assignee_agent_id });
      clear(note);
    } catch (error) {
      clear(note).append(refusal(error));
    }
    show();
  });
  let unsent = null; // the message not known to be sent, and its idempotency key
  send.addEventListener("click", async () => {
    const body = box.value.trim();
    if (!body || !conversation) return;
    send.disabled = true;
    unsent = keyFor(unsent, body);
    try {
      await post(`${base}/conversations/${conversation.id}/messages`, { body, idempotency_key: unsent.key });
      unsent = null;
      box.value = "";
      clear(note);
      await refresh();
    } catch (error) {
      clear(note).append(refusal(error));
    }
    show();
  });

  const node = h("section", { class: "panel slot", "aria-label": "Chat" },
    h("h2", {}, "Chat ", state), list, start, field("Message to the agent", box), send, note);
  show();
  refresh().catch((error) => clear(note).append(refusal(error)));
  polling(node, refresh);
  return node;
}

const ACTIONS = {
  approval: ["approve", "reject", "request_revision"],
  execution_stage: ["resolve"],
  dependency: ["resolve"],
};
const LABELS = { approve: "Approve", reject: "Reject", request_revision: "Request revision", resolve: "Resolve" };
const CARDS = ["question", "confirmation"];
const DONE = {
  answered: "Answered", approved: "Approved", rejected: "Rejected", resolved: "Resolved",
  revision_requested: "Revision requested",
};

/** What was answered or decided, once it was: the answer, or the decision and its note. */
function outcome(i) {
  const response = i.response || {};
  const who = i.resolved_by ? ` by ${i.resolved_by.startsWith("agent:") ? "the agent" : "a person"}` : "";
  const said = response.answer ?? response.note;
  return h("div", { class: "outcome", "data-outcome": i.status },
    h("strong", {}, DONE[i.status] || statusName(i.status)), who,
    said ? [": ", h("q", { class: "answer" }, said)] : "",
    i.status === "revision_requested" ? h("span", { class: "muted" }, " · waiting for the agent to resubmit") : "");
}

/**
 * The controls of one interaction: a pending card's options as buttons (a text box only when it
 * offers none); an approval's decisions (with a note); a stage's or blocker's Resolve; and, once
 * answered or decided, what was. `onDone()` runs after an action; a refusal goes to `note`.
 */
export function interactionActions(companyId, i, onDone, note) {
  const act = async (button, body) => {
    button.disabled = true;
    try {
      await post(`/companies/${companyId}/interactions/${i.id}/actions`, body);
      clear(note);
      await onDone();
    } catch (error) {
      clear(note).append(refusal(error));
      button.disabled = false;
    }
  };
  if (i.status !== "pending") return outcome(i);
  if (CARDS.includes(i.kind)) {
    const options = (i.options || []).map(String);
    if (options.length) {
      return h("div", { class: "options", role: "group", "aria-label": `Answers to ${i.title}` },
        options.map((option) => h("button", {
          type: "button", class: "option", "data-option": option, "aria-label": `${option} (answer to ${i.title})`,
          onclick: (e) => act(e.currentTarget, { action: "answer", answer: option }),
        }, option)));
    }
    const answer = h("input", { type: "text", "aria-label": `Answer to ${i.title}`, maxlength: 20000 });
    const send = h("button", { type: "button", "aria-label": `Answer: ${i.title}` }, "Answer");
    send.addEventListener("click", () => { if (answer.value.trim()) act(send, { action: "answer", answer: answer.value }); });
    answer.addEventListener("keydown", (e) => { if (e.key === "Enter") send.click(); });
    return h("div", { class: "free-answer" }, answer, " ", send);
  }
  const actions = ACTIONS[i.kind] || [];
  const noteBox = i.kind === "approval" ? h("input", { type: "text", "aria-label": `Note on ${i.title}`, placeholder: "A note (optional)", maxlength: 20000 }) : null;
  const body = (action) => (noteBox && noteBox.value.trim() ? { action, note: noteBox.value } : { action });
  // Reject is destructive: styled apart, and a second press confirms it.
  return h("div", { class: "decisions" }, noteBox, actions.map((action) => {
    if (action === "reject") {
      let armed = false;
      const reject = h("button", { type: "button", class: "btn danger", "aria-label": `${LABELS[action]}: ${i.title}` }, LABELS[action]);
      reject.addEventListener("click", () => {
        if (!armed) { armed = true; reject.classList.add("armed"); reject.textContent = "Confirm: reject"; return; }
        act(reject, body(action));
      });
      return reject;
    }
    return h("button", {
      type: "button", class: `btn ${action === "approve" || action === "resolve" ? "primary" : "secondary"}`,
      "aria-label": `${LABELS[action]}: ${i.title}`, onclick: (e) => act(e.currentTarget, body(action)),
    }, LABELS[action]);
  }));
}

/** The issue's cards, approvals, stages and blockers; a pending one can be acted on. */
export function renderInteractions({ companyId, issue }) {
  const base = `/companies/${companyId}`;
  const list = h("ul", { class: "interactions", "aria-label": "Interactions" });
  const note = h("p", { class: "muted", role: "status" });

  function item(i) {
    return h("li", { "data-interaction": i.id, "data-status": i.status, "data-kind": i.kind },
      h("div", { class: "meta" }, statusName(i.kind), " · ", badge(i.status), " · ", when(i.created_at)),
      h("div", { class: "title" }, h("strong", {}, i.title)),
      i.body ? markdown(i.body, { cls: "body" }) : null,
      interactionActions(companyId, i, refresh, note));
  }

  async function refresh() {
    const items = await all(`${base}/issues/${issue.id}/interactions`);
    items.reverse(); // newest first
    if (list.dataset.sig === JSON.stringify(items)) return;
    list.dataset.sig = JSON.stringify(items);
    clear(list).append(...items.map(item));
    if (!items.length) list.append(h("li", { class: "muted" }, "Nothing waits for you."));
  }

  const node = h("section", { class: "panel slot", "aria-label": "Questions and approvals" },
    h("h2", {}, "Questions and approvals"), list, note);
  refresh().catch((error) => clear(note).append(refusal(error)));
  polling(node, async () => {
    // Keep a half-typed answer: redraw only when nothing is focused in the list.
    if (!list.contains(document.activeElement)) await refresh();
  });
  return node;
}
