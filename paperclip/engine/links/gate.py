"""Whether a runner's message is about a run this replica controls, and what to do when not."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.engine.links.link import RunnerLink
from paperclip.engine.logs import outbox
from paperclip.engine.ownership.fence import StaleEpochError
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.models import Run, RunStatus
from paperclip.wire.messages import Close


class ControlGate:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], ownership: RunOwnership) -> None:
        self.sessions = sessions
        self.ownership = ownership

    async def controls(self, link: RunnerLink, run_id: uuid.UUID) -> bool:
        """Whether this replica controls ``run_id``.

        A message about a run that has ended (or never existed) is answered by
        telling the runner to close it, not by dropping the link: a runner that
        replays after a restart must not be disconnected in a loop. One about a
        run waiting for a runner to go on (phase ``resuming``) is dropped and
        the link kept: its turn was settled lost while the runner was away, what
        the runner replays of that turn is late, and the run is nobody's until a
        scheduler takes it, which needs this very link up. An active run
        controlled by another replica means this link is stale:
        StaleEpochError, and the caller closes the link.
        """
        if run_id in self.ownership:
            return True
        async with self.sessions.begin() as session:
            found = (
                await session.execute(select(Run.status, Run.phase).where(Run.id == run_id))
            ).one_or_none()
            status = found.status if found is not None else None
            if status is not None and not RunStatus(status).terminal:
                if found.phase == "resuming":
                    return False
                raise StaleEpochError(f"this replica does not control run {run_id}")
            if status is not None:
                await outbox.enqueue_one(session, link.runner_id, Close(seq=0, run_id=run_id))
        link.kick()
        return False
