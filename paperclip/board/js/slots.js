// Where panels that arrive with later API features plug in, without touching the views:
// a feature module replaces the slot's function (e.g. `slots.issueChat = renderChat`).
// Each takes a context ({companyId, issue | run, turn, agent}) and returns a node.

import { h } from "./dom.js";

function unavailable(title, reason, extra = []) {
  return h("section", { class: "panel slot", "aria-label": title },
    h("h2", {}, title), h("p", { class: "muted" }, reason), extra);
}

export const slots = {
  /** The agent chat about an issue. */
  issueChat: () => unavailable("Chat", "Chat with the agent is not offered by this server's API yet."),
  /** Questions, confirmations and approvals the agent raised (cards). */
  issueInteractions: () => unavailable("Questions and approvals", "This server's API has no interaction cards yet."),
  /** A steer box on a running turn: disabled, with the reason, where steering is not possible. */
  turnSteer: ({ run, agent, turn }) => {
    const can = agent.capabilities;
    let reason = "Steering is not offered by this server's API yet.";
    if (!can) reason = `The ${run.provider} provider is not installed here.`;
    else if (!can.steer && !can.follow_up) reason = `The ${run.provider} provider cannot steer a running turn.`;
    else if (!turn) reason = "No turn is running.";
    const box = h("textarea", { id: "steer-text", rows: 2, disabled: true, "aria-describedby": "steer-reason" });
    return h("section", { class: "panel slot", "aria-label": "Steer" },
      h("h2", {}, "Steer"),
      h("label", { for: "steer-text" }, "Message to the running turn"), box,
      h("button", { type: "button", disabled: true }, "Steer"),
      h("p", { id: "steer-reason", class: "muted" }, reason));
  },
};
