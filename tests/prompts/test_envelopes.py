"""Versioned envelopes: v5/v3 written, v4/v2 still read, and the rollback order."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from paperclip_hookspecs.prompts import (
    CommentTrust,
    CompletionReference,
    ContinuationMessage,
    Lane,
    SessionAttempt,
    SourceKind,
    WakeSource,
)

from paperclip.prompts import (
    EXECUTION_INPUT_V4,
    EXECUTION_INPUT_V5,
    MODEL_ENVELOPE_V2,
    MODEL_ENVELOPE_V3,
    AssemblyRequest,
    UnknownSchemaError,
    assemble_execution_input,
    build_continuation,
    read_execution_input,
    read_model_envelope,
    validate_completion,
)
from paperclip.revisions import revision
from tests.prompts.support import BUILTIN

from .support import ISSUE, make_comment, make_task

ROOT = Path(__file__).resolve().parents[2]
V4_RUN = Path(__file__).with_name("data") / "execution_input_v4.json"

TASK = make_task()
COMMENT = make_comment("c-1", "Start with the login form.")
WAKE = WakeSource("comment", (COMMENT,))
DELTA = (ContinuationMessage("c-1", ISSUE, COMMENT.body, None, CommentTrust.TRUSTED),)


def request(**changes: Any) -> AssemblyRequest:
    base = AssemblyRequest(TASK, WAKE, Lane.NATIVE, SessionAttempt.RESUMED, run_id="run-1")
    return replace(base, resume_delta=DELTA, **changes)


def roundtrip(envelope: dict[str, Any]) -> dict[str, Any]:
    """What the database gives back: plain JSON."""
    return json.loads(json.dumps(envelope))


def check_v5(envelope: dict[str, Any]) -> None:
    assert envelope["schema"] == EXECUTION_INPUT_V5
    assert envelope["modelEnvelope"]["schema"] == MODEL_ENVELOPE_V3
    assert envelope["paperclipTurnContext"]["events"]["comments"] == [
        {"id": "c-1", "revision": revision(COMMENT.body)}
    ]
    assert envelope["executionContinuation"]["objectiveSource"]["id"] == "c-1"
    assert envelope["modelEnvelope"]["renderedSources"]


def check_v4(envelope: dict[str, Any]) -> None:
    assert envelope["schema"] == EXECUTION_INPUT_V4
    assert envelope["modelEnvelope"]["schema"] == MODEL_ENVELOPE_V2
    assert "paperclipTurnContext" not in envelope
    assert "objectiveSource" not in envelope["executionContinuation"]
    assert "renderedSources" not in envelope["modelEnvelope"]


def check_readers_roundtrip(envelope: dict[str, Any]) -> None:
    for ownership in (True, False):
        result = assemble_execution_input(request(ownership=ownership), BUILTIN)
        assert read_execution_input(roundtrip(result.envelope)) == result.execution_input


def check_unknown_schema(envelope: dict[str, Any]) -> None:
    with pytest.raises(UnknownSchemaError, match=r"v6"):
        read_execution_input({**envelope, "schema": "paperclip.native-execution-input.v6"})
    with pytest.raises(UnknownSchemaError, match=r"v9"):
        read_model_envelope({"schema": "paperclip.native-model-envelope.v9", "prompt": ""})


def check_corrupt_turn_context(envelope: dict[str, Any]) -> None:
    damaged = {**envelope, "paperclipTurnContext": {"version": 7}}
    value = read_execution_input(roundtrip(damaged))
    assert value.turn_context is None and not value.owned


VERSIONED_ENVELOPE_RULES = [
    ("ownership on writes v5 with v3, the turn context and objectiveSource", True, check_v5),
    ("ownership off writes v4 with v2 and no ownership metadata", False, check_v4),
    ("readers give back the same typed value for v5 and v4", True, check_readers_roundtrip),
    ("an unknown schema is refused by name", True, check_unknown_schema),
    ("unreadable ownership metadata reads as missing: legacy", True, check_corrupt_turn_context),
]


@pytest.mark.parametrize(
    ("ownership", "check"),
    [r[1:] for r in VERSIONED_ENVELOPE_RULES],
    ids=[r[0] for r in VERSIONED_ENVELOPE_RULES],
)
def test_versioned_envelope_rules(ownership: bool, check: Any) -> None:
    check(roundtrip(assemble_execution_input(request(ownership=ownership), BUILTIN).envelope))


def test_a_run_persisted_as_v4_before_the_upgrade_resumes() -> None:
    stored = json.loads(V4_RUN.read_text())
    previous = read_execution_input(stored)
    assert previous.schema == EXECUTION_INPUT_V4 and previous.turn_context is None

    # The upgraded producer (ownership on) resumes the pinned v4 session as v4.
    resumed = assemble_execution_input(
        AssemblyRequest(
            previous.task,
            previous.wake,
            previous.lane,
            SessionAttempt.RESUMED,
            run_id=previous.run_id,
            provider=previous.provider,
            previous=previous,
        ),
        BUILTIN,
    )
    check_v4(roundtrip(resumed.envelope))
    prompt = resumed.prompt
    assert "## Paperclip continuation" in prompt  # restored from the persisted continuation
    assert "As recorded for this continuation" in prompt  # older envelope: full objective
    assert "### Latest wake comment" in prompt  # legacy wake behaviour: no ownership metadata
    assert "- Description: unchanged since your brief" in prompt
    check = validate_completion(
        resumed.execution_input, (CompletionReference(SourceKind.TASK, ISSUE),), BUILTIN
    )
    assert check.ok


def test_v5_data_survives_a_rollback_of_the_producer() -> None:
    """Rollback: readers for v5/v3 stay, then new ownership production stops."""
    before = assemble_execution_input(request(), BUILTIN)
    stored = roundtrip(before.envelope)
    reference = CompletionReference(SourceKind.COMMENT, "c-1", revision(COMMENT.body))

    # The rolled-back producer still reads the active v5 session and its completion context.
    active = read_execution_input(stored)
    assert active == before.execution_input
    assert validate_completion(active, (reference,), BUILTIN).ok

    # The active session keeps its schema until its run ends ...
    resumed = assemble_execution_input(request(ownership=False, previous=active), BUILTIN)
    check_v5(roundtrip(resumed.envelope))
    # ... while new sessions return to v4 and legacy wake rendering.
    new = assemble_execution_input(
        AssemblyRequest(TASK, WAKE, Lane.NATIVE, SessionAttempt.FRESH, ownership=False), BUILTIN
    )
    assert new.schema == EXECUTION_INPUT_V4 and new.execution_input.turn_context is None
    assert "### Latest wake comment" in new.prompt
    assert stored == roundtrip(before.envelope)  # nothing rewrote the persisted data


def test_the_rollback_order_is_documented() -> None:
    text = " ".join((ROOT / "docs" / "prompts.md").read_text().split())
    steps = [
        "restore reader support for active v5/v3 sessions",
        "disable new ownership metadata production",
        "return automatic lanes to legacy wake rendering",
    ]
    positions = [text.index(step) for step in steps]
    assert positions == sorted(positions)
    for forbidden in ("delete checkpoints", "invalidate active session pins", "replay external"):
        assert forbidden in text  # listed among what a rollback must not do


def test_build_continuation_for_v4_sessions_drops_the_objective_source() -> None:
    continuation = build_continuation(TASK, DELTA, (COMMENT,))
    assert continuation.objective_source is not None
    result = assemble_execution_input(request(ownership=False, continuation=continuation), BUILTIN)
    assert result.execution_input.continuation is not None
    assert result.execution_input.continuation.objective_source is None
