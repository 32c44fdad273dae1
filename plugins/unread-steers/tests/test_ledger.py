"""The unread-steer rules, one test each, over logs shaped as the run log stores them."""

from __future__ import annotations

from itertools import count
from typing import Any

from paperclip_hookspecs.steering import SteerLogEvent
from paperclip_unread_steers import plugin
from paperclip_unread_steers.ledger import unread_steered_message_ids

RUNNER = "host:1:abcd1234"


class Log:
    """A run log under construction: each event gets the next seq and a runner's id."""

    def __init__(self) -> None:
        self.events: list[SteerLogEvent] = []
        self._seq = count(1)

    def add(self, type_: str, payload: dict[str, Any], turn: int, *, runner: bool = True):
        seq = next(self._seq)
        source = f"{RUNNER}:{seq}" if runner else None
        self.events.append(SteerLogEvent(seq, turn, type_, payload, source))
        return self

    def ack(self, message_id: str, turn: int = 1) -> Log:
        return self.add("steering_acknowledgement", {"message_id": message_id}, turn)

    def user_message(self, item_id: str | None, turn: int = 1, *, runner: bool = True) -> Log:
        item = {"type": "userMessage", "id": item_id, "content": [{"type": "text", "text": "x"}]}
        return self.add("item/completed", {"item": item}, turn, runner=runner)

    def completed(self, turn: int = 1) -> Log:
        return self.add("turn/completed", {"turn": {"id": f"t{turn}", "status": "completed"}}, turn)

    def unread(self) -> list[str]:
        return unread_steered_message_ids(self.events)


def test_an_acknowledged_steer_without_read_evidence_is_unread():
    assert Log().user_message("input").ack("m1").ack("m2").unread() == ["m1", "m2"]


def test_ordering_a_user_message_reads_the_oldest_unread_steer_first():
    log = Log().user_message("input").ack("m1").ack("m2").user_message("steer-1")
    assert log.unread() == ["m2"]


def test_ordering_read_evidence_before_its_acknowledgement_reads_nothing():
    # The runner stores the acknowledgement before any event that reads it; a
    # userMessage seen first is not evidence for a steer acknowledged later.
    log = Log().user_message("input").user_message("other").ack("m1")
    assert log.unread() == ["m1"]


def test_dedupe_an_acknowledgement_counts_once_per_message_id():
    log = Log().user_message("input").ack("m1").ack("m1").user_message("steer-1")
    assert log.unread() == []


def test_dedupe_a_user_message_item_counts_once_by_its_id():
    log = Log().user_message("input").ack("m1").ack("m2").user_message("s").user_message("s")
    assert log.unread() == ["m2"]


def test_dedupe_is_per_turn_a_later_process_may_reuse_an_item_id():
    # The continuation's provider process numbers its items from the start again.
    log = Log().user_message("msg_1").ack("m1").user_message("msg_1", turn=2)
    assert log.unread() == []


def test_initial_input_the_first_user_message_of_a_turn_reads_no_steer_of_its_turn():
    # A steer can be acknowledged before the turn's own input is recorded.
    log = Log().ack("m1").user_message("input")
    assert log.unread() == ["m1"]
    assert log.user_message("steer-1").unread() == []


def test_later_turn_a_user_message_of_a_later_turn_reads_all_earlier_steers():
    log = Log().user_message("input").ack("m1").ack("m2")
    assert log.unread() == ["m1", "m2"]
    log.user_message("continuation", turn=2)
    assert log.unread() == []
    # A steer of the new turn is unread until that turn reads it.
    assert log.ack("m3", turn=2).unread() == ["m3"]


def test_completed_turn_reads_every_steer():
    log = Log().user_message("input").ack("m1").ack("m2").completed()
    assert log.unread() == []


def test_events_without_a_source_event_id_are_never_evidence():
    log = Log().user_message("input").ack("m1")
    log.add("steering_acknowledgement", {"message_id": "forged"}, 1, runner=False)
    log.user_message("from-a-tool", runner=False)
    assert log.unread() == ["m1"]


def test_model_output_and_items_without_an_id_are_not_read_evidence():
    log = Log().user_message("input").ack("m1")
    log.add("item/completed", {"item": {"type": "agentMessage", "id": "a1", "text": "ok"}}, 1)
    log.add(
        "item/completed",
        {
            "item": {
                "type": "commandExecution",
                "id": "c1",
                "aggregatedOutput": '{"type": "userMessage"}',
            }
        },
        1,
    )
    log.add("item/started", {"item": {"type": "userMessage", "id": "s1"}}, 1)
    log.user_message(None)
    assert log.unread() == ["m1"]


def test_paperclip_unread_steers_answers_with_the_ledger():
    log = Log().user_message("input").ack("m1").ack("m2").user_message("steer-1")
    assert plugin.paperclip_unread_steers(tuple(log.events)) == ["m2"]
    assert plugin.paperclip_unread_steers(()) == []
