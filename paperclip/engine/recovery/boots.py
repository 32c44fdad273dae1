"""Controller boots: each start of a control-plane process, and the proof that one is gone.

Some state lives only in a process: the closing controller's cleanup gate of
a session it could not drain. What it guarded may be settled only once that
process is provably gone. An instance id does not say so (a restarted
process may reuse it); a boot does: every start registers a new one and
renews it while it lives. Proving a boot gone retires it, in one update
that only succeeds once it has not been seen for a lease; a retired boot
renews nothing, so the proof cannot be overtaken by the process waking up.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from datetime import timedelta

from paperclip_hookspecs.recovery import OwnerProof
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.engine.loop import keep_running
from paperclip.models import ControllerBoot

log = logging.getLogger(__name__)


class BootRegistry:
    """This process's boot, renewed in the background."""

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], *, instance: str, lease_seconds: float
    ) -> None:
        self.sessions = sessions
        self.instance = instance
        self.ttl = lease_seconds
        self.boot_id = uuid.uuid4()
        self._registered = False

    async def register(self) -> None:
        async with self.sessions.begin() as session:
            session.add(ControllerBoot(boot_id=self.boot_id, instance=self.instance))
        self._registered = True

    async def run(self) -> None:
        """Renew the boot every third of a lease (registering it first, once reachable)."""
        await keep_running(
            self._renew_or_register,
            every=self.ttl / 3,
            log=log,
            failure="the boot %s was not renewed",
            failure_args=(self.boot_id,),
        )

    async def _renew_or_register(self) -> None:
        if not self._registered:
            await self.register()
        elif not await self.renew():
            log.warning("this process's boot %s was retired by another", self.boot_id)

    async def renew(self) -> bool:
        async with self.sessions.begin() as session:
            done = await session.execute(
                update(ControllerBoot)
                .where(ControllerBoot.boot_id == self.boot_id, ControllerBoot.retired_at.is_(None))
                .values(seen_at=func.now())
            )
        return bool(done.rowcount)  # type: ignore[attr-defined]

    async def retire(self) -> None:
        """An orderly stop: nothing of this process outlives it."""
        with contextlib.suppress(Exception):
            async with self.sessions.begin() as session:
                await session.execute(
                    update(ControllerBoot)
                    .where(ControllerBoot.boot_id == self.boot_id)
                    .values(retired_at=func.now())
                )


async def prove_boot_gone(
    session: AsyncSession, boot_id: uuid.UUID, *, ttl: float, this_boot: uuid.UUID
) -> OwnerProof:
    """Retire ``boot_id`` if it was not seen for a lease; gone when it is (or was) retired."""
    if boot_id == this_boot:
        return OwnerProof(False, "the closing controller is this process")
    retired = await session.execute(
        update(ControllerBoot)
        .where(
            ControllerBoot.boot_id == boot_id,
            ControllerBoot.retired_at.is_(None),
            ControllerBoot.seen_at < func.now() - timedelta(seconds=ttl),
        )
        .values(retired_at=func.now())
        .returning(ControllerBoot.boot_id)
    )
    if retired.scalar_one_or_none() is not None:
        return OwnerProof(True, f"boot {boot_id} not seen for {ttl:g} s: retired")
    row = (
        await session.execute(select(ControllerBoot).where(ControllerBoot.boot_id == boot_id))
    ).scalar_one_or_none()
    if row is None:
        return OwnerProof(False, f"boot {boot_id} is not known")
    if row.retired_at is not None:
        return OwnerProof(True, f"boot {boot_id} is retired")
    return OwnerProof(False, f"the closing controller {row.instance!r} (boot {boot_id}) is alive")
