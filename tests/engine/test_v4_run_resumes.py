"""A run whose execution input was stored as v4 (by an earlier release) resumes after an upgrade.

The run is in the middle of its turn when its stored input is a v4 envelope
and the control plane is replaced (SIGKILL, start again). The adopted run
goes on: the finish tool validates completion references through the v4
reader, refusing a source v4 never rendered and accepting the task.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest
from paperclip_hookspecs.prompts import Lane, SessionAttempt, TaskSource, WakeSource

from paperclip.prompts import AssemblyRequest, assemble_execution_input
from tests.prompts.support import BUILTIN
from tests.support.db import query
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def v4_envelope(issue: dict, run_id: str) -> dict:
    """What the producer writes with ownership metadata off (the v4 shape)."""
    request = AssemblyRequest(
        task=TaskSource(
            id=issue["id"],
            identifier=issue["identifier"],
            title=issue["title"],
            description=issue["description"],
            status="in_progress",
            priority=issue["priority"],
        ),
        wake=WakeSource(reason="assignment"),
        lane=Lane.NATIVE,
        attempt=SessionAttempt.FRESH,
        run_id=run_id,
        provider="codex",
        ownership=False,
    )
    return assemble_execution_input(request, BUILTIN).envelope


def test_a_v4_run_resumes_after_the_upgrade(stack):
    reached, gate = stack.tmp / "reached", stack.tmp / "go"
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue({"turns": [[]]})  # replaced below, once the ids are known
    issue = ctx["issue"]
    script = {
        "turns": [
            [
                {"touch_file": str(reached)},
                {"wait_for_file": str(gate), "timeout": 120},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {
                            "outcome": "done",
                            "summary": "cites a comment v4 never rendered",
                            "references": [
                                {"kind": "comment", "id": str(uuid.uuid4()), "revision": "0" * 64}
                            ],
                        },
                    }
                },
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {
                            "outcome": "done",
                            "summary": "cites the task",
                            "references": [{"kind": "task", "id": issue["id"]}],
                        },
                    }
                },
            ]
        ]
    }
    ctx["script_path"].write_text(json.dumps(script))
    stack.assign(ctx)
    wait_until(reached.exists, 60, message="the fake reached the gate")

    [row] = query(
        stack.database_url, "SELECT id FROM runs WHERE issue_id = $1", uuid.UUID(issue["id"])
    )
    envelope = v4_envelope(issue, str(row["id"]))
    assert envelope["schema"] == "paperclip.native-execution-input.v4"
    query(
        stack.database_url,
        "UPDATE runs SET execution_input = $1::jsonb, execution_input_schema = $2 WHERE id = $3",
        json.dumps(envelope),
        envelope["schema"],
        row["id"],
    )
    stack.servers[0].kill()
    time.sleep(0.5)
    stack.start_server()
    gate.touch()

    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded", stack.runner.tail()
    assert run["execution_input_schema"] == "paperclip.native-execution-input.v4"
    assert run["result"]["summary"] == "cites the task"
    assert run["result"]["references"] == [{"kind": "task", "id": issue["id"]}]
    calls = query(
        stack.database_url,
        "SELECT tool, is_error, result FROM tool_calls WHERE run_id = $1 ORDER BY id",
        row["id"],
    )
    refused, accepted = calls
    assert refused["is_error"] and "completion_reference_not_rendered" in refused["result"]
    assert not accepted["is_error"]
