// The agent chat and the interaction cards of an issue, over the public API (docs/chat.md).
// Both panels poll while they are on the page; a request that fails says why and retries.

import { all, get, keyFor, post, q } from "./api.js";
import { clear, field, h } from "./dom.js";

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
    clear(state).append(conversation ? conversation.state : "no chat");
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
      clear(list).append(...messages.map((m) => h("li", { "data-role": m.role, "data-message": m.id },
        h("div", { class: "meta" }, m.role === "agent" ? "agent" : "you", m.delivery === "steer" ? " · steered" : ""),
        h("div", { class: "body" }, m.body))));
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
  question: ["answer"],
  confirmation: ["answer"],
  approval: ["approve", "reject", "request_revision"],
  execution_stage: ["resolve"],
  dependency: ["resolve"],
};
const LABELS = { answer: "Answer", approve: "Approve", reject: "Reject", request_revision: "Request revision", resolve: "Resolve" };

/** The issue's cards, approvals, stages and blockers; a pending one can be acted on. */
export function renderInteractions({ companyId, issue }) {
  const base = `/companies/${companyId}`;
  const list = h("ul", { class: "interactions", "aria-label": "Interactions" });
  const note = h("p", { class: "muted", role: "status" });

  function item(i) {
    const actions = i.status === "pending" ? ACTIONS[i.kind] || [] : [];
    const answer = h("input", { type: "text", "aria-label": `Answer to ${i.title}` });
    const buttons = actions.map((action) => h("button", {
      type: "button",
      "aria-label": `${LABELS[action]}: ${i.title}`,
      onclick: async () => {
        try {
          await post(`${base}/interactions/${i.id}/actions`, action === "answer" ? { action, answer: answer.value } : { action });
          clear(note);
          await refresh();
        } catch (error) {
          clear(note).append(refusal(error));
        }
      },
    }, LABELS[action]));
    return h("li", { "data-interaction": i.id, "data-status": i.status },
      h("div", { class: "meta" }, i.kind, " · ", h("span", { class: "badge" }, i.status)),
      h("div", { class: "body" }, i.title),
      actions.includes("answer") ? answer : null,
      buttons);
  }

  async function refresh() {
    const items = await all(`${base}/issues/${issue.id}/interactions`);
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
