"""The named failpoints ``paperclip chaos`` arms, and which process each one lives in.

A new point is one ``failpoint("...")`` call in the code and one line here.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

CONTROL_PLANE = "control_plane"
RUNNER = "runner"


@dataclass(frozen=True, slots=True)
class Point:
    name: str
    process: str
    """``control_plane`` or ``runner``: whose environment arms it."""
    moment: str
    alongside: bool = False
    """Armed alongside whichever point a start arms: a moment off a run's own path,
    reached only when the reconciler settles a lost run, so it rarely comes first."""


POINTS: tuple[Point, ...] = (
    Point(
        "engine.tool.admitted.before_dispatch",
        CONTROL_PLANE,
        "a tool call's admission is committed to the journal; it is not executed yet",
    ),
    Point(
        "engine.tool.settled.before_reply",
        CONTROL_PLANE,
        "the tool's effect and result are committed; the reply is not sent yet",
    ),
    Point(
        "engine.status_decision.before_presentation",
        CONTROL_PLANE,
        "the run's status decision is committed; its answer is not presented yet",
    ),
    Point(
        "reconciler.settlement.before_settle",
        CONTROL_PLANE,
        "the reconciler took a lost run over (the fence moved); it has not settled it",
        alongside=True,
    ),
    Point(
        "reconciler.settlement.after_settle",
        CONTROL_PLANE,
        "the settlement is committed; the reconciler has not reported it",
        alongside=True,
    ),
    Point(
        "runner.steer.acknowledged.before_event",
        RUNNER,
        "the provider acknowledged a steer; its steering_acknowledgement is not sent to be stored",
    ),
    Point(
        "runner.start_turn.before_ack",
        RUNNER,
        "the runner recorded and started a turn; its acknowledgement is not sent yet",
    ),
    Point(
        "runner.turn_finished.before_send",
        RUNNER,
        "the provider completed a turn and its events were sent; the turn's end is not",
    ),
)

BY_NAME = {point.name: point for point in POINTS}


def armed_for(process: str, names: list[str], at: dict[str, int]) -> str:
    """``PAPERCLIP_FAILPOINTS`` for one process start: each of ``names`` it hosts, at its pass."""
    return ",".join(f"{name}=kill@{at[name]}" for name in names if BY_NAME[name].process == process)


def armed_names(armed: str) -> set[str]:
    """The point names in a ``PAPERCLIP_FAILPOINTS`` value."""
    return {item.partition("=")[0] for item in armed.split(",") if item}


def choose_arming(
    hosted: Sequence[str],
    fired: Mapping[str, int],
    armed: Mapping[str, int],
    elsewhere: Sequence[str],
    rng: random.Random,
    stale: Mapping[str, int] | None = None,
) -> list[str]:
    """The points one process start arms: one of ``hosted``, and maybe a rider.

    The least tried first (its kills, and its armings that timed out, ``stale``):
    every point gets its kills, and one rarely reached does not hold the others up. Among those, one no other process is armed with
    (``elsewhere``), so the points spread over the replicas; then the least armed.
    A settlement point (``alongside``) rides along, one at a time and the least
    fired of them: armed on every replica, it would kill each one that tries to
    settle a lost run; armed together, the earlier moment would always fire first.
    A rider rides only while it has fired (its kills, not its tries) no more than the
    least fired main point: lost runs are settled often under faults, so a rider on
    every start would kill the process before most main points' moments come.
    """
    timed_out = stale or {}
    main = [n for n in hosted if not BY_NAME[n].alongside] or list(hosted)
    score = {n: (fired[n] + timed_out.get(n, 0), elsewhere.count(n), armed[n]) for n in main}
    least = min(score.values())
    name = rng.choice([n for n in main if score[n] == least])
    names = [name]
    riders = [n for n in hosted if BY_NAME[n].alongside and n not in elsewhere]
    if not BY_NAME[name].alongside and riders:
        fewest = min(fired[n] for n in riders)
        if fewest <= min(fired[n] for n in main):
            names.append(rng.choice([n for n in riders if fired[n] == fewest]))
    return names


def fired_enough(fired: Mapping[str, int], names: Sequence[str], times: int) -> bool:
    """Every one of ``names`` has fired ``times`` times (``--until-fired``; 0: never)."""
    return times > 0 and bool(names) and all(fired[n] >= times for n in names)
