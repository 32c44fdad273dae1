"""An in-memory engine whose provider can steer and resume, with a run in a live turn."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from paperclip_hookspecs.providers import ProviderCapabilities

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.engine.turns.steering import RunSteering
from paperclip.models import AgentStatus
from paperclip.wire import messages as wire
from tests.engine.memory_world import EchoProvider, World, eventually, make_world, started
from tests.support.memory import MemoryRunner

STEERABLE = ProviderCapabilities(steer=True, resume=True, mcp_tools=True)


@dataclass
class LiveTurn:
    world: World
    peer: MemoryRunner
    start: wire.StartTurn
    issue_id: uuid.UUID
    steering: RunSteering

    async def comment(self, body: str, issue_id: uuid.UUID | None = None) -> uuid.UUID:
        row = await self.world.container.comments().create(
            LOCAL_OPERATOR, self.world.company_id, issue_id or self.issue_id, body=body
        )
        return row.id


async def running_turn_of(world: World, peer: MemoryRunner, issue_id: uuid.UUID) -> wire.StartTurn:
    """The first turn of ``issue_id``'s run, which ``peer`` started and which now runs."""
    while True:  # wakes other tests left queued may be claimed onto this runner too
        start = await started(peer)
        if (await world.run(start.run_id)).issue_id == issue_id:
            break
    # Comments the test writes wake the agent; paused, its wakes stay queued, so no claim
    # races the test's writes (the running turn goes on).
    await world.container.agents().set_status(
        LOCAL_OPERATOR, world.company_id, world.agent_id, AgentStatus.PAUSED
    )
    peer.send(wire.TurnStarted(seq=0, run_id=start.run_id, turn=start.turn, session_ref="t-1"))
    await eventually(
        lambda: world.turn(start.run_id, start.turn), lambda t: t and t.status == "running"
    )
    return start


async def live_turn(world: World) -> LiveTurn:
    """A run of ``world`` whose first turn the (memory) runner started."""
    peer, _ = await world.connect(await world.new_runner())
    issue_id = await world.assign()
    start = await running_turn_of(world, peer, issue_id)
    steering = RunSteering(
        world.container.sessions(), world.engine.calls.plugins, world.engine.connections.links
    )
    return LiveTurn(world, peer, start, issue_id, steering)


async def steerable_world(container, plugin_host, register_plugin):
    register_plugin(EchoProvider(STEERABLE), name="echo-provider")
    return await make_world(container, plugin_host, register_plugin)
