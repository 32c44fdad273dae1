"""What a runner started, kept on disk in each run's folder: a turn is started at most once.

The control plane replays a ``start_turn`` its runner did not acknowledge,
and a runner process can die after starting a provider and before the
acknowledgement. So before a provider process starts, the runner writes
down (and flushes to disk) that it starts this turn of this run; a later
``start_turn`` for the same turn, in this process or the next one on the
same work folder, finds the record and starts nothing.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from uuid import UUID

from paperclip.wire import messages as wire

RECORD_FILE = "turns.json"
TURN_LOST = "turn_lost"
"""A ``start_turn`` for a turn an earlier process of this runner started: it is gone."""


@dataclass(frozen=True, slots=True)
class StartedTurn:
    turn: int
    instance: str
    """The runner process that started it."""
    pid: int
    started_at: float
    session_ref: str | None = None
    """The provider session, once the driver reported it."""


class TurnRecords:
    """The started turns of one run, in ``<run folder>/turns.json``."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / RECORD_FILE

    def read(self) -> list[StartedTurn]:
        try:
            items = json.loads(self.path.read_text())
        except FileNotFoundError:
            return []
        return [StartedTurn(**item) for item in items]

    def find(self, turn: int) -> StartedTurn | None:
        return next((t for t in self.read() if t.turn == turn), None)

    def lost(self, run_id: UUID, turn: int) -> wire.TurnFinished | None:
        """The answer to a ``start_turn`` of ``turn`` that an earlier process of this runner
        started (it is gone with its provider), or None for a turn never started here."""
        earlier = self.find(turn)
        if earlier is None:
            return None
        return wire.TurnFinished(
            seq=0,
            run_id=run_id,
            turn=turn,
            status="interrupted",
            session_ref=earlier.session_ref or self.latest_session(),
            error_code=TURN_LOST,
            error=f"turn {turn} was started by an earlier runner process "
            f"({earlier.instance}) that is gone",
        )

    def latest_session(self) -> str | None:
        """The newest session any turn of the run reported."""
        sessions = [t.session_ref for t in self.read() if t.session_ref]
        return sessions[-1] if sessions else None

    def start(self, turn: int, instance: str, session_ref: str | None) -> StartedTurn:
        """Record that ``turn`` starts now; durable before this returns."""
        started = StartedTurn(turn, instance, os.getpid(), time.time(), session_ref)
        self._write([*(t for t in self.read() if t.turn != turn), started])
        return started

    def report_session(self, turn: int, session_ref: str) -> None:
        records = self.read()
        self._write([replace(t, session_ref=session_ref) if t.turn == turn else t for t in records])

    def _write(self, records: list[StartedTurn]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        with temporary.open("w") as handle:
            json.dump([asdict(t) for t in records], handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)  # atomic: a reader sees the old list or the new one
