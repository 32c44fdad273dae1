// Where panels that arrive with later API features plug in, without touching the views:
// a feature module replaces the slot's function (e.g. `slots.issueChat = renderChat`).
// Each takes a context ({companyId, issue | run, turn, agent}) and returns a node.

import { post } from "./api.js";
import { renderChat, renderInteractions } from "./chat.js";
import { clear, h } from "./dom.js";

export const slots = {
  /** The agent chat about an issue (docs/chat.md). */
  issueChat: renderChat,
  /** Questions, confirmations and approvals the agent raised (cards), stages and blockers. */
  issueInteractions: renderInteractions,
  /** A steer box on a running turn: a comment on the run's issue, steered into the turn.
   * It stays while the run page refreshes (`node.update(ctx)`), so typing is never lost. */
  turnSteer: (ctx) => {
    let current = ctx;
    let sending = false;
    let note = "";
    const box = h("textarea", { id: "steer-text", rows: 2, "aria-describedby": "steer-reason" });
    const button = h("button", { type: "button" }, "Steer");
    const reason = h("p", { id: "steer-reason", class: "muted", role: "status" });
    function blocked() {
      const { run, agent, turn } = current;
      const can = agent.capabilities;
      if (!can) return `The ${run.provider} provider is not installed here.`;
      if (!can.steer && !can.follow_up) return `The ${run.provider} provider cannot steer a running turn.`;
      if (!run.issue_id) return "This run has no issue to comment on.";
      if (!turn) return "No turn is running.";
      return null;
    }
    function render() {
      const why = blocked();
      box.disabled = button.disabled = Boolean(why) || sending;
      const how = current.agent.capabilities?.steer
        ? "Goes into the running turn."
        : "Queued after the running step (a follow-up).";
      clear(reason).append(why || note || how);
    }
    button.addEventListener("click", async () => {
      const text = box.value.trim();
      if (!text) return;
      const { companyId, run } = current;
      sending = true;
      render();
      try {
        const comment = await post(`/companies/${companyId}/issues/${run.issue_id}/comments`, { body: text });
        const sent = await post(`/companies/${companyId}/runs/${run.id}/steer`, { comment_id: comment.id });
        note = sent.delivery === "steer"
          ? `Steered into turn ${sent.turn}.`
          : `Queued as a follow-up in turn ${sent.turn}.`;
        box.value = "";
      } catch (error) {
        note = `Refused (${error.code || error.status}): ${error.message}`;
      }
      sending = false;
      render();
    });
    const node = h("section", { class: "panel slot", "aria-label": "Steer" },
      h("h2", {}, "Steer"),
      h("label", { for: "steer-text" }, "Message to the running turn"), box, button, reason);
    node.update = (next) => { current = next; render(); };
    render();
    return node;
  },
};
