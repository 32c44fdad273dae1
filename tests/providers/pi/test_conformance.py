"""The fake Pi agrees with the real Pi on what the driver and the engine read.

The conformance scenario (tests/providers/conformance.py) through the real
driver against the fake (always) and the pinned CLI with the scripted model;
both reduce to the same recording in ``data/``, which says where each
response's usage comes (an assistant message starts with none and ends with
its own). The usage the driver reports is, response by response, what the
model sent (Pi counts reasoning tokens within the output, not apart): the
scripted endpoint's for the real CLI, the fake's own (its log) for the fake.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("paperclip_pi", reason="the pi plugin is not installed")

from paperclip_hookspecs.providers import ProviderEvent
from paperclip_pi.driver import PiDriver

from tests.providers.conformance import Conformance, FakeConformance, RealConformance
from tests.providers.pi.provider import PI

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens")
"""What Pi reports of a response's usage (reasoning tokens are within the output)."""


READ_KINDS = {
    "agent_start",
    "turn_start",
    "message_start",
    "message_end",
    "tool_execution_start",
    "tool_execution_end",
    "turn_end",
    "agent_end",
}
"""What the driver and the engine read; streaming updates and tool progress are left out."""


def reduce(result: Any, events: list[ProviderEvent], reported: Any) -> dict[str, Any]:
    """The turn as read: each event kind in order, with roles, tools and their errors."""
    sequence: list[list[Any]] = []
    for event in events:
        if event.type not in READ_KINDS:
            continue
        entry: list[Any] = [event.type]
        message = event.payload.get("message")
        if event.type.startswith("message_") and isinstance(message, dict):
            entry.append(message.get("role"))
            if event.type == "message_end" and message.get("role") == "assistant":
                entry.append(message.get("stopReason"))
            if message.get("role") == "assistant":
                entry.append(_usage_shape(message))
        if event.type.startswith("tool_execution_"):
            entry.append(event.payload["toolName"])
        if event.type == "tool_execution_end":
            entry.append(event.payload["isError"])
        sequence.append(entry)
    return {"result": [result.status, result.answer], "sequence": sequence}


def _usage_shape(message: dict[str, Any]) -> dict[str, Any]:
    """Where an assistant message's usage is: its fields, whether it is any, its response id."""
    usage = message["usage"]
    return {
        "fields": sorted(usage),
        "cost": sorted(usage["cost"]),
        "used": bool(usage["input"] or usage["output"]),
        "response_id": isinstance(message.get("responseId"), str),
    }


CONFORMANCE = Conformance(provider=PI, driver=PiDriver, reduce=reduce, counts=COUNTS)


class TestTheFake(FakeConformance):
    conformance = CONFORMANCE


@pytest.mark.pi_cli
class TestTheRealCli(RealConformance):
    conformance = CONFORMANCE
