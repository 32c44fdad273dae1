"""The engine in memory: a real PostgreSQL, the real engine, runners without sockets.

``make_world`` builds one replica's engine with an ``echo`` provider kind
(played by the memory runner: no driver is made), a company and its agent;
the ``world`` fixture (``tests/engine/conftest.py``) starts it.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from dataclasses import dataclass
from typing import Any

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.providers import ProviderCapabilities, ProviderKind
from sqlalchemy import select

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.container import EngineParts
from paperclip.domain.agents.provider_configs import ProviderConfigs
from paperclip.engine.engine import EngineOptions, RunEngine
from paperclip.models import Issue, Run, RunEvent, RunTurn
from paperclip.wire import messages as wire
from tests.support.memory import MemoryRunner

PROVIDER = "echo"


class EchoProvider:
    """A provider kind for claims; the memory runner plays its part, so no driver is made."""

    def __init__(self, capabilities: ProviderCapabilities | None = None) -> None:
        self.capabilities = capabilities or ProviderCapabilities()

    @hookimpl
    def paperclip_providers(self) -> list[ProviderKind]:
        return [
            ProviderKind(
                name=PROVIDER,
                capabilities=self.capabilities,
                create_driver=lambda context: None,  # type: ignore[arg-type,return-value]
            )
        ]


@dataclass
class World:
    engine: RunEngine
    container: Any
    company_id: uuid.UUID
    agent_id: uuid.UUID
    check_config: Any

    async def connect(
        self, runner_id: uuid.UUID, peer: MemoryRunner | None = None, **hello: Any
    ) -> tuple[MemoryRunner, asyncio.Task[None]]:
        peer = peer or MemoryRunner()
        runner = await self._runner_row(runner_id)
        task = asyncio.create_task(self.engine.serve_runner(runner, peer.transport))
        peer.hello([PROVIDER], **hello)
        await peer.expect(wire.Welcome)
        return peer, task

    async def _runner_row(self, runner_id: uuid.UUID) -> Any:
        from paperclip.models import Runner

        async with self.container.sessions()() as session:
            return await session.get(Runner, runner_id)

    async def new_runner(self) -> uuid.UUID:
        row, _ = await self.container.runners().create(f"memory-{uuid.uuid4().hex[:8]}")
        return row.id

    async def assign(self, title: str = "Fix the build") -> uuid.UUID:
        issue = await self.container.issues().create(
            LOCAL_OPERATOR,
            self.company_id,
            title=title,
            description="The build is red.",
            status="todo",
            priority="medium",
            assignee_agent_id=self.agent_id,
            parent_id=None,
        )
        return issue.id

    async def run(self, run_id: uuid.UUID) -> Run:
        async with self.container.sessions()() as session:
            run = await session.get(Run, run_id)
            assert run is not None
            return run

    async def turn(self, run_id: uuid.UUID, number: int) -> RunTurn | None:
        async with self.container.sessions()() as session:
            return (
                await session.execute(
                    select(RunTurn).where(RunTurn.run_id == run_id, RunTurn.number == number)
                )
            ).scalar_one_or_none()

    async def issue_status(self, issue_id: uuid.UUID) -> str:
        async with self.container.sessions()() as session:
            issue = await session.get(Issue, issue_id)
            assert issue is not None
            return issue.status

    async def events(self, run_id: uuid.UUID) -> list[str]:
        async with self.container.sessions()() as session:
            rows = await session.execute(
                select(RunEvent.type).where(RunEvent.run_id == run_id).order_by(RunEvent.seq)
            )
            return list(rows.scalars())

    async def until_ended(self, run_id: uuid.UUID, within: float = 10) -> Run:
        return await eventually(lambda: self.run(run_id), lambda r: r.finished_at, within)


async def eventually(fetch: Any, done: Any, within: float = 10, step: float = 0.05) -> Any:
    """Poll the database until ``done(await fetch())``; that value."""
    deadline = asyncio.get_running_loop().time() + within
    for _ in itertools.count():
        value = await fetch()
        if done(value):
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"not reached in {within} s: {value!r}")
        await asyncio.sleep(step)
    raise AssertionError("unreachable")


async def make_world(
    container: Any, plugin_host: Any, register_plugin: Any, **engine_options: Any
) -> tuple[World, RunEngine]:
    """A world on ``container``, its engine not started yet."""
    if "echo-provider" not in {r.name for r in plugin_host.records()}:
        register_plugin(EchoProvider(), name="echo-provider")
    check_config = ProviderConfigs(plugin_host.providers()).check
    company = await container.companies().create(LOCAL_OPERATOR, name="Memory", issue_prefix=None)
    agent = await container.agents().create(
        LOCAL_OPERATOR,
        company.id,
        name=f"coder-{uuid.uuid4().hex[:6]}",
        role="",
        provider=PROVIDER,
        provider_config={},
        check_config=check_config,
    )
    options = {"lease_seconds": 2.0, **engine_options}
    engine = build_engine(
        container, plugin_host, instance=f"memory-replica-{uuid.uuid4().hex[:6]}", **options
    )
    return World(engine, container, company.id, agent.id, check_config), engine


def build_engine(container: Any, plugin_host: Any, **options: Any) -> RunEngine:
    """A replica's engine on ``container``'s database, wired as the server wires its own;
    ``options`` are ``EngineOptions`` fields, and a ``clock`` or ``prices`` of the test's."""
    given = {name: options.pop(name) for name in ("clock", "prices") if name in options}
    parts = EngineParts(
        options=EngineOptions(**options),
        sessions=container.sessions,
        plugins=plugin_host,
        database=container.engine,
        journal=container.journal_engine,
        numbers=container.issue_numbers,
        **given,
    )
    return parts.run_engine()


async def started(peer: MemoryRunner, **fields: Any) -> wire.StartTurn:
    return await peer.expect(wire.StartTurn, **fields)


async def call(peer: MemoryRunner, start: wire.StartTurn, tool: str, **arguments: Any):
    call_id = uuid.uuid4().hex
    peer.send(
        wire.ToolCall(
            seq=0,
            run_id=start.run_id,
            call_id=call_id,
            tool=tool,
            arguments=arguments,
            token=start.token,
        )
    )
    return await peer.expect(wire.ToolResult, call_id=call_id)


def finished(start: wire.StartTurn, **fields: Any) -> wire.TurnFinished:
    return wire.TurnFinished(
        seq=0, run_id=start.run_id, turn=start.turn, **{"status": "completed", **fields}
    )
