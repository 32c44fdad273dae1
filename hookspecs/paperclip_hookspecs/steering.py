"""Unread steers: which acknowledged steers a restart continuation must carry (hook API 1.6).

Part of the recovery-policy family. A person may steer a running turn; the
provider acknowledges the steer at once, but the model reads it only at its
next step. A restart in that window kills the provider with the message in
memory. The run's durable log is the record of both facts (the
``steering_acknowledgement`` event, and the provider's own record of the
input entering the conversation), so a policy can tell, from the log alone,
which acknowledged steers the model never read. The restart continuation
then carries exactly those, once.

The control plane calls ``paperclip_unread_steers`` only when it builds a
restart continuation, with the run's log events of the types in
:data:`STEER_EVIDENCE_TYPES`, in log order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from paperclip_hookspecs._markers import hookspec

STEERING_ACKNOWLEDGEMENT = "steering_acknowledgement"
"""The run event the control plane stores when the provider accepted a steer; its
payload is ``{"message_id": ...}``."""

STEER_EVIDENCE_TYPES: frozenset[str] = frozenset(
    {
        STEERING_ACKNOWLEDGEMENT,
        # Codex: a userMessage item; the end of a turn.
        "item/completed",
        "turn/completed",
        "turn.completed",
        # Pi: a user message entering the conversation; the end of the agent's run.
        "message_end",
        "agent_end",
        # OpenCode: an answer to a (queued) user message starting; the session idle.
        "message.updated",
        "session.idle",
        # A gateway: a run (the turn's, or a follow-up's) starting.
        "agent.lifecycle",
    }
)
"""The run event types the control plane hands to ``paperclip_unread_steers``: the
acknowledgement, and each provider's events that can be read evidence (an input
entering the conversation, the model starting on it, the end of a turn)."""


@dataclass(frozen=True, slots=True)
class SteerLogEvent:
    """One event of a run's durable log, as a steer policy reads it."""

    seq: int
    """Its position in the run's log (1, 2, 3, ...)."""
    turn: int
    """The run's turn it was stored in."""
    type: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    source_event_id: str | None = None
    """The transport's id of the event (``<runner instance>:<its seq>``) when a runner
    delivered it over the runner protocol; None for events the control plane wrote for
    the model (a tool's output): those are never read evidence."""


@hookspec(firstresult=True)
def paperclip_unread_steers(
    events: Sequence[SteerLogEvent],
) -> Sequence[str] | None:
    """The message ids of acknowledged steers the model has not read, oldest first.

    ``events`` is the run's log, in order, restricted to
    :data:`STEER_EVIDENCE_TYPES`. Return the ids (each at most once), or None to
    let the next plugin answer. Without any answer the continuation carries no
    steered message.

    Called only when a restart continuation is built, never on the live path.
    """
