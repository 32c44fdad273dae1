"""The faults ``paperclip chaos`` injects, and the record of each one.

Every kind names what it does to which process; ``failpoint`` is not
injected from outside: it is armed in a process's environment when it starts
and fires from inside, at a named moment.
"""

from __future__ import annotations

import random
import signal
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from paperclip.chaos.cluster import provider_processes

if TYPE_CHECKING:
    pass

KINDS: dict[str, str] = {
    "cp_kill": "SIGKILL of a control-plane replica, started again at once",
    "cp_term": "SIGTERM of a control-plane replica (an orderly stop), started again when it exited",
    "runner_kill": "SIGKILL of a runner (its providers live on, orphaned), started again at once",
    "runner_term": "SIGTERM of a runner (it stops its providers), started again when it exited",
    "provider_kill": "SIGKILL of one fake Codex app-server process",
    "pg_kill": "SIGKILL of the PostgreSQL postmaster; started again 1-4 s later (crash recovery)",
    "pg_restart": "PostgreSQL stopped (fast shutdown), started again 1-4 s later",
    "link_cut": "every connection through a runner's link proxy reset at once",
    "link_stall": "a runner's link proxy passes no byte for 1-5 s",
    "failpoint": "a named failpoint armed in a process's environment fires (SIGKILL from inside)",
}
INJECTED = tuple(kind for kind in KINDS if kind != "failpoint")


@dataclass
class Fault:
    kind: str
    target: str
    at: float = field(default_factory=time.time)
    """Wall-clock time (compared with event timestamps in the database)."""
    at_monotonic: float = field(default_factory=time.monotonic)
    point: str | None = None
    to_health: float | None = None
    """Seconds from the fault until what it hit answered again (None: not measured)."""
    to_next_event: float | None = None
    """Seconds from the fault until any run's next event was stored."""


def parse_mix(spec: str, kinds: list[str]) -> dict[str, float]:
    """``cp_kill=3,pg_kill=1``: relative weights of the injected kinds (1 each by default)."""
    weights = {kind: 1.0 for kind in kinds if kind in INJECTED}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, weight = item.partition("=")
        if name not in KINDS:
            raise ValueError(f"unknown fault kind {name!r}; known: {', '.join(KINDS)}")
        if name in weights:
            weights[name] = float(weight or 1)
    return {kind: w for kind, w in weights.items() if w > 0}


def pick(rng: random.Random, weights: dict[str, float]) -> str:
    kinds = sorted(weights)
    return rng.choices(kinds, [weights[k] for k in kinds])[0]


def inject(kind: str, cluster, rng: random.Random) -> Fault | None:
    """Do ``kind`` to a random target of the cluster; None when there is none to hit now."""
    if kind in ("cp_kill", "cp_term"):
        live = [c for c in cluster.control_planes if c.alive() and not c.expected_exit]
        if not live:
            return None
        child = rng.choice(live)
        child.signal(signal.SIGKILL if kind == "cp_kill" else signal.SIGTERM)
        return Fault(kind, child.name)
    if kind in ("runner_kill", "runner_term"):
        live = [r for r in cluster.runners if r.alive() and not r.expected_exit]
        if not live:
            return None
        child = rng.choice(live)
        child.signal(signal.SIGKILL if kind == "runner_kill" else signal.SIGTERM)
        return Fault(kind, child.name)
    if kind == "provider_kill":
        providers = provider_processes(cluster.script_dir)
        if not providers:
            return None
        victim = rng.choice(providers)
        try:
            victim.send_signal(signal.SIGKILL)
        except Exception:
            return None  # it ended by itself meanwhile
        return Fault(kind, f"provider pid {victim.pid}")
    if kind in ("pg_kill", "pg_restart"):
        if cluster.postgres.down:
            return None
        cluster.postgres.kill() if kind == "pg_kill" else cluster.postgres.stop()
        cluster.postgres_back_at = time.monotonic() + rng.uniform(1, 4)
        return Fault(kind, "postgres")
    if kind in ("link_cut", "link_stall"):
        proxy = rng.choice(cluster.proxies)
        if kind == "link_cut":
            proxy.cut()
        else:
            proxy.stall(rng.uniform(1, 5))
        return Fault(kind, f"link to replica on port {proxy.upstream_port}")
    raise ValueError(f"unknown fault kind {kind!r}")
