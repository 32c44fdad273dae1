"""Which failpoints a process start arms: every point gets its kills, spread over replicas."""

from __future__ import annotations

import random
from collections import Counter

from paperclip.chaos.points import BY_NAME, CONTROL_PLANE, POINTS, choose_arming, fired_enough

HOSTED = [p.name for p in POINTS if p.process == CONTROL_PLANE]
MAIN = [n for n in HOSTED if not BY_NAME[n].alongside]
BEFORE, AFTER = "reconciler.settlement.before_settle", "reconciler.settlement.after_settle"


def zero() -> dict[str, int]:
    return dict.fromkeys(HOSTED, 0)


def test_the_least_fired_point_is_armed_with_one_settlement_rider():
    fired = {**zero(), **dict.fromkeys(MAIN, 5), MAIN[1]: 3, BEFORE: 7, AFTER: 3}
    names = choose_arming(HOSTED, fired, zero(), [], random.Random(1))
    # One rider only, the one fired less: armed together, the earlier would always fire.
    assert names == [MAIN[1], AFTER]


def test_a_rider_that_fired_more_than_the_least_fired_point_waits():
    # Lost runs are settled often: riding every start, the settlement points would
    # kill the process before the main points' moments come, and outrun them.
    fired = {**zero(), **dict.fromkeys(MAIN, 5), MAIN[1]: 2, BEFORE: 7, AFTER: 3}
    assert choose_arming(HOSTED, fired, zero(), [], random.Random(1)) == [MAIN[1]]
    fired[MAIN[1]] = 3
    assert choose_arming(HOSTED, fired, zero(), [], random.Random(1)) == [MAIN[1], AFTER]


def test_a_point_armed_on_another_replica_waits_its_turn():
    fired = zero()
    elsewhere = [MAIN[0], BEFORE]
    for seed in range(20):
        names = choose_arming(HOSTED, fired, zero(), elsewhere, random.Random(seed))
        assert names[0] != MAIN[0]
        assert names[1:] == [AFTER]  # a rider rides on one replica at a time


def test_over_many_starts_every_point_is_armed_alike():
    fired, armed = zero(), zero()
    for seed in range(300):
        for name in choose_arming(HOSTED, fired, armed, [], random.Random(seed)):
            armed[name] += 1
            fired[name] += 1  # each arming fires, in this count
    main = Counter({n: armed[n] for n in MAIN})
    assert max(main.values()) - min(main.values()) <= 1
    assert abs(armed[BEFORE] - armed[AFTER]) <= 1
    assert max(armed[BEFORE], armed[AFTER]) <= min(main.values()) + 1  # riders keep pace


def test_the_faults_end_once_every_point_fired_until_fired_times():
    names = [p.name for p in POINTS]
    fired = dict.fromkeys(names, 3)
    fired[names[-1]] = 2
    assert not fired_enough(fired, names, 3)
    fired[names[-1]] = 3
    assert fired_enough(fired, names, 3)
    # Off at 0, and when no failpoint is in the mix (no point to arm).
    assert not fired_enough(fired, names, 0)
    assert not fired_enough(fired, [], 1)


def test_a_rider_waits_for_the_main_points_kills_not_their_timed_out_armings():
    # A replica that serves no runner times its path points out: those tries count
    # for which point is armed next, but a rider catches up with kills only.
    fired = {**zero(), **dict.fromkeys(MAIN, 3), BEFORE: 7, AFTER: 5}
    stale = dict.fromkeys(MAIN, 6)
    names = choose_arming(HOSTED, fired, zero(), [], random.Random(1), stale=stale)
    assert len(names) == 1 and names[0] in MAIN
    fired[AFTER] = 3
    names = choose_arming(HOSTED, fired, zero(), [], random.Random(1), stale=stale)
    assert names[1:] == [AFTER]
