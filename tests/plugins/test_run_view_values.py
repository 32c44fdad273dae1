"""The run view's values (``paperclip_hookspecs.runs``): frozen JSON, and its helpers."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import MappingProxyType

import pytest
from paperclip_hookspecs.completion import RunBinding as FromCompletion
from paperclip_hookspecs.completion import WakeSnapshot as SnapshotFromCompletion
from paperclip_hookspecs.runs import (
    RunBinding,
    RunToolCall,
    RunView,
    ToolCallStatus,
    WakeSnapshot,
    frozen_json,
    thawed_json,
)

NOW = datetime.now(UTC)


def test_json_is_frozen_all_the_way_down_and_thaws_back():
    value = {"items": [1, {"a": None, "b": [True, 2.5, "x"]}], "n": 3}
    frozen = frozen_json(value)

    assert isinstance(frozen, MappingProxyType) and frozen == {
        "items": (1, {"a": None, "b": (True, 2.5, "x")}),
        "n": 3,
    }
    with pytest.raises(TypeError):
        frozen["items"][1]["a"] = 1  # type: ignore[index]
    assert thawed_json(frozen) == value
    assert json.loads(json.dumps(thawed_json(frozen))) == value
    with pytest.raises(TypeError, match="not a JSON value"):
        frozen_json({"when": NOW})


def test_a_calls_error_code_and_the_calls_of_one_tool():
    def call(tool: str, result: dict, *, is_error: bool = False) -> RunToolCall:
        return RunToolCall(
            call_id=tool,
            tool=tool,
            arguments=frozen_json({}),  # type: ignore[arg-type]
            status=ToolCallStatus.SETTLED,
            is_error=is_error,
            result=frozen_json(result),  # type: ignore[arg-type]
            created_at=NOW,
        )

    refused = call("finish", {"error": {"code": "tests_not_reported"}}, is_error=True)
    posted = call("post_comment", {"comment_id": "c1"})
    view = RunView(binding=RunBinding("r", "c", "i", "a"), tool_calls=(refused, posted))

    assert (refused.error_code, posted.error_code) == ("tests_not_reported", None)
    assert view.calls_of("finish") == (refused,) and view.calls_of("block") == ()


def test_the_moved_types_are_still_importable_from_completion():
    assert FromCompletion is RunBinding and SnapshotFromCompletion is WakeSnapshot
