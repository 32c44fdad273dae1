"""Seed 000: a completion refusal reaches the model, and the run's record, bounded.

A guard plugin may write anything; what the finish tool returns to the model
(its code, reason, message and correction) and what a run that a guard
refuses at the end records (``error_code``, ``error_message``) are cut to
their bounds, so a wordy guard costs the model a few hundred words at most and
never makes the end of a turn fail to commit. The real engine on a real
PostgreSQL, driven by an in-memory runner peer.
"""

from __future__ import annotations

import json

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.completion import (
    CompletionCheck,
    CompletionCorrection,
    CompletionRefusal,
    CompletionStage,
)

from paperclip.engine.context.completion import MAX_CODE_CHARS, MAX_CORRECTION_CHARS
from tests.engine.memory_world import call, finished, started

HUGE = 50_000


class WordyGuard:
    """Refuses at one stage with texts far past every bound."""

    def __init__(self, stage: CompletionStage) -> None:
        self.stage = stage

    @hookimpl
    def paperclip_check_completion(self, check: CompletionCheck) -> CompletionRefusal | None:
        if check.stage is not self.stage:
            return None
        return CompletionRefusal(
            code="c" * HUGE,
            reason="r" * HUGE,
            message="m" * HUGE,
            correction=CompletionCorrection(
                instruction="i" * HUGE, message="n" * HUGE, cursor="k" * HUGE
            ),
        )


async def first_turn(world):
    peer, _ = await world.connect(await world.new_runner())
    await world.assign()
    return peer, await started(peer)


async def test_the_finish_tool_returns_a_wordy_refusal_cut_to_its_bounds(
    world, paperclip_register_plugin
):
    paperclip_register_plugin(WordyGuard(CompletionStage.FEEDBACK), name="wordy-guard")
    peer, start = await first_turn(world)
    result = await call(peer, start, "finish", outcome="done", summary="ok")
    assert result.is_error
    error = result.content["error"]
    assert error == {
        "code": "c" * MAX_CODE_CHARS,
        "reason": "r" * MAX_CODE_CHARS,
        "message": "m" * MAX_CORRECTION_CHARS,
        "correction": {
            "instruction": "i" * MAX_CODE_CHARS,
            "message": "n" * MAX_CORRECTION_CHARS,
            "cursor": None,  # no reader cursor is that long: it could not continue a read
            "restart": False,
        },
    }
    assert len(json.dumps(result.content)) < 3 * MAX_CORRECTION_CHARS


async def test_a_wordy_refusal_at_the_end_fails_the_run_with_a_bounded_record(
    world, paperclip_register_plugin
):
    paperclip_register_plugin(WordyGuard(CompletionStage.TERMINAL), name="wordy-guard")
    peer, start = await first_turn(world)
    accepted = await call(peer, start, "finish", outcome="done", summary="ok")
    assert not accepted.is_error, accepted.content
    peer.send(finished(start, answer="Done."))
    run = await world.until_ended(start.run_id)
    assert run.status == "failed"
    assert run.error_code == "c" * MAX_CODE_CHARS
    assert run.error_message == "m" * MAX_CORRECTION_CHARS
