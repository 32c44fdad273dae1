"""``paperclip companies | agents | issues | comments | runs`` against a real server.

The server runs with its local runner on the fake Codex (which speaks the real
app-server protocol); each command runs as a user runs it, pointed at the
server by ``PAPERCLIP_URL`` or ``--url``, naming things as people do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

HELLO = [
    {"call_tool": {"name": "get_task_context", "arguments": {}}},
    {"call_tool": {"name": "report_progress", "arguments": {"summary": "Reading the task"}}},
    {"call_tool": {"name": "post_comment", "arguments": {"body": "Hello from the fake Codex."}}},
    {"shell": {"command": "echo checked"}},
    {"message": "I said hello,\nin two lines."},
    {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "Said hello"}}},
]


@pytest.fixture(scope="module")
def company(served):
    made = served.json("companies", "create", "Daily Work", "--prefix", "dw")
    assert made["issue_prefix"] == "DW"
    served.ok("companies", "create", "Elsewhere")  # so that a company must be named
    return made


def test_companies(served, company):
    assert company["id"] in served.ok("companies")
    listed = served.json("companies", "list")
    assert company["id"] in [c["id"] for c in listed]
    for ref in ("Daily Work", "dw", "DW", company["id"]):
        assert served.json("companies", "show", ref)["id"] == company["id"]
    text = served.ok("companies", "show", "dw")
    assert "Daily Work (DW)" in text and company["id"] in text


def test_agents(served, company):
    config = served.fake_config(HELLO)
    made = served.json(
        "agents", "create", "greeter", "--provider", "codex", "--config", config, "--company", "DW"
    )
    assert made["provider_config"] == json.loads(config)
    assert "greeter" in served.ok("agents", "--company", "Daily Work")
    assert served.json("agents", "show", "GREETER", "--company", "dw")["id"] == made["id"]

    bad = served.cli(
        "agents", "create", "x", "--provider", "codex", "--config", "{not json", "--company", "DW"
    )
    assert bad.returncode == 1 and bad.stderr.startswith("error: --config is not JSON")
    refused = served.cli("agents", "create", "y", "--provider", "nope", "--company", "DW")
    assert refused.returncode == 1 and "unknown_provider" in refused.stderr


def test_the_org_chart(served, company):
    config = served.fake_config(HELLO)

    def hire(name: str, *more: str) -> dict:
        return served.json(
            "agents",
            "create",
            name,
            "--provider",
            "codex",
            "--config",
            config,
            "--company",
            "DW",
            *more,
        )

    ceo = hire("chief", "--role", "runs the company")
    cto = hire("builder", "--reports-to", "chief")
    hire("tester", "--reports-to", cto["id"])
    assert cto["reports_to"] == ceo["id"]
    tree = served.ok("agents", "org", "--company", "DW").splitlines()
    top = tree.index("chief (runs the company): active")  # other agents of the module beside it
    lines = tree[top : top + 3]
    assert lines == [
        "chief (runs the company): active",
        "  builder: active",
        "    tester: active",
    ]
    assert "reports   to chief" in served.ok("agents", "show", "builder", "--company", "DW")

    looped = served.cli("agents", "move", "chief", "--to", "tester", "--company", "DW")
    assert looped.returncode == 1 and "reports_to_cycle" in looped.stderr
    assert served.json("agents", "move", "tester", "--top", "--company", "DW")["reports_to"] is None
    unsaid = served.cli("agents", "move", "tester", "--company", "DW")
    assert unsaid.returncode == 1 and unsaid.stderr.startswith("error: say where to")


def test_an_issue_from_creation_to_its_run_followed_to_the_end(served, company):
    config = served.fake_config(HELLO)
    served.ok(
        "agents",
        "create",
        "hello-bot",
        "--provider",
        "codex",
        "--config",
        config,
        "--company",
        "DW",
    )
    made = served.json(
        "issues",
        "create",
        "Say hello",
        "-d",
        "Be polite.",
        "--assignee",
        "hello-bot",
        "--company",
        "DW",
    )
    identifier = made["identifier"]

    # Followed by the issue's identifier (its latest run), in any case, to the end.
    tail = served.cli("runs", "tail", identifier.lower())
    assert tail.returncode == 0, tail.stderr
    lines = tail.stdout.splitlines()
    body = [line[9:] for line in lines]  # without the time of day
    assert "agent   I said hello," in body
    assert "                 in two lines." in lines  # a message's lines, one under the other
    assert "progress Reading the task" in body
    assert any(
        b.startswith(
            'tool    post_comment({"body": "Hello from the fake Codex."}) -> {"comment_id"'
        )
        for b in body
    )
    assert any(b.startswith("tool    get_task_context() -> {") for b in body)
    assert any(
        b.startswith(
            'tool    finish({"outcome": "done", "summary": "Said hello"}) -> {"accepted": true'
        )
        for b in body
    )
    assert body[-2:] == ["turn    1 completed", "run     succeeded"]
    # One line per thing that happened, not per streamed word or protocol message.
    assert not any("delta" in line for line in lines)
    assert any(
        "shell   $ " in line and "echo checked" in line and "-> exit 0" in line for line in lines
    )
    assert len(lines) == 12, tail.stdout  # eleven entries, the message on two lines

    entries = [
        json.loads(line) for line in served.ok("runs", "tail", identifier, "--json").splitlines()
    ]
    kinds = [e["kind"] for e in entries]
    assert kinds == [
        *("turn", "prompt", "tool", "progress", "tool", "tool", "command", "message", "tool"),
        *("turn", "end"),
    ]
    tools = [e for e in entries if e["kind"] == "tool"]
    assert [t["text"] for t in tools] == [
        "get_task_context",
        "report_progress",
        "post_comment",
        "finish",
    ]
    assert tools[2]["details"]["arguments"] == {"body": "Hello from the fake Codex."}
    assert all(isinstance(t["details"]["duration_ms"], int) for t in tools)
    assert entries[-1]["details"]["status"] == "succeeded"
    assert [e["seq"] for e in entries] == sorted(e["seq"] for e in entries)

    shown = served.json("issues", "show", identifier)
    assert shown["status"] == "done" and shown["identifier"] == identifier
    assert [c["body"] for c in shown["comments"]] == [
        "Hello from the fake Codex.",
        "I said hello,\nin two lines.",
    ]
    (run,) = shown["runs"]
    text = served.ok("issues", "show", identifier)
    assert "done, medium priority, assigned to hello-bot" in text and "Be polite." in text
    assert "hello-bot" in text and "Hello from the fake Codex." in text and run["id"] in text

    comments = served.ok("comments", identifier)
    assert "hello-bot" in comments and "  Hello from the fake Codex." in comments
    assert served.json("comments", "list", identifier) == shown["comments"]

    assert served.json("runs", "show", run["id"])["status"] == "succeeded"
    shown_run = served.ok("runs", "show", identifier)
    assert f"run {run['id']}: succeeded (task_completed)" in shown_run
    assert f"issue     {identifier}" in shown_run and "turn 1    initial, completed" in shown_run
    listed = served.ok("runs", "--issue", identifier)
    assert run["id"] in listed and "succeeded" in listed and "hello-bot" in listed


def test_runs_tail_follows_a_live_run(served, company):
    gate = served.stack.tmp / "tail-gate"
    steps = [
        {"call_tool": {"name": "report_progress", "arguments": {"summary": "Halfway there"}}},
        {"wait_for_file": str(gate), "timeout": 120},
        {"message": "All done."},
        {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
    ]
    served.ok(
        "agents",
        "create",
        "slow-bot",
        "--provider",
        "codex",
        "--config",
        served.fake_config(steps),
        "--company",
        "DW",
    )
    identifier = served.json(
        "issues", "create", "Go slowly", "--assignee", "slow-bot", "--company", "DW"
    )["identifier"]

    tail = subprocess.Popen(
        [sys.executable, "-m", "paperclip", "runs", "tail", identifier, "--url", served.url],
        env={**os.environ, **served.client_env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert tail.stdout is not None
        seen = []
        while not any("progress Halfway there" in line for line in seen):
            line = tail.stdout.readline()
            assert line, tail.stderr.read() if tail.stderr else ""
            seen.append(line)
        # Shown while the run still waits at the gate: followed live, not read afterwards.
        run = served.json("runs", "show", identifier)
        assert run["status"] == "running"
        gate.write_text("")
        rest = tail.stdout.read()
        assert tail.wait(60) == 0
    finally:
        if tail.poll() is None:
            tail.kill()
    assert "agent   All done." in rest and rest.rstrip().endswith("run     succeeded")


def test_a_failed_run_is_said_and_exits_1(served, company):
    steps = [{"message": "I forgot to finish."}]
    served.ok(
        "agents",
        "create",
        "forgetful",
        "--provider",
        "codex",
        "--config",
        served.fake_config(steps),
        "--company",
        "DW",
    )
    identifier = served.json(
        "issues", "create", "Forget", "--assignee", "forgetful", "--company", "DW"
    )["identifier"]
    tail = served.cli("runs", "tail", identifier)
    assert tail.returncode == 1, tail.stderr
    assert tail.stdout.rstrip().endswith("run     failed (finish_not_called)")
    failed = served.json("runs", "--status", "failed", "--company", "DW")
    assert [r["issue_id"] for r in failed] == [served.json("issues", "show", identifier)["id"]]


def test_issues_assign_comment_close_and_filters(served, company):
    config = served.fake_config([{"message": "Not now."}])
    served.ok(
        "agents", "create", "idle-bot", "--provider", "codex", "--config", config, "--company", "DW"
    )
    first = served.json(
        "issues", "create", "Write the docs", "--company", "DW", "--priority", "high"
    )
    second = served.json("issues", "create", "Fix the tests", "--company", "DW")
    assert first["assignee_agent_id"] is None and first["priority"] == "high"

    # An identifier says its company: no --company needed (there are several companies).
    assert served.cli("issues").returncode == 1  # which company? said in one line
    assigned = served.json("issues", "assign", first["identifier"].lower(), "IDLE-BOT")
    agent = served.json("agents", "show", "idle-bot", "--company", "DW")
    assert assigned["assignee_agent_id"] == agent["id"]
    mine = served.json("issues", "--company", "DW", "--assignee", "idle-bot")
    assert [i["identifier"] for i in mine] == [first["identifier"]]
    assert (
        served.json("issues", "assign", first["identifier"], "--nobody")["assignee_agent_id"]
        is None
    )

    said = served.json("issues", "comment", second["identifier"], "Looks flaky.")
    assert said["body"] == "Looks flaky."
    piped = served.json("issues", "comment", second["identifier"], stdin="From a pipe.\n")
    assert piped["body"] == "From a pipe.\n"
    empty = served.cli("issues", "comment", second["identifier"], "  ")
    assert empty.returncode == 2 and empty.stderr.startswith("error: the comment is empty")

    closed = served.json("issues", "close", second["identifier"], "--comment", "Fixed elsewhere.")
    assert closed["status"] == "done"
    bodies = [c["body"] for c in served.json("comments", second["identifier"])]
    assert bodies[-1] == "Fixed elsewhere."
    assert served.json("issues", "close", first["identifier"], "--cancel")["status"] == "cancelled"

    done = served.json("issues", "--company", "DW", "--status", "done", "--limit", "200")
    assert second["identifier"] in [i["identifier"] for i in done]
    assert all(i["status"] == "done" for i in done)
    both = served.json("issues", "--company", "DW", "--status", "done", "--status", "cancelled")
    assert {first["identifier"], second["identifier"]} <= {i["identifier"] for i in both}
    found = served.json("issues", "--company", "DW", "-q", "the tests")
    assert [i["identifier"] for i in found] == [second["identifier"]]
    newest = served.json("issues", "--company", "DW", "--limit", "2")
    assert [i["identifier"] for i in newest] == [second["identifier"], first["identifier"]]
    text = served.ok("issues", "--company", "DW", "--status", "cancelled")
    assert f"{first['identifier']}" in text and "cancelled" in text and "Write the docs" in text
    # PAPERCLIP_COMPANY names it for every command.
    assert (
        served.json("issues", "--limit", "1", env={"PAPERCLIP_COMPANY": "dw"})[0]["identifier"]
        == second["identifier"]
    )


def test_mistakes_are_one_line(served, company):
    def error(*args: str, **options) -> str:
        result = served.cli(*args, **options)
        assert result.returncode != 0 and "Traceback" not in result.stderr
        (line,) = result.stderr.splitlines()
        return line

    assert error("issues", "show", "DW-999") == (
        "error: no issue 'DW-999' in Daily Work. Give its identifier (PAP-1) or id."
    )
    assert error("issues", "show", "ZZ-1").startswith("error: no company 'ZZ'")
    assert error("runs", "tail", "DW-999").startswith(
        "error: no run or issue 'DW-999' in Daily Work"
    )
    assert error("issues", "assign", "DW-1", "nobody-here").startswith(
        "error: no agent 'nobody-here'"
    )
    assert error("issues", "assign", "DW-1").startswith("error: name an agent, or --nobody")
    assert "has no run yet" in error(
        "runs",
        "tail",
        served.json("issues", "create", "Quiet", "--company", "DW")["identifier"],
        "--wait",
        "0",
    )
    gone = error("companies", "--url", "http://127.0.0.1:9")
    assert gone.startswith("error: cannot reach the server at http://127.0.0.1:9: ")
    assert "paperclip serve" in gone and "PAPERCLIP_URL" in gone


def test_commands_read_the_url_from_the_environment_or_the_option(served, company):
    assert company["id"] in served.ok(
        "companies", "--url", served.url, env={"PAPERCLIP_URL": "http://127.0.0.1:9"}
    )
    port = served.url.rsplit(":", 1)[1]
    # Without PAPERCLIP_URL, PAPERCLIP_PORT on loopback (the port `serve` reads too).
    result = subprocess.run(
        [sys.executable, "-m", "paperclip", "companies", "--json"],
        env={
            "PATH": "/usr/bin:/bin",
            "PAPERCLIP_PORT": port,
            "HOME": str(served.stack.tmp),
            "PAPERCLIP_DATA_DIR": served.client_env["PAPERCLIP_DATA_DIR"],
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert company["id"] in [c["id"] for c in json.loads(result.stdout)]


def test_what_an_issue_and_its_parts_cost(served, company):
    whole = served.json("issues", "create", "Ship v3", "--company", "DW")
    served.json("issues", "create", "Tag v3", "--parent", whole["identifier"])
    summed = served.json(
        "costs",
        "--company",
        "DW",
        "--by",
        "issue",
        "--issue",
        whole["identifier"],
        "--with-parts",
        "--json",
    )
    assert summed["totals"]["events"] == 0 and summed["groups"] == []  # nothing ran yet
    shown = served.ok("costs", "--company", "DW", "--issue", whole["identifier"], "--with-parts")
    assert f"costs by agent of {whole['identifier']} and its parts" in shown
    unsaid = served.cli("costs", "--company", "DW", "--with-parts")
    assert unsaid.returncode == 2 and "--with-parts needs --issue" in unsaid.stderr
