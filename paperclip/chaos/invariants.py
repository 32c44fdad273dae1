"""What must hold after any mix of faults, checked from the database, the API and the logs.

Each check returns violations (a kind and what was found); none is a pass.
The checks read the company of the workload only.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperclip.chaos.db import connect


@dataclass(frozen=True, slots=True)
class Violation:
    kind: str
    detail: str


ACTIVE = ("queued", "running")


async def active_twice(url: str, company_id: str) -> list[Violation]:
    """A task with two active runs at this moment (sampled while the workload runs)."""
    rows = await _fetch(
        url,
        "SELECT issue_id, count(*) AS n FROM runs WHERE company_id = $1 AND status = ANY($2) "
        "GROUP BY issue_id HAVING count(*) > 1",
        uuid.UUID(company_id),
        list(ACTIVE),
    )
    return [
        Violation("two_active_runs", f"issue {r['issue_id']}: {r['n']} active runs") for r in rows
    ]


async def check_all(
    url: str,
    company_id: str,
    assigned: list[str],
    fake_log: Path,
    runner_dirs: list[Path],
    process_logs: list[Path],
) -> list[Violation]:
    """Every check, over the workload's company; ``assigned``: the issues the workload assigned,
    ``process_logs``: the control planes' and runners' logs."""
    company = uuid.UUID(company_id)
    found: list[Violation] = []
    conn = await connect(url)
    try:
        comments = [
            dict(r)
            for r in await conn.fetch(
                "SELECT c.issue_id, c.body, c.created_by_run_id, r.wake_request_id AS wake "
                "FROM comments c LEFT JOIN runs r ON r.id = c.created_by_run_id "
                "WHERE c.company_id = $1 AND c.deleted_at IS NULL",
                company,
            )
        ]
        calls = [
            dict(r)
            for r in await conn.fetch(
                "SELECT run_id, call_id, tool, arguments, status FROM tool_calls WHERE company_id = $1",
                company,
            )
        ]
        events = await conn.fetch(
            "SELECT run_id, count(*) AS n, count(DISTINCT seq) AS distinct_seqs, "
            "min(seq) AS first, max(seq) AS last FROM run_events WHERE company_id = $1 "
            "GROUP BY run_id",
            company,
        )
        runs = [
            dict(r)
            for r in await conn.fetch(
                "SELECT id, issue_id, status, answer, presentation, error_code FROM runs "
                "WHERE company_id = $1",
                company,
            )
        ]
        steers = [
            dict(r)
            for r in await conn.fetch(
                "SELECT s.run_id, s.message_id, c.body, r.status, "
                "EXISTS (SELECT 1 FROM run_events e WHERE e.run_id = s.run_id AND "
                "e.type = 'steering_acknowledgement' AND e.payload->>'message_id' = s.message_id) "
                "AS acknowledged FROM run_steers s JOIN runs r ON r.id = s.run_id "
                "JOIN comments c ON c.id = s.comment_id WHERE s.company_id = $1",
                company,
            )
        ]
        read = [
            dict(r)
            for r in await conn.fetch(
                "SELECT run_id, payload->'item'->'content' AS content FROM run_events "
                "WHERE company_id = $1 AND type = 'item/completed' "
                "AND payload->'item'->>'type' = 'userMessage'",
                company,
            )
        ]
        holds = await conn.fetch(
            "SELECT issue_id, reason FROM task_holds WHERE company_id = $1 AND status = 'active'",
            company,
        )
    finally:
        await conn.close()
    found += duplicated_comments(comments)
    found += lost_acknowledged_writes(comments, acknowledged_bodies(fake_log))
    found += tools_executed_twice(comments, calls)
    found += [
        Violation("tool_call_unsettled", f"run {c['run_id']} call {c['call_id']} ({c['tool']})")
        for c in calls
        if c["status"] == "pending"
    ]
    for e in events:
        if e["n"] != e["distinct_seqs"] or e["first"] != 1 or e["last"] != e["n"]:
            found.append(
                Violation(
                    "event_log_gap_or_duplicate",
                    f"run {e['run_id']}: {e['n']} events, seq {e['first']}..{e['last']}",
                )
            )
    found += unsettled_tasks([uuid.UUID(i) for i in assigned], runs, holds)
    found += [
        Violation("answer_not_presented", f"run {r['id']}")
        for r in runs
        if r["status"] == "succeeded" and r["answer"] and r["presentation"] is None
    ]
    found += turns_started_twice(runner_dirs)
    found += steers_not_read_once(steers, read)
    found += tracebacks_logged(process_logs)
    return found


def steers_not_read_once(steers: list[dict], read: list[dict]) -> list[Violation]:
    """Seed 004 from the run log: an acknowledged steer of a run that succeeded reached the
    model exactly once (a ``userMessage`` of its turn, or of the restart continuation)."""
    texts: dict[Any, list[str]] = {}
    for row in read:
        content = row["content"]
        parts = json.loads(content) if isinstance(content, str) else (content or [])
        texts.setdefault(row["run_id"], []).append(
            " ".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
        )
    found = []
    for steer in steers:
        if not steer["acknowledged"] or steer["status"] != "succeeded":
            continue
        n = sum(text.count(steer["body"]) for text in texts.get(steer["run_id"], []))
        if n != 1:
            kind = "steer_lost" if n == 0 else "steer_delivered_twice"
            found.append(Violation(kind, f"run {steer['run_id']}: {steer['body']!r} read {n}x"))
    return found


def duplicated_comments(comments: list[dict]) -> list[Violation]:
    """A body twice on one issue, from the runs of one wake request (a run and its
    continuations, or two runs made for one wake) or from people.

    A person's comment (a steer is one) wakes the agent again: that is new work, and
    the scripted agent says the same words in it, so runs of another wake do not count.
    """
    counts = Counter((c["issue_id"], c.get("wake"), c["body"]) for c in comments)
    return [
        Violation("comment_duplicated", f"issue {issue}: {body!r} x{n}")
        for (issue, _wake, body), n in counts.items()
        if n > 1
    ]


def acknowledged_bodies(fake_log: Path) -> list[str]:
    """Bodies of ``post_comment`` calls whose success reached the provider (the fake's log)."""
    bodies = []
    for entry in _log_entries(fake_log):
        if entry.get("type") != "tool_result" or entry.get("name") != "post_comment":
            continue
        result = entry.get("result") or {}
        structured = result.get("structuredContent") or {}
        # Only a comment's id says it was written: an error result (the runner's bridge
        # giving up, an interrupted call) reaches the model as a result too.
        if entry.get("ok") and isinstance(structured, dict) and "comment_id" in structured:
            bodies.append(entry["arguments"]["body"])
    return bodies


def lost_acknowledged_writes(comments: list[dict], acknowledged: list[str]) -> list[Violation]:
    stored = Counter(c["body"] for c in comments)
    return [
        Violation("acknowledged_write_lost", repr(body))
        for body in sorted(set(acknowledged))
        if stored[body] == 0
    ]


def tools_executed_twice(comments: list[dict], calls: list[dict]) -> list[Violation]:
    """More comments of a run with a body than journaled calls of that run asking for it."""
    asked = Counter(
        (c["run_id"], _arguments(c).get("body")) for c in calls if c["tool"] == "post_comment"
    )
    made = Counter((c["created_by_run_id"], c["body"]) for c in comments if c["created_by_run_id"])
    return [
        Violation(
            "tool_executed_twice", f"run {run}: {body!r} made {n}, asked {asked[(run, body)]}"
        )
        for (run, body), n in made.items()
        if body and body.startswith("chaos ") and n > asked[(run, body)]
    ]


def unsettled_tasks(issues: list[Any], runs: list[dict], holds: list[Any]) -> list[Violation]:
    """Every task ends done or held with a reason; no run of it is left active."""
    held = {h["issue_id"] for h in holds if (h["reason"] or "").strip()}
    found = [
        Violation("run_not_terminal", f"run {r['id']} of issue {r['issue_id']}: {r['status']}")
        for r in runs
        if r["status"] in ACTIVE
    ]
    succeeded = {r["issue_id"] for r in runs if r["status"] == "succeeded"}
    for issue in issues:
        if issue not in succeeded and issue not in held:
            codes = sorted({str(r["error_code"]) for r in runs if r["issue_id"] == issue})
            found.append(Violation("task_neither_done_nor_held", f"issue {issue}: {codes}"))
    return found


def turns_started_twice(runner_dirs: list[Path]) -> list[Violation]:
    """A turn of a run started by two processes (each runner records the turns it started)."""
    started: Counter[tuple[str, int]] = Counter()
    for folder in runner_dirs:
        for record in folder.glob("runs/*/turns.json"):
            try:
                entries = json.loads(record.read_text())
            except (OSError, ValueError):
                continue
            for entry in entries:
                started[(record.parent.name, int(entry["turn"]))] += 1
    return [
        Violation("provider_started_twice", f"run {run} turn {turn}: {n} starts")
        for (run, turn), n in started.items()
        if n > 1
    ]


TRACEBACK = "Traceback (most recent call last)"


def tracebacks_logged(logs: list[Path]) -> list[Violation]:
    """A traceback in a control plane's or a runner's log: a failure nothing handled.
    A fault the code expects is one line (the database is away, a link dropped)."""
    found = []
    for path in logs:
        try:
            lines = path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            continue
        for number, line in enumerate(lines, 1):
            if TRACEBACK in line:
                try:
                    said = str(json.loads(line).get("message", "")).strip()
                except (ValueError, AttributeError):
                    said = line.strip()[:200]  # a text log: the traceback's own line
                found.append(Violation("traceback_logged", f"{path.name} line {number}: {said}"))
    return found


def _arguments(call: dict) -> dict:
    args = call["arguments"]
    return json.loads(args) if isinstance(args, str) else dict(args or {})


def _log_entries(path: Path) -> list[dict]:
    entries = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue  # a line cut short by a kill
    return entries


async def _fetch(url: str, sql: str, *args: Any) -> list[dict]:
    conn = await connect(url)
    try:
        return [dict(r) for r in await conn.fetch(sql, *args)]
    finally:
        await conn.close()
