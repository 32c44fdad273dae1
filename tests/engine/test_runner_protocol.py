"""The runner protocol, spoken by a scripted runner peer against a real control-plane process."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
import websockets

from paperclip.wire import messages as wire
from tests.support.db import query

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


class Peer:
    def __init__(self, base: str, credential: str, instance: str | None = None) -> None:
        self.url = base.replace("http", "ws", 1) + wire.PATH
        self.credential = credential
        self.instance = instance or f"peer-{uuid.uuid4().hex[:6]}"
        self.seq = 0
        self.inbox: asyncio.Queue[dict] = asyncio.Queue()

    async def open(
        self, received_seq: int = 0, runs: list | None = None, features: list | None = None
    ) -> dict:
        self.ws = await websockets.connect(
            self.url, additional_headers={"Authorization": f"Bearer {self.credential}"}
        )
        await self.ws.send(
            json.dumps(
                {
                    "type": "hello",
                    "protocol": wire.PROTOCOL,
                    "runner_instance": self.instance,
                    "providers": ["codex"],
                    "received_seq": received_seq,
                    "runs": runs or [],
                    "features": features or [],
                }
            )
        )
        welcome = json.loads(await self.ws.recv())
        self.reader = asyncio.create_task(self._read())
        return welcome

    async def _read(self) -> None:
        async for raw in self.ws:
            await self.inbox.put(json.loads(raw))

    async def expect(self, kind: str, within: float = 30) -> dict:
        while True:
            message = await asyncio.wait_for(self.inbox.get(), within)
            if message["type"] == kind:
                return message

    async def send(self, kind: str, seq: int | None = None, **fields) -> int:
        if seq is None:
            self.seq += 1
            seq = self.seq
        await self.ws.send(json.dumps({"type": kind, "seq": seq, **fields}))
        return seq

    async def close(self) -> None:
        self.reader.cancel()
        await self.ws.close()


@pytest.fixture
def control_plane(stack):
    stack.start_server()
    return stack


def assigned_issue(stack) -> dict:
    ctx = stack.setup_issue({"turns": [[]]})
    stack.assign(ctx)
    return ctx


async def started(peer: Peer, issue_id: str | None = None, turn: int = 1) -> dict:
    """The next ``start_turn`` (of that issue's run, and that turn, when given), acknowledged.

    The tests of a module share a database: an earlier test's run may go on here."""
    while True:
        start = await peer.expect("start_turn", within=120)
        await peer.ws.send(json.dumps({"type": "ack", "upto": start["seq"]}))
        if issue_id is None or (start["issue_id"] == issue_id and start["turn"] == turn):
            return start


async def a_run_started(stack) -> tuple[Peer, dict, dict]:
    """A scripted runner connected, an issue assigned, and its run's first turn started there."""
    peer = Peer(stack.url(), stack.runner_credential())
    await peer.open()
    ctx = await asyncio.to_thread(assigned_issue, stack)
    return peer, ctx, await started(peer, ctx["issue"]["id"])


def test_replayed_messages_are_deduplicated(control_plane):
    stack = control_plane

    async def scenario():
        peer, ctx, start = await a_run_started(stack)
        run_id = start["run_id"]
        for n in (1, 2):
            await peer.send("event", run_id=run_id, event_type="item/completed", payload={"n": n})
            assert (await peer.expect("ack"))["upto"] == n
        # the same seqs again, as after a reconnect: acknowledged, not stored twice
        for n in (1, 2):
            await peer.send(
                "event", seq=n, run_id=run_id, event_type="item/completed", payload={"n": n}
            )
            assert (await peer.expect("ack"))["upto"] == 2
        events = await asyncio.to_thread(stack.events, ctx, run_id)
        assert [e["payload"]["n"] for e in events] == [1, 2]
        await peer.close()

    asyncio.run(scenario())


def test_tool_calls_need_the_runs_own_token(control_plane):
    stack = control_plane

    async def scenario():
        peer = Peer(stack.url(), stack.runner_credential())
        await peer.open()
        first = await asyncio.to_thread(assigned_issue, stack)
        start_a = await started(peer)
        await asyncio.to_thread(assigned_issue, stack)
        start_b = await started(peer)
        # run B's id with run A's token: refused, nothing journaled for B
        await peer.send(
            "tool_call",
            run_id=start_b["run_id"],
            call_id="x1",
            tool="post_comment",
            arguments={"body": "should not land"},
            token=start_a["token"],
        )
        refused = await peer.expect("tool_result")
        assert refused["is_error"] and refused["content"]["error"]["code"] == "run_token_refused"
        rows = await asyncio.to_thread(
            query,
            stack.database_url,
            "SELECT count(*) AS n FROM tool_calls WHERE run_id = $1",
            uuid.UUID(start_b["run_id"]),
        )
        assert rows[0]["n"] == 0
        # its own token works, and a replayed call gets the saved result, not a second write
        for _ in range(2):
            await peer.send(
                "tool_call",
                run_id=start_a["run_id"],
                call_id="c1",
                tool="post_comment",
                arguments={"body": "once"},
                token=start_a["token"],
            )
        results = [await peer.expect("tool_result") for _ in range(2)]
        assert {r["content"]["comment_id"] for r in results} and not any(
            r["is_error"] for r in results
        )
        assert len({r["content"]["comment_id"] for r in results}) == 1
        comments = await asyncio.to_thread(stack.comments, first)
        assert [c["body"] for c in comments if c["author_agent_id"]] == ["once"]
        await peer.close()

    asyncio.run(scenario())


def test_a_burst_of_calls_and_events_is_processed_once_each(control_plane):
    """Frames that arrive together are one batch: each call answered once, each event stored once."""
    stack = control_plane

    async def scenario():
        peer = Peer(stack.url(), stack.runner_credential())
        await peer.open()
        ctx = await asyncio.to_thread(assigned_issue, stack)
        start = await started(peer)
        run_id, token = start["run_id"], start["token"]

        async def progress(call_id: str) -> None:
            await peer.send(
                "tool_call",
                run_id=run_id,
                call_id=call_id,
                tool="report_progress",
                token=token,
                arguments={"summary": call_id},
            )

        bursts = 30
        for n in range(bursts):  # no waiting in between: they queue up on the server
            await progress(f"c{n}")
            for part in (1, 2):  # consecutive events share a transaction
                await peer.send(
                    "event",
                    run_id=run_id,
                    event_type="item/completed",
                    payload={"n": n, "part": part},
                )
            await progress(f"d{n}")
        answered: list[str] = []
        while len(answered) < 2 * bursts:
            answered.append((await peer.expect("tool_result"))["call_id"])
        with pytest.raises(TimeoutError):  # and nothing twice
            answered.append((await peer.expect("tool_result", within=1.5))["call_id"])
        assert sorted(answered) == sorted(
            [f"c{n}" for n in range(bursts)] + [f"d{n}" for n in range(bursts)]
        )
        events = await asyncio.to_thread(stack.events, ctx, run_id)
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        kinds = [e["type"] for e in events]
        assert kinds.count("progress") == 2 * bursts
        provider = [
            (e["payload"]["n"], e["payload"]["part"]) for e in events if e["type"] != "progress"
        ]
        assert provider == [(n, part) for n in range(bursts) for part in (1, 2)]  # in order, once
        await peer.close()

    asyncio.run(scenario())


def test_a_replayed_call_gets_its_saved_result_and_a_retried_command_its_receipt(control_plane):
    stack = control_plane

    async def scenario():
        peer = Peer(stack.url(), stack.runner_credential())
        await peer.open()
        await asyncio.to_thread(assigned_issue, stack)
        start = await started(peer)
        args = dict(
            run_id=start["run_id"],
            tool="post_comment",
            token=start["token"],
            arguments={"body": "just once", "command_id": "say-it"},
        )
        seq = await peer.send("tool_call", call_id="p1", **args)
        first = await peer.expect("tool_result")
        assert first["content"]["receipt"]["outcome"] == "applied"
        # The same runner process reconnects and replays the call (same seq, same id).
        await peer.close()
        await peer.open(received_seq=first["seq"], runs=[{"run_id": start["run_id"]}])
        await peer.send("tool_call", seq=seq, call_id="p1", **args)
        assert (await peer.expect("ack"))["upto"] >= seq
        # The model retries the action under a new call: same command, no second write.
        await peer.send("tool_call", call_id="p2", **args)
        retried = await peer.expect("tool_result")
        assert retried["call_id"] == "p2"
        assert retried["content"]["receipt"]["outcome"] == "duplicate"
        assert retried["content"]["comment_id"] == first["content"]["comment_id"]
        rows = await asyncio.to_thread(
            query,
            stack.database_url,
            "SELECT count(*) AS n FROM comments WHERE created_by_run_id = $1",
            uuid.UUID(start["run_id"]),
        )
        assert rows[0]["n"] == 1
        await peer.close()

    asyncio.run(scenario())


def test_a_result_sent_unsequenced_and_missed_comes_again_when_hello_names_its_call(
    control_plane,
):
    stack = control_plane
    unsequenced = [wire.FEATURE_UNSEQUENCED_RESULTS]

    async def scenario():
        peer = Peer(stack.url(), stack.runner_credential())
        await peer.open(features=unsequenced)
        await asyncio.to_thread(assigned_issue, stack)
        start = await started(peer)
        run_id, token = start["run_id"], start["token"]
        progress = dict(run_id=run_id, tool="report_progress", token=token)
        await peer.send("tool_call", call_id="r1", arguments={"summary": "one"}, **progress)
        first = await peer.expect("tool_result")
        assert (first["seq"], first["call_id"], first["is_error"]) == (0, "r1", False)
        # The next result is missed: the connection ends before the runner reads it.
        seq = await peer.send("tool_call", call_id="r2", arguments={"summary": "two"}, **progress)
        while (await peer.expect("ack"))["upto"] < seq:
            pass  # once acknowledged (durable), the runner forgets its call
        await peer.close()
        peer.inbox = asyncio.Queue()
        await peer.open(
            received_seq=start["seq"],
            runs=[{"run_id": run_id, "turn": 1, "pending_calls": ["r2"]}],
            features=unsequenced,
        )
        again = await peer.expect("tool_result")
        assert again["call_id"] == "r2" and again["seq"] > start["seq"]  # sequenced this time
        rows = await asyncio.to_thread(
            query,
            stack.database_url,
            "SELECT call_id, status, result FROM tool_calls WHERE run_id = $1 ORDER BY id",
            uuid.UUID(run_id),
        )
        assert [(r["call_id"], r["status"]) for r in rows] == [("r1", "settled"), ("r2", "settled")]
        assert json.loads(rows[1]["result"]) == again["content"]
        events = await asyncio.to_thread(
            query,
            stack.database_url,
            "SELECT count(*) AS n FROM run_events WHERE run_id = $1 AND type = 'progress'",
            uuid.UUID(run_id),
        )
        assert events[0]["n"] == 2  # each report's effect once
        await peer.close()

    asyncio.run(scenario())


def test_messages_about_an_ended_run_close_it_instead_of_the_link(control_plane):
    stack = control_plane

    async def scenario():
        peer = Peer(stack.url(), stack.runner_credential())
        await peer.open()
        await asyncio.to_thread(assigned_issue, stack)
        start = await started(peer)
        run_id = start["run_id"]
        finished = dict(run_id=run_id, status="completed", session_ref=None, error=None)
        seq = await peer.send("turn_finished", **finished)
        assert (await peer.expect("close"))["run_id"] == run_id
        # replays of the end, and late calls, are answered; the link stays up
        await peer.send("turn_finished", **finished)
        late = await peer.send(
            "tool_call",
            run_id=run_id,
            call_id="late",
            tool="post_comment",
            arguments={"body": "too late"},
            token=start["token"],
        )
        refused = await peer.expect("tool_result")
        assert refused["run_id"] == run_id and refused["content"]["error"]["code"] == "run_ended"
        assert seq < late
        assert peer.ws.state.name == "OPEN"  # still the same connection
        await peer.close()

    asyncio.run(scenario())


def test_bad_credentials_and_bad_hellos_are_closed_with_codes(control_plane):
    stack = control_plane

    async def scenario():
        url = stack.url().replace("http", "ws", 1) + wire.PATH
        async with websockets.connect(
            url, additional_headers={"Authorization": "Bearer nope"}
        ) as ws:
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await ws.recv()
            assert closed.value.rcvd.code == wire.CLOSE_UNAUTHORIZED
        credential = stack.runner_credential()
        async with websockets.connect(
            url, additional_headers={"Authorization": f"Bearer {credential}"}
        ) as ws:
            await ws.send(json.dumps({"type": "event", "seq": 1}))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await ws.recv()
            assert closed.value.rcvd.code == wire.CLOSE_PROTOCOL_ERROR

    asyncio.run(scenario())


def test_an_unknown_provider_fails_the_run_and_says_which(control_plane):
    stack = control_plane

    def assign_to_unknown_provider() -> tuple[dict, dict]:
        with stack.api() as api:
            company = api.post("/companies", json={"name": "P"}).json()
            agent = api.post(
                f"/companies/{company['id']}/agents", json={"name": "x", "provider": "codex"}
            ).json()
            # Its plugin uninstalled since: an unknown provider is refused when an agent is made.
            query(
                stack.database_url,
                "UPDATE agents SET provider = 'nosuch' WHERE id = $1",
                uuid.UUID(agent["id"]),
            )
            issue = api.post(
                f"/companies/{company['id']}/issues",
                json={"title": "t", "assignee_agent_id": agent["id"]},
            ).json()
        return company, issue

    def run_of(company: dict, issue: dict) -> dict | None:
        with stack.api() as api:
            runs = api.get(
                f"/companies/{company['id']}/runs", params={"issue_id": issue["id"]}
            ).json()
        return runs["items"][0] if runs["items"] else None

    async def scenario():
        peer = Peer(stack.url(), stack.runner_credential())  # a runner is there, for codex
        await peer.open()
        company, issue = await asyncio.to_thread(assign_to_unknown_provider)
        run = None
        for _ in range(100):
            run = await asyncio.to_thread(run_of, company, issue)
            if run:
                break
            await asyncio.sleep(0.1)
        assert run is not None
        assert run["status"] == "failed" and run["error_code"] == "provider_not_installed"
        assert "nosuch" in run["error_message"]
        await peer.close()

    asyncio.run(scenario())


def test_revoking_a_runner_closes_its_open_connection(control_plane):
    stack = control_plane

    async def scenario():
        peer = Peer(stack.url(), stack.runner_credential())
        await peer.open()
        await asyncio.to_thread(
            query,
            stack.database_url,
            "UPDATE runners SET revoked_at = now() WHERE instance = $1",
            peer.instance,
        )
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(peer.reader, 15)  # the read loop ends with the link
        assert closed.value.rcvd.code == wire.CLOSE_UNAUTHORIZED

    asyncio.run(scenario())


def test_what_a_turn_given_up_sends_late_stays_with_that_turn(control_plane):
    """A runner that was away replays what its provider sent once a replica adopts the run for
    its next turn. Those events (a steer's acknowledgement, what read it) belong to the turn
    that emitted them: logged under the next turn, the steer ledger would take the read for
    that turn's input and carry the steer again. Its calls act for no one (its token died
    with the next turn's start), and its session does not replace the next turn's."""
    stack = control_plane

    async def scenario():
        peer, ctx, first = await a_run_started(stack)
        run_id = first["run_id"]
        await peer.send("turn_started", run_id=run_id, turn=1, session_ref=None)
        await peer.send(
            "tool_call", run_id=run_id, call_id="early", tool="get_task_context",
            token=first["token"],
        )  # fmt: skip
        assert not (await peer.expect("tool_result")).get("is_error")
        await peer.send(
            "turn_finished", run_id=run_id, turn=1, status="interrupted", error_code="turn_lost"
        )
        # The reconciler settles the lost turn at its next pass; the run goes on in turn 2.
        second = await started(peer, ctx["issue"]["id"], turn=2)
        # A call turn 1's provider made, arriving now: its token died with turn 2's start,
        # even though this replica had seen it as the run's live token.
        await peer.send(
            "tool_call", run_id=run_id, call_id="late", tool="get_task_context",
            token=first["token"],
        )  # fmt: skip
        refused = await peer.expect("tool_result")
        assert refused["content"]["error"]["code"] == "run_token_refused", refused
        assert second["token"] != first["token"]
        await peer.send("turn_started", run_id=run_id, turn=2, session_ref="thread-2")
        await peer.send("turn_started", run_id=run_id, turn=1, session_ref="thread-1")
        # What turn 1's provider emitted, arriving now; then turn 2's, and one whose turn
        # is not said (an older runner).
        await peer.send("steer_result", run_id=run_id, message_id="m-1", acknowledged=True, turn=1)
        read = {"item": {"type": "userMessage", "id": "msg_2", "content": []}}
        await peer.send("event", run_id=run_id, event_type="item/completed", payload=read, turn=1)
        await peer.send("event", run_id=run_id, event_type="turn/started", payload={}, turn=2)
        last = await peer.send("event", run_id=run_id, event_type="legacy", payload={})
        while (await peer.expect("ack"))["upto"] < last:
            pass
        events = await asyncio.to_thread(stack.events, ctx, run_id)
        logged = [(e["type"], e["turn"]) for e in events if e["type"] != "run.finished"]
        assert logged[-4:] == [
            ("steering_acknowledgement", 1),
            ("item/completed", 1),
            ("turn/started", 2),
            ("legacy", 2),  # an older runner's event: the run's current turn
        ]
        [run] = await asyncio.to_thread(
            query, stack.database_url, "SELECT session_ref FROM runs WHERE id = $1",
            uuid.UUID(run_id),
        )  # fmt: skip
        assert run["session_ref"] == "thread-2"
        await peer.close()

    asyncio.run(scenario())
