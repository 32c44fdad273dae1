"""A company at work on real processes: a CEO agent hands two parts of its issue to its
reports, hears back as each ends, and finishes the issue; a runner SIGKILLed right after a
part was handed leaves two parts, never three.

The control plane, the runner and the fake Codex are separate OS processes; each agent's
model names its script, and gates (files the test creates) order the runs.
"""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path

import pytest

from tests.engine.conftest import FAKE_PROFILE
from tests.engine.test_workspaces import (
    COMMITTER,
    escalated,
    in_project,
    runner_with_roots,
)
from tests.support.git_repos import commit, git, make_repo
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def tool(name: str, **arguments) -> dict:
    return {"call_tool": {"name": name, "arguments": arguments}}


def finish(outcome: str, summary: str) -> dict:
    return tool("finish", outcome=outcome, summary=summary)


def hire(stack, ctx: dict, name: str, script: dict, **config) -> dict:
    """A report of the issue's agent, on the fake, running ``script``."""
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    (stack.script_dir / f"{model}.json").write_text(json.dumps(script))
    with stack.api() as api:
        made = api.post(
            f"/companies/{ctx['company']['id']}/agents",
            json={
                "name": name,
                "provider": "codex",
                "provider_config": {"launch": FAKE_PROFILE, "model": model, **config},
                "reports_to": ctx["agent"]["id"],
            },
        )
        assert made.status_code == 201, made.text
        return made.json()


def runs_of(stack, ctx: dict, agent: dict) -> list[dict]:
    with stack.api() as api:
        return api.get(
            f"/companies/{ctx['company']['id']}/runs",
            params={"agent_id": agent["id"], "sort": "created"},
        ).json()["items"]


def ended_runs(stack, ctx: dict, agent: dict, count: int) -> list[dict]:
    """The agent's runs once ``count`` of them ended, none active."""

    def ended():
        runs = runs_of(stack, ctx, agent)
        done = [r for r in runs if r["status"] in ("succeeded", "failed", "cancelled")]
        active = [r for r in runs if r["status"] in ("queued", "running")]
        return runs if len(done) >= count and not active else None

    return wait_until(ended, 120, 0.2, f"{count} ended runs of {agent['name']}")


def parts(stack, ctx: dict) -> list[dict]:
    with stack.api() as api:
        return api.get(
            f"/companies/{ctx['company']['id']}/issues",
            params={"parent_id": ctx["issue"]["id"], "sort": "created"},
        ).json()["items"]


def test_a_ceo_hands_out_two_parts_hears_each_end_and_finishes(stack):
    repos = stack.tmp / "repos"
    make_repo(repos / "app")
    runner_with_roots(stack, repos)
    gates = {name: stack.tmp / f"go-{name}" for name in ("writer", "tagger")}
    ctx = stack.setup_issue(
        {
            "turns": [
                [
                    tool("delegate", to="writer", title="Write the changelog", command_id="w"),
                    tool("delegate", to="tagger", title="Tag the version", command_id="t"),
                    finish("needs_review", "Handed the changelog and the tag to my reports."),
                ]
            ]
        },
        title="Ship the release",
    )
    in_project(stack, ctx, repos / "app", default_branch="main")
    # The CEO's branch already holds its plan: each part's worktree starts from it.
    parent_branch = f"paperclip/{ctx['issue']['identifier']}"
    git(repos / "app", "checkout", "-q", "-b", parent_branch)
    commit(repos / "app", {"PLAN": "v2: changelog, tag\n"}, "Plan for v2")
    git(repos / "app", "checkout", "-q", "main")
    writer = hire(
        stack,
        ctx,
        "writer",
        {
            "turns": [
                [
                    {"wait_for_file": str(gates["writer"]), "timeout": 120},
                    escalated(
                        "printf 'v2: faster\\n' > CHANGELOG && git add CHANGELOG"
                        " && git commit -qm 'Changelog for v2'"
                    ),
                    finish("done", "Changelog written and committed."),
                ]
            ]
        },
        **COMMITTER,
    )
    tagger = hire(
        stack,
        ctx,
        "tagger",
        {
            "turns": [
                [
                    {"wait_for_file": str(gates["tagger"]), "timeout": 120},
                    finish("done", "Tagged v2."),
                ]
            ]
        },
    )
    stack.assign(ctx)
    ceo = ctx["agent"]
    [first] = ended_runs(stack, ctx, ceo, 1)
    assert first["status"] == "succeeded", (first, stack.runner.tail())
    handed = parts(stack, ctx)
    assert [(p["title"], p["assignee_agent_id"]) for p in handed] == [
        ("Write the changelog", writer["id"]),
        ("Tag the version", tagger["id"]),
    ]

    # The writer ends first: the CEO is woken with that outcome, and waits for the other.
    stack.rewrite_script(
        ctx, {"turns": [[tool("get_task_context"), finish("needs_review", "One part left.")]]}
    )
    gates["writer"].touch()
    second = ended_runs(stack, ctx, ceo, 2)[-1]
    assert second["status"] == "succeeded", (second, stack.runner.tail())
    said = json.dumps(second["execution_input"])
    assert f"{handed[0]['identifier']} done (Write the changelog)" in said
    branch = f"paperclip/{handed[0]['identifier']}"
    assert git(repos / "app", "log", "--format=%s", branch).splitlines()[:2] == [
        "Changelog for v2",
        "Plan for v2",
    ]
    [written] = runs_of(stack, ctx, writer)
    brief = written["execution_input"]["issue"]
    assert brief["workspace"]["baseRef"] == parent_branch
    # Its brief names its manager and the whole its part belongs to.
    prompt = written["execution_input"]["modelEnvelope"]["prompt"]
    manager = ceo["name"]
    assert f'- You report to: "{manager}"' in prompt
    assert brief["parent"]["identifier"] == ctx["issue"]["identifier"]

    # Then the tagger: woken again, the CEO finishes the issue.
    stack.rewrite_script(ctx, {"turns": [[finish("done", "Released v2.")]]})
    gates["tagger"].touch()
    third = ended_runs(stack, ctx, ceo, 3)[-1]
    assert third["status"] == "succeeded", (third, stack.runner.tail())
    assert f"{handed[1]['identifier']} done (Tag the version)" in json.dumps(
        third["execution_input"]
    )
    with stack.api() as api:
        issue = api.get(f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}").json()
    assert issue["status"] == "done"
    assert [p["status"] for p in parts(stack, ctx)] == ["done", "done"]
    assert len(runs_of(stack, ctx, ceo)) == 3


def test_a_runner_killed_right_after_a_part_was_handed_leaves_two_parts(stack):
    reached, go = stack.tmp / "reached", stack.tmp / "go"
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(
        {
            "turns": [
                [
                    tool("delegate", to="writer", title="Write the changelog", command_id="w"),
                    {"touch_file": str(reached)},
                    {"wait_for_file": str(go), "timeout": 120},
                    tool("delegate", to="tagger", title="Tag the version", command_id="t"),
                    finish("needs_review", "Handed out."),
                ]
            ]
        },
        title="Ship the release",
    )
    never = str(stack.tmp / "never")  # the reports wait: this test is about the CEO's parts
    for name in ("writer", "tagger"):
        hire(stack, ctx, name, {"turns": [[{"wait_for_file": never, "timeout": 300}]]})
    stack.assign(ctx)
    wait_until(reached.exists, 60, message="the first part handed")

    # The runner (and the fake with it) SIGKILLed: the first call was journaled and answered;
    # the run goes on in a new turn, which hands the first part again (the same command).
    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)
    go.touch()
    stack.start_runner()
    ceo = ctx["agent"]
    [run] = [r for r in ended_runs(stack, ctx, ceo, 1) if r["issue_id"] == ctx["issue"]["id"]]
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    assert [p["title"] for p in parts(stack, ctx)] == ["Write the changelog", "Tag the version"]
    calls = [c for c in stack.tool_calls(ctx, run["id"], "delegate")]
    receipts = [c["result"]["receipt"]["outcome"] for c in calls if c["status"] == "settled"]
    assert receipts == ["applied", "duplicate", "applied"], calls  # w, w again, t
    assert not Path(never).exists()
