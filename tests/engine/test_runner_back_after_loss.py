"""A runner back after its run was lost replays that turn's end; the link stays up.

A runner away longer than the runner-gone bound comes back to a run whose turn
was settled lost (phase ``resuming``: nobody's until a scheduler takes it). It
replays what it had not seen acknowledged, the lost turn's end among it. That
message is late, not a sign of a stale link: closing the link for it would
close it again at every reconnect, and the run's next turn needs that link.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.engine.test_runner_protocol import Peer, assigned_issue, started
from tests.support.db import query
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def phase(stack, run_id: str) -> str:
    rows = query(stack.database_url, "SELECT phase FROM runs WHERE id = $1", uuid.UUID(run_id))
    return rows[0]["phase"]


def test_a_lost_turns_end_replayed_on_return_keeps_the_link_and_the_run_goes_on(stack):
    stack.extra_env["PAPERCLIP_RUNNER_GONE_SECONDS"] = "0"
    stack.start_server()

    async def scenario():
        credential = stack.runner_credential()
        peer = Peer(stack.url(), credential)
        await peer.open()
        ctx = await asyncio.to_thread(assigned_issue, stack)
        first = await started(peer, ctx["issue"]["id"])
        run_id = first["run_id"]
        await peer.send("turn_started", run_id=run_id, turn=1, session_ref=None)
        await peer.close()  # away, its turn's end not sent yet
        await asyncio.to_thread(
            wait_until,
            lambda: phase(stack, run_id) == "resuming",
            60,
            message="turn 1 settled lost",
        )
        # The same runner process, back: it replays the end of the turn it was running.
        back = Peer(stack.url(), credential, instance=peer.instance)
        back.seq = peer.seq
        await back.open(received_seq=first["seq"])
        await back.send(
            "turn_finished", run_id=run_id, turn=1, status="completed", session_ref=None
        )
        try:
            second = await started(back, ctx["issue"]["id"], turn=2)
        except TimeoutError:
            raise AssertionError(stack.servers[0].tail(60)) from None
        assert second["run_id"] == run_id
        assert back.ws.state.name == "OPEN"  # the same connection took the next turn
        await back.close()

    asyncio.run(scenario())
    turns = query(
        stack.database_url,
        "SELECT number, status FROM run_turns WHERE run_id = (SELECT id FROM runs "
        "WHERE issue_id = (SELECT id FROM issues ORDER BY created_at DESC LIMIT 1)) ORDER BY number",
    )
    assert [t["number"] for t in turns][:2] == [1, 2]
    assert turns[0]["status"] == "lost"
