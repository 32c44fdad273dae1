"""The ``start_turn`` of a run's later turn: a restart continuation, a fresh retry, a report nudge.

The first turn's message is made with its run (``scheduling``); a later turn's
is made here, from the turn's persisted input, for the runner it goes to. It is
queued in the caller's transaction (the outbox), so it leaves only if that
commits; the caller delivers it after the commit.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.domain.runs.run_tokens import new_run_token, revoke_run_tokens
from paperclip.engine.links.link import RunnerLink
from paperclip.engine.logs import outbox
from paperclip.engine.workspaces.placement import workspace_of
from paperclip.models import Agent, Run, RunTurn
from paperclip.wire.messages import StartTurn


async def new_token_for(session: AsyncSession, run: Run) -> str:
    """The run's token for its next turn; the earlier ones die (their provider is gone)."""
    await revoke_run_tokens(session, run.id)
    return new_run_token(session, run)


async def queue_later_turn(
    session: AsyncSession, run: Run, turn: RunTurn, link: RunnerLink
) -> tuple[int, StartTurn]:
    """Queue ``turn``'s ``start_turn`` for ``link``'s runner: its outbox seq and the message."""
    agent = await session.get(Agent, run.agent_id)
    assert agent is not None and turn.input is not None
    workspace = await workspace_of(session, run.issue_id, link.workspace_dir)
    start = StartTurn(
        seq=0,
        run_id=run.id,
        provider=run.provider,
        turn=turn.number,
        config=agent.provider_config,
        prompt=str(turn.input.get("prompt") or ""),
        system=turn.input.get("system"),
        session_ref=turn.session_ref,
        token=await new_token_for(session, run),
        issue_id=run.issue_id,
        workspace=workspace.spec if workspace is not None else None,
        agent_name=agent.name,
    )
    return await outbox.enqueue_one(session, link.runner_id, start), start
