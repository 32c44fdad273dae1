"""API keys a replica checked, remembered until any key changes.

Every request in the authenticated mode carries a key. Reading it each time
costs a statement, a pooled connection and a round trip to PostgreSQL, about
as much as the read the request is for. A replica remembers the callers of the
keys it checked, but only while it LISTENs on ``paperclip_api_keys``: a
trigger (migration ``0013_api_key_notify``) notifies that channel at the
commit of any revocation, deletion (a company's included) or change of a key,
and every replica then forgets everything it remembered. The replica that
revokes forgets before it answers. While the listening connection is down
nothing is remembered: every request reads its key, as without this.

An entry also lapses after ``KEEP_SECONDS``, so a key in use is read (and its
``last_used_at`` kept within about a minute) regardless of notifications.
"""

from __future__ import annotations

import logging
import time

from sqlalchemy.ext.asyncio import AsyncEngine

from paperclip.common.actor import Actor
from paperclip.db.listen import hold_listener

log = logging.getLogger(__name__)

CHANNEL = "paperclip_api_keys"
KEEP_SECONDS = 10.0
MAX_ENTRIES = 10_000
"""More live keys than this in use at once and the cache starts over (memory stays bounded)."""


class KeyCache:
    """Key hash -> the caller it authenticates, valid while notifications can arrive."""

    def __init__(self, keep_seconds: float = KEEP_SECONDS) -> None:
        self.keep_seconds = keep_seconds
        self.listening = False
        self.generation = 0
        """Moves on at every forgetting: a read begun before it must not be remembered."""
        self._entries: dict[str, tuple[Actor, float]] = {}

    def get(self, key_hash: str) -> Actor | None:
        entry = self._entries.get(key_hash) if self.listening else None
        if entry is None:
            return None
        actor, until = entry
        if time.monotonic() >= until:
            self._entries.pop(key_hash, None)
            return None
        return actor

    def remember(self, key_hash: str, actor: Actor, generation: int) -> None:
        """Remember what a read begun at ``generation`` found, unless a key changed since."""
        if not self.listening or generation != self.generation:
            return
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.clear()
        self._entries[key_hash] = (actor, time.monotonic() + self.keep_seconds)

    def forget(self) -> None:
        self.generation += 1
        self._entries.clear()

    def _listening(self, listening: bool) -> None:
        self.forget()  # whatever changed while no notification could arrive
        self.listening = listening

    async def listen(self, engine: AsyncEngine) -> None:
        """Until cancelled: forget at every notification; remember only while listening."""
        await hold_listener(engine, CHANNEL, lambda _payload: self.forget(), self._listening, log)
