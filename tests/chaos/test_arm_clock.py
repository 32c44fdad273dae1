"""An armed process's time to fire counts from when it serves, not from when it was started."""

from __future__ import annotations

import time

import pytest

from paperclip.chaos.cluster import Child
from paperclip.chaos.harness import ChaosOptions, ChaosRun, Cluster

POINT = "engine.tool.admitted.before_dispatch"


@pytest.fixture
def replica(tmp_path):
    child = Child("cp0", ["sleep", "60"], {}, tmp_path / "cp0.log")
    child.start(f"{POINT}=kill@1")
    yield child
    child.stop(timeout=5)


def test_a_slow_start_is_not_stopped_before_it_serves(tmp_path, replica):
    chaos = ChaosRun(ChaosOptions(arm_timeout=0.2))
    chaos.cluster = Cluster(tmp_path, postgres=None, control_planes=[replica])  # type: ignore[arg-type]

    time.sleep(0.4)  # past the timeout, but it has not answered a health check yet
    chaos._rearm()
    assert replica.alive() and not replica.expected_exit
    assert chaos.faults == []

    chaos.health = {0: {"status": "ok"}}
    chaos._mark_ready()
    chaos._rearm()
    assert not replica.expected_exit  # serving only now: its time starts here

    time.sleep(0.4)
    chaos._rearm()
    assert replica.expected_exit  # armed and serving past the timeout without firing
    assert [f.kind for f in chaos.faults] == ["cp_term"]
    assert chaos.stale[POINT] == 1
