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


# Each provider's own read evidence, and a steer across two restarts (read exactly once).


def pi_user(log: Log, turn: int) -> Log:
    message = {"role": "user", "content": [{"type": "text", "text": "x"}], "timestamp": 1}
    return log.add("message_end", {"type": "message_end", "message": message}, turn)


def opencode_prompt(log: Log, user_id: str, turn: int) -> Log:
    """OpenCode records a user message when it is queued: that is not a read."""
    info = {"id": user_id, "role": "user", "sessionID": "ses_1"}
    return log.add("message.updated", {"sessionID": "ses_1", "info": info}, turn)


def opencode_answer(log: Log, parent_id: str, turn: int) -> Log:
    """The model starts answering a user message (sent again with every update)."""
    info = {"id": f"a-{parent_id}", "role": "assistant", "parentID": parent_id}
    return log.add("message.updated", {"sessionID": "ses_1", "info": info}, turn)


def gateway_start(log: Log, run_id: str, turn: int) -> Log:
    payload = {"runId": run_id, "stream": "lifecycle", "data": {"phase": "start"}}
    return log.add("agent.lifecycle", payload, turn)


def test_pi_a_user_message_after_the_prompt_reads_the_steer_and_agent_end_reads_all():
    log = pi_user(Log(), 1).ack("m1").ack("m2")
    assert log.unread() == ["m1", "m2"]
    assert pi_user(log, 1).unread() == ["m2"]
    assert log.add("agent_end", {"type": "agent_end", "messages": []}, 1).unread() == []


def test_pi_an_unread_steer_is_carried_by_the_next_restart_only():
    log = pi_user(Log(), 1).ack("m1")
    assert log.unread() == ["m1"]  # the first restart's continuation carries it
    pi_user(log, 2)  # the continuation's input entered the conversation
    assert log.unread() == []  # the second restart carries nothing


def test_opencode_a_queued_steer_is_read_when_its_answer_starts_not_when_queued():
    log = opencode_prompt(Log(), "msg_prompt", 1)
    opencode_answer(log, "msg_prompt", 1)
    opencode_prompt(log, "msg_steer", 1).ack("m1")
    opencode_answer(log, "msg_prompt", 1)  # the prompt's answer, updated again
    assert log.unread() == ["m1"]
    assert opencode_answer(log, "msg_steer", 1).unread() == []


def test_opencode_an_unread_steer_is_carried_by_the_next_restart_only():
    log = opencode_answer(opencode_prompt(Log(), "msg_1", 1), "msg_1", 1)
    opencode_prompt(log, "msg_2", 1).ack("m1")
    assert log.unread() == ["m1"]
    opencode_answer(log, "msg_1", 2)  # an older answer updated again: not this turn's input
    assert log.unread() == ["m1"]
    opencode_answer(opencode_prompt(log, "msg_3", 2), "msg_3", 2)
    assert log.unread() == []
    assert log.ack("m2", turn=2).add("session.idle", {"sessionID": "ses_1"}, 2).unread() == []


def test_gateway_a_follow_up_is_read_when_its_run_starts():
    log = gateway_start(Log(), "run-1", 1).ack("m1").ack("m2")
    gateway_start(log, "run-1", 1)  # the turn's own run again (a reconnect): reads nothing
    assert log.unread() == ["m1", "m2"]
    assert gateway_start(log, "run-1:follow-up:m2", 1).unread() == ["m1"]


def test_gateway_an_unread_follow_up_is_carried_by_the_next_restart_only():
    log = gateway_start(Log(), "run-1", 1).ack("m1")
    assert log.unread() == ["m1"]
    gateway_start(log, "run-1:turn-2", 2)
    assert log.unread() == []


def test_gateway_a_run_heard_only_from_its_model_phase_has_started():
    """After a restart OpenClaw's ``start`` may not reach the driver: a later phase counts."""
    log = gateway_start(Log(), "run-1", 1).ack("m1")
    model = {"runId": "run-1:turn:abc", "stream": "lifecycle", "data": {"phase": "model"}}
    log.add("agent.lifecycle", model, 2)
    assert log.unread() == []
    follow_up = {"runId": "run-1:follow-up:m2", "stream": "lifecycle", "data": {"phase": "model"}}
    log.ack("m2", 2).add("agent.lifecycle", follow_up, 2)
    assert log.unread() == []
