"""What this replica controls: its runs, the epoch it holds for each, their verified tokens.

The one piece of in-process state the engine's parts share. It is a cache of
what PostgreSQL decides (leases, the epoch fence, run tokens): losing it costs
a re-adoption, never a wrong write, because every write checks the fence
under the run's row lock.
"""

from __future__ import annotations

import uuid

from paperclip.domain.keys.api_keys import hash_key
from paperclip.engine.ownership.fence import StaleEpochError


class RunOwnership:
    """The runs this replica is the controller of, by run id."""

    def __init__(self) -> None:
        self._epochs: dict[uuid.UUID, int] = {}
        # The verified token hash of each run controlled here; dropped with the run,
        # so it is bounded by the runs in flight.
        self._tokens: dict[uuid.UUID, str] = {}

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._epochs

    def __len__(self) -> int:
        return len(self._epochs)

    def runs(self) -> list[uuid.UUID]:
        return list(self._epochs)

    def snapshot(self) -> dict[uuid.UUID, int]:
        """Every owned run with its epoch, as of now."""
        return dict(self._epochs)

    def own(self, run_id: uuid.UUID, epoch: int) -> None:
        if self._epochs.get(run_id) != epoch:
            # A new epoch may come with a new turn, whose start revoked the run's
            # earlier token: that one is checked against the database again.
            self._tokens.pop(run_id, None)
        self._epochs[run_id] = epoch

    def release(self, run_id: uuid.UUID, *, epoch: int | None = None) -> None:
        """Forget a run (it ended, moved away, or its lease was lost at ``epoch``)."""
        if epoch is not None and self._epochs.get(run_id) != epoch:
            return  # re-owned at another epoch meanwhile
        self._epochs.pop(run_id, None)
        self._tokens.pop(run_id, None)

    def epoch(self, run_id: uuid.UUID) -> int:
        """The epoch this replica holds for the run; StaleEpochError when it holds none."""
        epoch = self._epochs.get(run_id)
        if epoch is None:
            raise StaleEpochError(f"this replica does not control run {run_id}")
        return epoch

    def token_verified(self, run_id: uuid.UUID, token: str) -> bool:
        """Whether ``token`` was verified as the run's live token (a cached answer only)."""
        known = self._tokens.get(run_id)
        return known is not None and known == hash_key(token)

    def remember_token(self, run_id: uuid.UUID, token: str) -> None:
        if run_id in self._epochs:
            self._tokens[run_id] = hash_key(token)
