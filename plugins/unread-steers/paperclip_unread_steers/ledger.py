"""Which acknowledged steers the model has not read, from the run's durable log alone.

The provider acknowledges a steer at once (``steering_acknowledgement``) but
the model reads it only at its next step, when the provider records the input
as a ``userMessage`` item of the conversation (Codex does, one item per
steered input). The log holds both facts, so no other record is needed:

- an acknowledgement adds its message id, once per id;
- a ``userMessage`` item in the acknowledgement's turn reads the oldest unread
  steer, except the first ``userMessage`` of a turn: that is the turn's own
  input (the brief, or a continuation), which a steer can race;
- a ``userMessage`` item in a later turn reads every steer acknowledged in an
  earlier turn: that turn's input (a restart continuation) carried them;
- ``turn/completed`` reads them all.

Only events a runner delivered count (``source_event_id``), and an item counts
once, by its turn and id: the text a model writes (a tool's output, an agent
message) is never read evidence. An event that cannot be attributed is
skipped, which may deliver a steer twice rather than lose it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from paperclip_hookspecs.steering import STEERING_ACKNOWLEDGEMENT, SteerLogEvent

USER_MESSAGE = "userMessage"
ITEM_COMPLETED = "item/completed"
TURN_COMPLETED = frozenset({"turn/completed", "turn.completed"})


@dataclass(slots=True)
class _Ledger:
    unread: list[tuple[str, int]]
    """(message id, turn it was acknowledged in), oldest first."""
    acknowledged: set[str]
    items: set[tuple[int, str]]
    """``userMessage`` items already counted, by turn and item id (a provider process
    numbers its items itself: the next turn's process may reuse an id)."""
    turns_with_input: set[int]

    def acknowledge(self, message_id: str, turn: int) -> None:
        if message_id in self.acknowledged:
            return
        self.acknowledged.add(message_id)
        self.unread.append((message_id, turn))

    def user_message(self, item_id: str, turn: int) -> None:
        if (turn, item_id) in self.items:
            return
        self.items.add((turn, item_id))
        # Earlier turns' steers rode in on this turn's input.
        self.unread = [(m, t) for m, t in self.unread if t >= turn]
        if turn not in self.turns_with_input:
            self.turns_with_input.add(turn)  # the turn's own input reads no steer of its turn
            return
        if self.unread:
            self.unread.pop(0)

    def turn_completed(self) -> None:
        self.unread.clear()


def unread_steered_message_ids(events: Iterable[SteerLogEvent]) -> list[str]:
    """The acknowledged-but-unread steers' message ids, oldest first."""
    ledger = _Ledger([], set(), set(), set())
    for event in sorted(events, key=lambda e: e.seq):
        if not event.source_event_id:
            continue  # not delivered by a runner: never evidence
        if event.type == STEERING_ACKNOWLEDGEMENT:
            message_id = event.payload.get("message_id")
            if isinstance(message_id, str) and message_id:
                ledger.acknowledge(message_id, event.turn)
        elif event.type == ITEM_COMPLETED:
            item_id = _user_message_id(event.payload)
            if item_id is not None:
                ledger.user_message(item_id, event.turn)
        elif event.type in TURN_COMPLETED:
            ledger.turn_completed()
    return [message_id for message_id, _ in ledger.unread]


def _user_message_id(payload: Mapping[str, Any]) -> str | None:
    item = payload.get("item")
    if not isinstance(item, Mapping) or item.get("type") != USER_MESSAGE:
        return None
    item_id = item.get("id")
    return item_id if isinstance(item_id, str) and item_id else None
