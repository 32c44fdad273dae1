"""``paperclipTurnContext`` v1 (``paperclip_build_turn_context``)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.prompts import (
    AssignmentOwnership,
    CommentSource,
    EventsOwnership,
    RenderLimits,
    TaskSource,
    TurnContext,
    WakeSource,
)

from paperclip.prompts.sources import normalize_task, normalize_wake
from paperclip.prompts.wire import turn_context_from_wire, turn_context_to_wire

from .support import ISSUE, make_comment, make_task


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def wire_for(task: TaskSource, *comments: CommentSource, hooks: Any) -> dict[str, Any]:
    task = normalize_task(task)
    wake = normalize_wake(WakeSource("comment", comments), task, RenderLimits())
    return turn_context_to_wire(hooks.build_turn_context(task, wake))


TURN_CONTEXT_RULES = [
    (
        "v1 shape: task markdown owns the description, the wake prompt the comments",
        make_task(description="  Do it.\r\n"),
        (make_comment("c-1", " First "),),
        {
            "version": 1,
            "assignment": {
                "owner": "task_markdown",
                "description": {"id": ISSUE, "revision": sha("Do it.")},
            },
            "events": {"owner": "wake_prompt", "comments": [{"id": "c-1", "revision": sha("First")}]},
        },
    ),
    (
        "distinct comment ids stay distinct when bodies match",
        make_task(description="D"),
        (make_comment("c-1", "LGTM"), make_comment("c-2", " LGTM ")),
        {
            "version": 1,
            "assignment": {"owner": "task_markdown", "description": {"id": ISSUE, "revision": sha("D")}},
            "events": {
                "owner": "wake_prompt",
                "comments": [{"id": "c-1", "revision": sha("LGTM")}, {"id": "c-2", "revision": sha("LGTM")}],
            },
        },
    ),
    (
        "a deleted comment has no owner and an empty description is no source",
        make_task(description=""),
        (make_comment("c-1", "gone", deleted=True), make_comment("c-2", "kept")),
        {
            "version": 1,
            "assignment": {"owner": "task_markdown"},
            "events": {"owner": "wake_prompt", "comments": [{"id": "c-2", "revision": sha("kept")}]},
        },
    ),
    (
        "the revision hashes the sanitized text",
        make_task(description="a\u202eb"),
        (make_comment("c-1", "x\r\ny\x00"),),
        {
            "version": 1,
            "assignment": {"owner": "task_markdown", "description": {"id": ISSUE, "revision": sha("ab")}},
            "events": {"owner": "wake_prompt", "comments": [{"id": "c-1", "revision": sha("x\ny")}]},
        },
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("task", "comments", "expected"),
    [r[1:] for r in TURN_CONTEXT_RULES],
    ids=[r[0] for r in TURN_CONTEXT_RULES],
)
def test_paperclip_build_turn_context_turn_context_v1_rules(
    task: TaskSource, comments: tuple[CommentSource, ...], expected: dict[str, Any], hooks: Any
) -> None:
    wire = wire_for(task, *comments, hooks=hooks)
    assert wire == expected
    assert turn_context_to_wire(turn_context_from_wire(wire)) == wire  # type: ignore[arg-type]


MISSING_METADATA = [
    ("absent", None),
    ("unknown version", {"version": 2, "assignment": {"owner": "task_markdown"},
                         "events": {"owner": "wake_prompt", "comments": []}}),
    ("events owned by something else", {"version": 1, "assignment": {"owner": "task_markdown"},
                                        "events": {"owner": "other", "comments": []}}),
    ("malformed comment reference", {"version": 1, "assignment": {"owner": "task_markdown"},
                                     "events": {"owner": "wake_prompt", "comments": [{"id": 1}]}}),
    ("not an object", "Previously delivered context"),
]  # fmt: skip


@pytest.mark.parametrize(
    "value", [r[1] for r in MISSING_METADATA], ids=[r[0] for r in MISSING_METADATA]
)
def test_missing_or_unknown_turn_context_falls_back_to_legacy(value: Any) -> None:
    assert turn_context_from_wire(value) is None


def test_paperclip_build_turn_context_a_plugin_may_build_it(
    hooks: Any, paperclip_register_plugin: Any
) -> None:
    class NoDescription:
        @hookimpl
        def paperclip_build_turn_context(self, task: TaskSource, wake: WakeSource) -> TurnContext:
            return TurnContext(AssignmentOwnership(None), EventsOwnership(()))

    paperclip_register_plugin(NoDescription())
    built = hooks.build_turn_context(make_task(), WakeSource("comment"))
    assert built.assignment.description is None
