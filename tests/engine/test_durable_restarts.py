"""Runs survive the loss of their runner, their provider, or a graceful restart: real processes.

The control plane, the runner and the fake Codex app-server are separate OS
processes; the ``lost_runs`` recovery policy is installed. A lost turn goes on
in a next turn that resumes the Codex thread (a restart continuation), and
nothing the first turn did is done again.
"""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path

import psutil
import pytest

from tests.support.db import query
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def gate_script(stack, name: str) -> tuple[dict, Path]:
    """Turn 1 posts a comment, then waits at a gate that never opens; turn 2 (the
    continuation of the same thread) finishes."""
    reached = stack.tmp / f"{name}-reached"
    script = {
        "turns": [
            [
                {"call_tool": {"name": "post_comment", "arguments": {"body": "Before the loss."}}},
                {"touch_file": str(reached)},
                {"wait_for_file": str(stack.tmp / f"{name}-never"), "timeout": 300},
            ],
            [
                {"message": "Continuing where I left off."},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "done", "summary": "finished after the loss"},
                    }
                },
            ],
        ]
    }
    return script, reached


def turns(stack, run_id: str) -> list[dict]:
    return query(
        stack.database_url,
        "SELECT number, kind, status, error_code, session_ref FROM run_turns "
        "WHERE run_id = $1 ORDER BY number",
        uuid.UUID(run_id),
    )


def assert_went_on_once(stack, ctx, *, lost_because: str) -> dict:
    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert run["status"] == "succeeded", (run, stack.runner.tail() if stack.runner else "")
    history = turns(stack, run["id"])
    assert [(t["number"], t["kind"], t["status"]) for t in history] == [
        (1, "initial", "lost"),
        (2, "continuation", "completed"),
    ], history
    assert history[0]["error_code"] == lost_because
    assert history[0]["session_ref"] and history[1]["session_ref"] == history[0]["session_ref"]
    with stack.api() as api:
        listed = api.get(f"/companies/{ctx['company']['id']}/runs/{run['id']}/turns").json()[
            "items"
        ]
    assert [(t["number"], t["kind"], t["status"]) for t in listed] == [
        (1, "initial", "lost"),
        (2, "continuation", "completed"),
    ]
    assert listed[1]["provider_turn_id"] and listed[1]["session_ref"] == history[0]["session_ref"]
    assert listed[1]["input_schema"] == "paperclip.native-continuation.v1"
    # Each turn's events are its own: the provider's of the first, then of the second.
    by_turn = {e["turn"] for e in stack.events(ctx, run["id"]) if e["type"] == "turn/started"}
    assert by_turn == {1, 2}
    run = wait_until(lambda: next((r for r in stack.runs(ctx) if r["presentation"]), None), 30)
    bodies = [c["body"] for c in stack.comments(ctx) if c["author_agent_id"]]
    # The first turn's comment once (the continuation does not post it again), then the answer.
    assert bodies == ["Before the loss.", "Continuing where I left off."], bodies
    pending = query(
        stack.database_url,
        "SELECT count(*) AS n FROM tool_calls WHERE run_id = $1 AND status = 'pending'",
        uuid.UUID(run["id"]),
    )
    assert pending[0]["n"] == 0  # no journal row outlives its run without a result
    return run


def fake_processes(stack) -> list[psutil.Process]:
    """The fake app-servers running now, of this test's stack."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if (
            "paperclip_codex_testing.fake_app_server" in cmdline
            and str(stack.script_dir) in cmdline
        ):
            found.append(proc)
    return found


def test_sigterm_of_serve_mid_turn_loses_nothing(stack):
    stack.start_server(local_runner=True)
    script, reached = gate_script(stack, "sigterm")
    ctx = stack.setup_issue(script)
    stack.assign(ctx)
    wait_until(reached.exists, 60, message="the first turn at its gate")

    # An orderly stop: serve stops its local runner too, which stops the provider.
    assert stack.servers[0].terminate() == 0
    stack.start_server(local_runner=True)

    run = assert_went_on_once(stack, ctx, lost_because="runner_restarted")
    assert run["resume_attempts"] == 1


def test_sigkill_of_the_runner_mid_turn_resumes_the_session(stack):
    stack.start_server()
    stack.start_runner()
    script, reached = gate_script(stack, "runner")
    ctx = stack.setup_issue(script)
    stack.assign(ctx)
    wait_until(reached.exists, 60, message="the first turn at its gate")

    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)
    stack.start_runner()  # the runner's next process, on the same work folder

    assert_went_on_once(stack, ctx, lost_because="runner_restarted")
    assert len(fake_processes(stack)) <= 1  # the killed runner's provider was stopped


def test_sigkill_of_the_provider_alone_resumes_the_session(stack):
    stack.start_server()
    stack.start_runner()
    script, reached = gate_script(stack, "provider")
    ctx = stack.setup_issue(script)
    stack.assign(ctx)
    wait_until(reached.exists, 60, message="the first turn at its gate")

    [provider] = fake_processes(stack)
    provider.send_signal(signal.SIGKILL)

    assert_went_on_once(stack, ctx, lost_because="provider_exited")


def test_a_runner_killed_before_it_acknowledged_start_turn_never_starts_it_twice(stack):
    stack.start_server()
    stack.start_runner(env={"PAPERCLIP_FAILPOINTS": "runner.start_turn.before_ack=kill"})
    script = {
        "turns": [
            [
                {"message": "Done in one go."},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "done", "summary": "ok"},
                    }
                },
            ]
        ]
    }
    ctx = stack.setup_issue(script)
    stack.assign(ctx)
    assert stack.runner.proc.wait(60) == -signal.SIGKILL  # died at the failpoint
    first_instance_log = stack.runner.tail()
    stack.start_runner()  # the control plane replays the unacknowledged start_turn

    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert run["status"] == "succeeded", (run, first_instance_log, stack.runner.tail())
    history = turns(stack, run["id"])
    # Turn 1 was recorded as started by the dead process: the replay did not start it
    # again, it was lost, and the run went on in turn 2 (a fresh session: none was reported).
    assert [(t["number"], t["kind"], t["status"]) for t in history] == [
        (1, "initial", "lost"),
        (2, "fresh_retry", "completed"),
    ]
    assert history[0]["error_code"] == "turn_lost"
    record = json.loads((stack.tmp / "runner" / "runs" / run["id"] / "turns.json").read_text())
    assert [r["turn"] for r in record] == [1, 2]  # each turn started once, by its runner
    assert record[0]["instance"] != record[1]["instance"]
    # One provider process in all: none for the turn the dead runner only recorded.
    entries = [json.loads(line) for line in stack.fake_log.read_text().splitlines() if line]
    starts = [
        e
        for e in entries
        if e.get("type") == "received" and e["message"].get("method") == "initialize"
    ]
    assert len(starts) == 1, starts


def released_gate_script(stack, name: str) -> tuple[dict, Path, Path]:
    """One turn: it reaches a gate, waits until the test releases it, then finishes.
    Played again from the top by a fresh session (another runner's)."""
    reached, release = stack.tmp / f"{name}-reached", stack.tmp / f"{name}-release"
    script = {
        "turns": [
            [
                {"touch_file": str(reached)},
                {"wait_for_file": str(release), "timeout": 300},
                {"message": "Done after all."},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "done", "summary": "ok"},
                    }
                },
            ]
        ]
    }
    return script, reached, release


def kill_runner_at_the_gate(stack, reached: Path) -> None:
    wait_until(reached.exists, 60, message="the first turn at its gate")
    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)


def test_a_runner_that_never_comes_back_hands_its_run_to_another_runner(stack):
    stack.extra_env["PAPERCLIP_RUNNER_GONE_SECONDS"] = "1"
    stack.start_server()
    first = stack.start_runner()
    script, reached, release = released_gate_script(stack, "handover")
    ctx = stack.setup_issue(script)
    stack.assign(ctx)
    kill_runner_at_the_gate(stack, reached)
    release.touch()

    second = stack.start_runner(another=True)  # another machine: the thread is not there
    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert run["status"] == "succeeded", (run, second.tail())
    history = turns(stack, run["id"])
    # Gone with the first runner; the other runner cannot resume that session, so the
    # run starts over in a fresh one there: bounded, and each turn once.
    assert [(t["number"], t["kind"], t["status"], t["error_code"]) for t in history] == [
        (1, "initial", "lost", "runner_gone"),
        (2, "continuation", "lost", "resume_failed"),
        (3, "fresh_retry", "completed", None),
    ], (history, first.tail())
    assert run["resume_attempts"] == 2
    [row] = query(
        stack.database_url,
        "SELECT r.name FROM runs JOIN runners r ON r.id = runs.runner_id WHERE runs.id = $1",
        uuid.UUID(run["id"]),
    )
    assert (
        row["name"]
        != query(
            stack.database_url,
            "SELECT r.name FROM run_turns t JOIN runners r ON r.id = t.runner_id "
            "WHERE t.run_id = $1 AND t.number = 1",
            uuid.UUID(run["id"]),
        )[0]["name"]
    )


def test_with_no_runner_the_task_ends_held_and_a_released_hold_runs_it_again(stack):
    stack.extra_env.update(
        {"PAPERCLIP_RUNNER_GONE_SECONDS": "1", "PAPERCLIP_RUN_ABANDON_SECONDS": "3"}
    )
    stack.start_server()
    stack.start_runner()
    script, reached, release = released_gate_script(stack, "held")
    ctx = stack.setup_issue(script)
    stack.assign(ctx)
    kill_runner_at_the_gate(stack, reached)

    run = stack.wait_for_terminal_run(ctx, timeout=90)
    assert run["status"] == "failed" and run["error_code"] == "runner_unavailable", run
    company, issue = ctx["company"]["id"], ctx["issue"]["id"]
    with stack.api() as api:
        [hold] = wait_until(  # the hold is written as the run ends, maybe just after
            lambda: api.get(f"/companies/{company}/holds", params={"issue_id": issue}).json()[
                "items"
            ],
            30,
            message="the task's hold",
        )
        assert (hold["kind"], hold["set_by"], hold["status"]) == (
            "runner_unavailable",
            "system",
            "active",
        )
        assert "no runner offering the 'codex' provider" in hold["reason"]
        assert "resolve this hold" in hold["reason"]  # what a person can do about it
        # Held: a new wake of the task waits, even with a runner connected.
        release.touch()
        stack.start_runner(another=True)
        r = api.post(f"/companies/{company}/issues/{issue}/comments", json={"body": "Try again?"})
        assert r.status_code == 201, r.text
        # A wake of another task of the agent, made after it, starts its run: the
        # scheduler has looked at the held wake too, and left it.
        other = api.post(
            f"/companies/{company}/issues",
            json={"title": "Another task", "assignee_agent_id": ctx["agent"]["id"]},
        )
        assert other.status_code == 201, other.text
        wait_until(
            lambda: stack.runs({**ctx, "issue": other.json()}),
            60,
            message="the other task's run",
        )
        assert [r["id"] for r in stack.runs(ctx)] == [run["id"]]

        r = api.post(f"/companies/{company}/holds/{hold['id']}/resolve", json={})
        assert r.status_code == 200 and r.json()["resolved_by"] == "operator", r.text
        again = api.post(f"/companies/{company}/holds/{hold['id']}/resolve", json={})
        assert again.status_code == 409 and again.json()["code"] == "hold_already_resolved"

    rerun = wait_until(
        lambda: next(
            (r for r in stack.runs(ctx) if r["id"] != run["id"] and r["status"] == "succeeded"),
            None,
        ),
        90,
        message="the task ran again once the hold was released",
    )
    assert rerun["turn"] == 1
