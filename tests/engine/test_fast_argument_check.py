"""The tool path's compiled argument check agrees with jsonschema, which the two-step path keeps.

A call the compiled check passes is recorded at once; one it fails takes the
two-step path, where jsonschema says what is wrong. Were they to disagree, a
call jsonschema refuses could be recorded, or one it accepts refused twice.
"""

from __future__ import annotations

import pytest

from paperclip.engine.calls.executor import validator
from paperclip.engine.calls.recorded import checker
from paperclip.wire.tools import BY_NAME

ARGUMENTS = [
    {},
    {"summary": "halfway"},
    {"summary": ""},
    {"summary": 3},
    {"summary": None},
    {"summary": "é" * 2_000},
    {"summary": "😀" * 2_000},  # 2,000 characters, 8,000 bytes: within maxLength
    {"summary": "😀" * 2_001},
    {"summary": "halfway", "command_id": "note-1"},
    {"summary": "halfway", "command_id": ""},
    {"summary": "halfway", "unknown": True},
    {"body": "a comment"},
    {"outcome": "done", "summary": "ok"},
    {"outcome": "maybe", "summary": "ok"},
    {"page": 2},
    {"page": 0},
    {"page": 1.5},
    [],
    "summary",
]


@pytest.mark.parametrize("tool", sorted(BY_NAME))
def test_the_compiled_check_and_jsonschema_agree_on_every_tool(tool):
    for arguments in ARGUMENTS:
        assert checker(tool).is_valid(arguments) == validator(tool).is_valid(arguments), arguments
