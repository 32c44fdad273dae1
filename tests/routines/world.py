"""Routines in memory: the real engine on a real PostgreSQL, its routine scheduler on a fake
clock that a test moves (no sleeping), and helpers to read what the slots made."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.engine.scheduling.routines import Pass
from paperclip.models import Issue, RoutineExecution, WakeRequest
from tests.engine.memory_world import World, make_world


class FakeClock:
    """The scheduler's now: still until a test moves it."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def set(self, *args: int) -> None:
        self.now = datetime(*args, tzinfo=UTC)

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@dataclass
class RoutineWorld:
    world: World
    clock: FakeClock

    @property
    def container(self) -> Any:
        return self.world.container

    async def tick(self) -> Pass:
        """One scheduler pass at the clock's now (the engine's own loop is stopped)."""
        return await self.world.engine.routines.tick()

    async def at(self, *when: int) -> Pass:
        self.clock.set(*when)
        return await self.tick()

    async def routine(self, **fields: Any) -> uuid.UUID:
        values = {
            "name": f"routine-{uuid.uuid4().hex[:6]}",
            "agent_id": self.world.agent_id,
            "title": "Report {{date}} {{time}}",
            **fields,
        }
        routine, _ = await self.container.routines().create(
            LOCAL_OPERATOR, self.world.company_id, values
        )
        return routine.id

    async def executions(self, routine_id: uuid.UUID) -> list[RoutineExecution]:
        async with self.container.sessions()() as session:
            rows = await session.execute(
                select(RoutineExecution)
                .where(RoutineExecution.routine_id == routine_id)
                .order_by(RoutineExecution.slot_at, RoutineExecution.created_at)
            )
            return list(rows.scalars())

    async def count(self, model: Any, **where: Any) -> int:
        async with self.container.sessions()() as session:
            stmt = (
                select(func.count())
                .select_from(model)
                .where(
                    model.company_id == self.world.company_id,
                    *(getattr(model, k) == v for k, v in where.items()),
                )
            )
            return int((await session.execute(stmt)).scalar_one())

    async def issues(self) -> int:
        return await self.count(Issue)

    async def wakes(self, **where: Any) -> list[WakeRequest]:
        async with self.container.sessions()() as session:
            rows = await session.execute(
                select(WakeRequest)
                .where(
                    WakeRequest.company_id == self.world.company_id,
                    *(getattr(WakeRequest, k) == v for k, v in where.items()),
                )
                .order_by(WakeRequest.created_at)
            )
            return list(rows.scalars())


async def routine_world(
    container: Any, plugin_host: Any, register_plugin: Any, start: datetime
) -> tuple[RoutineWorld, Any]:
    """A started engine whose routine scheduler reads a fake clock and passes only when told."""
    clock = FakeClock(start)
    world, engine = await make_world(container, plugin_host, register_plugin, clock=clock)
    await engine.start()
    for loop in engine._loops:
        if loop.get_name() == "routine-scheduler":
            loop.cancel()  # the test passes, at the times it sets
    return RoutineWorld(world, clock), engine
