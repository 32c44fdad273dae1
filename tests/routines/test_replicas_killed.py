"""Two control-plane replicas, a routine every minute, SIGKILLs at each named moment of a slot.

Both replicas read one simulated clock (``PAPERCLIP_TEST_CLOCK``: the same start,
anchor and speed), so simulated hours pass in real seconds. One replica at a
time is started again armed at a failpoint between the slot's claim, its issue
and its wake (``kill@n``: the n-th time it passes there), dies there by SIGKILL,
and starts again unarmed, while the other goes on. Then, for every minute of
the window: one execution, started, with one issue and one wake; and nothing
else was written (no issue or wake of a slot that rolled back).

The CI version is short and seeded; the long one (docs/routines.md) is the same
test with ``PAPERCLIP_ROUTINE_SOAK_HOURS=24`` (and ``..._SPEED``, ``..._SEED``).
"""

from __future__ import annotations

import os
import random
import signal
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from paperclip.clock import ScaledClock
from tests.support.db import query
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.timeout(1800)]

POINTS = (
    "routines.slot.claimed.before_issue",
    "routines.slot.issue_created.before_wake",
    "routines.slot.woken.before_commit",
)
HOURS = float(os.environ.get("PAPERCLIP_ROUTINE_SOAK_HOURS", "2"))
SPEED = float(os.environ.get("PAPERCLIP_ROUTINE_SOAK_SPEED", "240"))
SEED = int(os.environ.get("PAPERCLIP_ROUTINE_SOAK_SEED", "36"))


def rows(stack, sql: str, *args) -> list[dict]:
    return query(stack.database_url, sql, *args)


def test_every_slot_runs_once_through_sigkills_of_either_replica(stack):
    rng = random.Random(SEED)
    clock = ScaledClock(datetime(2026, 3, 1, tzinfo=UTC), time.time(), SPEED)
    stack.extra_env["PAPERCLIP_TEST_CLOCK"] = (
        f"{clock.start.isoformat()}@{clock.anchor}x{clock.speed}"
    )
    stack.start_server(0)
    stack.start_server(1)
    ctx = stack.setup_issue({"turns": []})  # its agent; no runner: the wakes stay queued
    company = ctx["company"]["id"]
    with stack.api() as api:
        made = api.post(
            f"/companies/{company}/routines",
            json={
                "name": "every minute",
                "agent_id": ctx["agent"]["id"],
                "title": "Slot {{datetime}}",
                "cron": "* * * * *",
                "concurrency": "allow",
                "catch_up": "run_all",
                "catch_up_cap": 1000,
            },
        )
        assert made.status_code == 201, made.text
    routine = uuid.UUID(made.json()["id"])

    def first_slot():
        found = rows(
            stack, "SELECT min(slot_at) AS s FROM routine_executions WHERE routine_id = $1", routine
        )
        return found[0]["s"]

    begin = wait_until(first_slot, 60, 0.05, "the routine's first slot")
    end = begin + timedelta(hours=HOURS)

    kills: dict[str, int] = dict.fromkeys(POINTS, 0)
    order = list(POINTS)
    rng.shuffle(order)
    replica = rng.randrange(2)
    while clock() < end - timedelta(minutes=5) or min(kills.values()) == 0:
        point = (
            order[sum(kills.values()) % len(order)]
            if min(kills.values()) == 0
            else rng.choice(POINTS)
        )
        at = rng.randint(1, 4)
        stack.servers[replica].kill()  # a kill anywhere, then one at the named moment
        stack.extra_env["PAPERCLIP_FAILPOINTS"] = f"{point}=kill@{at}"
        server = stack.start_server(replica)
        stack.extra_env.pop("PAPERCLIP_FAILPOINTS")
        assert server.proc.wait(120) == -signal.SIGKILL, server.tail()
        assert f"failpoint {point} fired" in server.tail(400)
        kills[point] += 1
        stack.start_server(replica)
        replica = 1 - replica

    # Both replicas pass the end of the window (and the grace), then every slot is decided.
    wait_until(lambda: clock() > end + timedelta(minutes=2), 600, 0.2, "the window's end")
    expected = int((end - begin).total_seconds() // 60) + 1

    def decided():
        done = rows(
            stack,
            "SELECT count(*) AS n FROM routine_executions WHERE routine_id = $1 AND slot_at <= $2",
            routine,
            end,
        )
        return done[0]["n"] >= expected

    wait_until(decided, 60, 0.2, "every slot of the window decided")
    for server in stack.servers:
        server.kill()  # nothing moves while the invariants are read

    executions = rows(
        stack,
        "SELECT slot_at, status, issue_id, wake_request_id FROM routine_executions "
        "WHERE routine_id = $1 ORDER BY slot_at",
        routine,
    )
    window = [e for e in executions if e["slot_at"] <= end]
    assert [e["slot_at"] for e in window] == [
        begin + timedelta(minutes=m) for m in range(expected)
    ]  # every minute, none lost, none twice
    assert {e["status"] for e in executions} == {"started"}
    assert all(e["issue_id"] and e["wake_request_id"] for e in executions)
    # Nothing of a rolled-back slot: one issue and one wake per execution, and no others.
    [issues] = rows(
        stack, "SELECT count(*) AS n FROM issues WHERE company_id = $1", uuid.UUID(company)
    )
    assert issues["n"] == len(executions) + 1  # and the fixture's own issue
    wakes = rows(
        stack,
        "SELECT w.issue_id, e.issue_id AS execution_issue FROM wake_requests w "
        "LEFT JOIN routine_executions e ON e.wake_request_id = w.id "
        "WHERE w.company_id = $1 AND w.source = 'routine'",
        uuid.UUID(company),
    )
    assert len(wakes) == len(executions)
    assert all(w["issue_id"] == w["execution_issue"] for w in wakes)
    assert all(n >= 1 for n in kills.values()), kills
    print(f"{len(window)} slots over {HOURS} h simulated, kills at the failpoints: {kills}")
