"""A provider turn's completion events: at most one per run turn, and a lost turn's named.

Every run event records the run turn it belongs to (``run_events.turn``: the
turn whose provider emitted it, as the runner says). A turn whose provider
completed it can still be lost: its runner died after the completion event
was stored and before the turn's end (``turn_finished``) was. The run then
goes on in its next turn (a restart continuation of the same provider
session), which ends with a completion of its own. Two completion events of
one run are then two turns' completions, each under its own turn: a
**replayed lost turn**, counted in the report, not a violation.

One turn of a run with two completion events is a violation,
``turn_completed_twice``: its provider completed it twice, an event was
stored under another turn than its own, or a replay of one event was stored
twice.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from paperclip.chaos.db import fetch
from paperclip.chaos.invariants import Violation

COMPLETION_TYPES = ("turn/completed",)
"""The provider events that end a provider turn (the chaos workload's provider is Codex)."""

COMPLETIONS = """
SELECT e.run_id, e.turn, e.seq, e.source_instance, e.source_seq,
       t.status AS turn_status, t.error_code AS turn_error, r.turn AS run_turn
FROM run_events e
JOIN runs r ON r.id = e.run_id
LEFT JOIN run_turns t ON t.run_id = e.run_id AND t.number = e.turn
WHERE e.company_id = $1 AND e.type = ANY($2::text[])
ORDER BY e.run_id, e.seq
"""


@dataclass
class Completions:
    violations: list[Violation] = field(default_factory=list)
    replayed: list[dict[str, Any]] = field(default_factory=list)
    """Lost turns their provider completed, each followed by a later turn of the run:
    ``{run, turn, seq, error_code, next_turn}``."""


async def turn_completions(url: str, company_id: str) -> Completions:
    """The completion events of the company's runs, judged by ``judge``."""
    rows = await fetch(url, COMPLETIONS, uuid.UUID(company_id), list(COMPLETION_TYPES))
    return judge([dict(r) for r in rows])


def judge(rows: list[dict[str, Any]]) -> Completions:
    """Completion rows (``COMPLETIONS``'s columns, in ``seq`` order per run) to violations
    and replayed lost turns."""
    found = Completions()
    by_turn: dict[tuple[Any, int], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_turn[(row["run_id"], row["turn"])].append(row)
    for (run, turn), of_turn in by_turn.items():
        first = of_turn[0]
        if len(of_turn) > 1:
            where = ", ".join(
                f"seq {r['seq']} from {r['source_instance']}:{r['source_seq']}" for r in of_turn
            )
            found.violations.append(
                Violation("turn_completed_twice", f"run {run} turn {turn}: {where}")
            )
        if first["turn_status"] == "lost" and first["run_turn"] > turn:
            found.replayed.append(
                {
                    "run": str(run),
                    "turn": turn,
                    "seq": first["seq"],
                    "error_code": first["turn_error"],
                    "next_turn": turn + 1,
                }
            )
    return found
