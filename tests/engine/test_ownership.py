"""The replica's cache of what it controls: a run's token is trusted only at the epoch it was checked."""

from __future__ import annotations

import uuid

from paperclip.engine.ownership.owned_runs import RunOwnership


def test_a_token_checked_at_one_epoch_is_checked_again_at_the_next():
    # Going on in a next turn moves the epoch and revokes the run's earlier token: a call
    # of the earlier turn arriving late must be checked against the database, not the cache.
    ownership, run = RunOwnership(), uuid.uuid4()
    ownership.own(run, 1)
    ownership.remember_token(run, "turn-1-token")
    ownership.own(run, 1)  # the same epoch again (a renewal): still trusted
    assert ownership.token_verified(run, "turn-1-token")

    ownership.own(run, 2)
    assert not ownership.token_verified(run, "turn-1-token")
