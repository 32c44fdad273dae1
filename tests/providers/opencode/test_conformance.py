"""The fake server agrees with the real OpenCode on what the driver and the engine read.

The conformance scenario (tests/providers/conformance.py) through the real
driver against the fake (always) and the pinned CLI with the scripted model;
both reduce to the same recording in ``data/``, which says where each answer's
tokens and cost come. The usage the driver reports is, answer by answer, what
the model sent: the scripted endpoint's for the real CLI, the fake's own (its
log) for the fake.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

pytest.importorskip("paperclip_opencode", reason="the opencode plugin is not installed")

from paperclip_hookspecs.providers import ProviderEvent
from paperclip_opencode.driver import OpenCodeDriver

from tests.providers.conformance import Conformance, FakeConformance, RealConformance
from tests.providers.opencode.provider import OPENCODE

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def reduce(result: Any, events: list[ProviderEvent], reported: Any) -> dict[str, Any]:
    """What is read of a turn: the tools' final states, the messages, the end, the answer."""
    tools: dict[str, tuple[str, str]] = {}
    assistants: dict[str, str | None] = {}
    users: set[str] = set()
    updates: Counter[str] = Counter()  # completed updates of each answer
    finished: dict[str, Any] = {}  # each answer's step-finish tokens
    usage: dict[str, Any] = {}  # each answer's tokens and cost, as completed
    for event in events:
        if event.type == "message.part.updated":
            part = event.payload["part"]
            if part["type"] == "tool" and part["state"]["status"] in ("completed", "error"):
                tools.setdefault(part["callID"], (part["tool"], part["state"]["status"]))
            if part["type"] == "step-finish":
                finished[part["messageID"]] = (part["tokens"], part["cost"])
        elif event.type == "message.updated":
            info = event.payload["info"]
            if info["role"] == "user":
                users.add(info["id"])
            elif "completed" in info.get("time", {}):
                assistants[info["id"]] = info.get("finish")
                updates[info["id"]] += 1
                usage[info["id"]] = (info["tokens"], info["cost"])
    statuses = [e.payload["status"]["type"] for e in events if e.type == "session.status"]
    return {
        "result": [result.status, result.answer],
        "tools": [list(t) for t in tools.values()],
        "finishes": list(assistants.values()),
        "users": len(users),
        "last_status": statuses[-1] if statuses else None,
        "busy_first": statuses[:1] == ["busy"],
        # Each answer's usage: final when it completes (sent twice), as its step-finish says.
        "completed_updates": [updates[m] for m in assistants],
        "usage_fields": sorted({_fields(tokens) for tokens, _ in usage.values()}),
        "usage_as_step_finish": [usage[m] == finished.get(m) for m in assistants],
        "costs": sorted({type(cost).__name__ for _, cost in usage.values()}),
    }


def _fields(tokens: dict[str, Any]) -> str:
    return ",".join(sorted(k if k != "cache" else f"cache.{sorted(tokens[k])}" for k in tokens))


CONFORMANCE = Conformance(provider=OPENCODE, driver=OpenCodeDriver, reduce=reduce)


class TestTheFake(FakeConformance):
    conformance = CONFORMANCE


@pytest.mark.opencode_cli
class TestTheRealCli(RealConformance):
    conformance = CONFORMANCE
