"""Which acknowledged steers the model has not read, from the run's durable log alone.

The provider acknowledges a steer at once (``steering_acknowledgement``) but
the model reads it only at its next step. Each provider records that step in
its own words, and the log holds them, so no other record is needed:

- an acknowledgement adds its message id, once per id;
- an **input** entering the conversation in the acknowledgement's turn reads
  the oldest unread steer, except the first input of a turn: that is the
  turn's own input (the brief, or a continuation), which a steer can race.
  An input is Codex's ``userMessage`` item (one per steered input), Pi's user
  ``message_end``, and OpenCode's first answer to a queued user message (an
  assistant ``message.updated`` with a ``parentID`` not answered before: the
  user message itself is recorded when it is queued, before it is read);
- a gateway's follow-up run starting (an ``agent.lifecycle`` event, of any
  phase, of the run ``<run>:follow-up:<message id>``) reads exactly that steer;
- any input in a later turn reads every steer acknowledged in an earlier
  turn: that turn's input (a restart continuation, or a fresh retry) carried
  them. So a provider with no read evidence of its own gets a steer at most
  once more, never on every later restart;
- the end of a turn reads them all (Codex ``turn/completed``, Pi
  ``agent_end``, OpenCode ``session.idle``).

Only events a runner delivered count (``source_event_id``), and an input
counts once, by its turn and id: the text a model writes (a tool's output, an
agent message) is never read evidence. An event that cannot be attributed is
skipped, which may deliver a steer twice rather than lose it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from paperclip_hookspecs.steering import STEERING_ACKNOWLEDGEMENT, SteerLogEvent

USER_MESSAGE = "userMessage"
ITEM_COMPLETED = "item/completed"
TURN_COMPLETED = frozenset({"turn/completed", "turn.completed", "agent_end", "session.idle"})
FOLLOW_UP = ":follow-up:"
"""A gateway follow-up's run id: ``<run id>:follow-up:<message id>``."""


@dataclass(slots=True)
class _Ledger:
    unread: list[tuple[str, int]]
    """(message id, turn it was acknowledged in), oldest first."""
    acknowledged: set[str]
    items: set[tuple[int, str]]
    """Inputs already counted, by turn and id (a provider process numbers its items
    itself: the next turn's process may reuse an id)."""
    turns_with_input: set[int]
    answered: dict[str, int]
    """OpenCode: the user messages an answer was seen for, and the turn it was first seen in
    (an older answer updated again later is not a new input)."""

    def acknowledge(self, message_id: str, turn: int) -> None:
        if message_id in self.acknowledged:
            return
        self.acknowledged.add(message_id)
        self.unread.append((message_id, turn))

    def input(self, item_id: str, turn: int, *, reads: bool = True) -> None:
        """An input entered the conversation in ``turn``; ``reads``: it may be a steer."""
        if (turn, item_id) in self.items:
            return
        self.items.add((turn, item_id))
        # Earlier turns' steers rode in on this turn's input.
        self.unread = [(m, t) for m, t in self.unread if t >= turn]
        if turn not in self.turns_with_input:
            self.turns_with_input.add(turn)  # the turn's own input reads no steer of its turn
            return
        if reads and self.unread:
            self.unread.pop(0)

    def answer_started(self, parent_id: str, turn: int) -> None:
        first = self.answered.setdefault(parent_id, turn)
        if first == turn:
            self.input(f"answer:{parent_id}", turn)

    def read(self, message_id: str, turn: int) -> None:
        """The model started on exactly this steer."""
        self.input(f"follow-up:{message_id}", turn, reads=False)
        self.unread = [(m, t) for m, t in self.unread if m != message_id]

    def turn_completed(self) -> None:
        self.unread.clear()


def unread_steered_message_ids(events: Iterable[SteerLogEvent]) -> list[str]:
    """The acknowledged-but-unread steers' message ids, oldest first."""
    ledger = _Ledger([], set(), set(), set(), {})
    for event in sorted(events, key=lambda e: e.seq):
        if not event.source_event_id:
            continue  # not delivered by a runner: never evidence
        payload, turn = event.payload, event.turn
        if event.type == STEERING_ACKNOWLEDGEMENT:
            message_id = payload.get("message_id")
            if isinstance(message_id, str) and message_id:
                ledger.acknowledge(message_id, turn)
        elif event.type == ITEM_COMPLETED:
            item_id = _user_message_id(payload)
            if item_id is not None:
                ledger.input(item_id, turn)
        elif event.type == "message_end":
            if _field(payload, "message", "role") == "user":
                ledger.input(f"pi:{event.seq}", turn)  # Pi's messages have no id
        elif event.type == "message.updated":
            parent = _field(payload, "info", "parentID")
            if _field(payload, "info", "role") == "assistant" and isinstance(parent, str):
                ledger.answer_started(parent, turn)
        elif event.type == "agent.lifecycle":
            _gateway_run_started(ledger, payload, turn)
        elif event.type in TURN_COMPLETED:
            ledger.turn_completed()
    return [message_id for message_id, _ in ledger.unread]


def _gateway_run_started(ledger: _Ledger, payload: Mapping[str, Any], turn: int) -> None:
    # Any phase, not only ``start``: a driver after a restart may hear a run's lifecycle
    # only from its ``model`` phase on (seen with OpenClaw 2026.9.6); each counts once.
    run_id = payload.get("runId")
    if not isinstance(run_id, str) or not run_id:
        return
    if FOLLOW_UP in run_id:
        ledger.read(run_id.rsplit(FOLLOW_UP, 1)[1], turn)
    else:
        ledger.input(f"run:{run_id}", turn, reads=False)  # the turn's own request


def _field(payload: Mapping[str, Any], holder: str, key: str) -> Any:
    value = payload.get(holder)
    return value.get(key) if isinstance(value, Mapping) else None


def _user_message_id(payload: Mapping[str, Any]) -> str | None:
    item = payload.get("item")
    if not isinstance(item, Mapping) or item.get("type") != USER_MESSAGE:
        return None
    item_id = item.get("id")
    return item_id if isinstance(item_id, str) and item_id else None
