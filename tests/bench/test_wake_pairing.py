"""The wake benchmark pairs each sample with its own issue's run, and says when it cannot.

The peer and the measuring loop are the benchmark's own (``bench/support.py``,
``bench/wake_latency.py``), against a scripted control plane over a real
WebSocket; the pairing and the verdict are also given broken inputs directly.
No figure is asserted: only which sample is paired with what, and whether
the measurement is valid.
"""

from __future__ import annotations

import uuid

from support import Arrival, RunnerPeer, StartTurns
from verdict import INVALID, MISSED, OK
from wake_latency import WakeSample, judge, measure_wakes, pair_wakes

from paperclip.wire import messages as wire
from tests.bench.scripted import ScriptedControlPlane


def issues(n: int) -> list[uuid.UUID]:
    return [uuid.uuid4() for _ in range(n)]


async def measure(
    peer: RunnerPeer, control_plane: ScriptedControlPlane, asked: list[uuid.UUID]
) -> tuple[dict[uuid.UUID, float], list[Arrival]]:
    """As ``wake_latencies`` does: the peer connected, then each issue woken in turn."""
    turns = StartTurns()
    peer.on_start = turns
    await peer.open()
    return await measure_wakes(peer, turns, control_plane.wake, asked, within=10)


def own_runs(pairs: dict[uuid.UUID, WakeSample]) -> dict[uuid.UUID, list[uuid.UUID | None]]:
    return {issue_id: [sample.run_id] for issue_id, sample in pairs.items()}


async def test_a_resent_start_turn_is_dropped_and_each_sample_keeps_its_own_run():
    async with ScriptedControlPlane() as control_plane:
        control_plane.resend_before_each = True
        peer = RunnerPeer(control_plane.url, "credential")
        commits, arrivals = await measure(peer, control_plane, asked := issues(4))
        await control_plane.acknowledged(4)
        await peer.close()
    pairs, problems = pair_wakes(asked, commits, arrivals, control_plane.runs, count=4)
    assert problems == []
    assert own_runs(pairs) == control_plane.runs
    # Before the 2nd, 3rd and 4th start_turn, the one before came again: dropped, acknowledged.
    assert peer.dropped == [1, 2, 3]
    assert [a.start.seq for a in arrivals] == [1, 2, 3, 4]


async def test_a_reconnecting_peer_says_how_far_it_got_and_nothing_comes_twice():
    async with ScriptedControlPlane() as control_plane:
        peer = RunnerPeer(control_plane.url, "credential")
        await measure(peer, control_plane, issues(3))  # the warm-up
        await peer.close()
        warm_runs = {run for runs in control_plane.runs.values() for run in runs}
        commits, arrivals = await measure(peer, control_plane, asked := issues(2))
        await peer.close()
    first, second = control_plane.hellos
    assert (first.received_seq, second.received_seq) == (0, 3)
    assert second.runner_instance == first.runner_instance  # one process, two connections
    assert {run.run_id for run in second.runs} == warm_runs  # still hosted: never closed
    assert peer.dropped == []
    pairs, problems = pair_wakes(asked, commits, arrivals, control_plane.runs, count=2)
    assert problems == []
    assert own_runs(pairs) == {issue: control_plane.runs[issue] for issue in asked}
    # Its own turn_finished messages, never acknowledged here, were replayed with their seqs.
    assert control_plane.sent_by_runner(wire.TurnFinished) == [1, 2, 3, 1, 2, 3, 4, 5]


async def test_a_new_peer_gets_the_old_turns_again_and_the_measurement_says_so():
    """What the benchmark did before: a new peer for the measurement, its hello at seq 0.
    The warm-up's start_turns come again first; pairing by issue still gives each sample its
    own run (by arrival order, each would have taken the one before), and the stray turns
    make the measurement invalid."""
    async with ScriptedControlPlane() as control_plane:
        warm = RunnerPeer(control_plane.url, "credential")
        await measure(warm, control_plane, issues(2))
        await warm.close()
        fresh = RunnerPeer(control_plane.url, "credential")
        commits, arrivals = await measure(fresh, control_plane, asked := issues(3))
        await fresh.close()
    assert control_plane.hellos[1].received_seq == 0
    assert [a.start.seq for a in arrivals] == [1, 2, 3, 4, 5]
    pairs, problems = pair_wakes(asked, commits, arrivals, control_plane.runs, count=3)
    assert own_runs(pairs) == {issue: control_plane.runs[issue] for issue in asked}
    assert len(problems) == 2
    assert all("which this measurement did not wake" in problem for problem in problems)
    _, verdict = judge({1: 0.001}, {1: 0.002}, pairs, problems)
    assert verdict.status == "invalid"
    assert verdict.exit_code == INVALID


def start(seq: int, issue_id: uuid.UUID, run_id: uuid.UUID | None = None) -> wire.StartTurn:
    return wire.StartTurn(
        seq=seq, run_id=run_id or uuid.uuid4(), provider="codex", token="t", issue_id=issue_id
    )


def test_a_replay_handled_again_is_invalid_though_each_sample_keeps_its_run():
    """A peer without dedup hands the benchmark a resent start_turn (seq 1 after seq 1)."""
    a, b = issues(2)
    first, second = start(1, a), start(2, b)
    arrivals = [Arrival(10.0, first), Arrival(10.5, first), Arrival(11.0, second)]
    runs = {a: [first.run_id], b: [second.run_id]}
    pairs, problems = pair_wakes([a, b], {a: 9.9, b: 10.9}, arrivals, runs, count=2)
    assert own_runs(pairs) == runs
    assert [pairs[a].seconds, pairs[b].seconds] == [10.0 - 9.9, 11.0 - 10.9]
    assert problems == [
        f"start_turn seq 1 (run {first.run_id}) handled after seq 1:"
        " a resent message was not dropped",
        f"issue {a}: a second start_turn (seq 1, run {first.run_id}) after seq 1",
    ]


def test_a_missing_or_negative_sample_is_invalid_and_named():
    a, b, c = issues(3)
    arrivals = [Arrival(5.0, start(1, a)), Arrival(6.0, start(2, b))]
    # b's start_turn "arrived" before its wake committed; c's never came.
    pairs, problems = pair_wakes([a, b, c], {a: 4.0, b: 7.0, c: 8.0}, arrivals, count=3)
    assert pairs[c] == WakeSample(c, None, None)
    assert problems == [
        f"wake to start_turn: 1 of 3 samples missing: {c}",
        f"wake to start_turn: 1 samples not above zero: {b} = -1",
    ]
    _, verdict = judge({1: 0.001}, {1: 0.002}, pairs, problems)
    assert verdict.exit_code == INVALID


def test_fewer_wakes_than_asked_for_is_invalid():
    a = uuid.uuid4()
    _, problems = pair_wakes([a], {a: 1.0}, [Arrival(2.0, start(1, a))], count=2)
    assert problems == ["wake to start_turn: 1 samples asked for, 2 wanted"]


def test_a_run_the_database_did_not_make_for_the_issue_is_invalid():
    a = uuid.uuid4()
    turn = start(1, a)
    other = uuid.uuid4()
    _, problems = pair_wakes([a], {a: 1.0}, [Arrival(2.0, turn)], {a: [other]})
    assert problems == [
        f"issue {a}: paired with run {turn.run_id}, the database's runs of it: {other}"
    ]


def test_a_valid_measurement_meets_or_misses_its_target():
    a, b = issues(2)
    pairs, problems = pair_wakes(
        [a, b], {a: 1.0, b: 2.0}, [Arrival(1.004, start(1, a)), Arrival(2.004, start(2, b))]
    )
    assert problems == []
    _, met = judge({1: 0.001, 2: 0.001}, {1: 0.002}, pairs, problems)
    _, missed = judge({1: 0.0001, 2: 0.0001}, {1: 0.002}, pairs, problems)
    assert (met.exit_code, missed.exit_code) == (OK, MISSED)
