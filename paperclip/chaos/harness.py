"""The chaos run: start the cluster, drive the workload under faults, settle, check, report."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from paperclip.chaos import cluster as procs
from paperclip.chaos import report
from paperclip.chaos.completions import turn_completions
from paperclip.chaos.db import live_turns, next_events, settled_issues, unfinished_runs
from paperclip.chaos.faults import INJECTED, Fault, inject, parse_mix, pick
from paperclip.chaos.invariants import Violation, active_twice, check_all
from paperclip.chaos.points import (
    BY_NAME,
    CONTROL_PLANE,
    POINTS,
    RUNNER,
    armed_names,
    choose_arming,
    fired_enough,
)
from paperclip.chaos.proxy import LinkProxy
from paperclip.chaos.workload import Workload
from paperclip.operator_token import read_token, token_file

TICK = 0.25
TERM_GRACE = 40.0
"""A SIGTERM'd process that has not exited after this long is killed."""


@dataclass
class ChaosOptions:
    runs: int = 12
    concurrency: int = 4
    replicas: int = 2
    runners: int = 1
    faults: list[str] = field(default_factory=lambda: [*INJECTED, "failpoint"])
    mix: str = ""
    interval: float = 3.0
    seed: int = 1
    pause: float = 0.5
    points: list[str] = field(default_factory=lambda: [p.name for p in POINTS])
    arm_chance: float = 0.5
    """The chance a process start arms one failpoint (the least fired it hosts)."""
    arm_spread: int = 3
    """An armed point fires on a random pass from 1 to this."""
    arm_timeout: float = 0.0
    """Seconds armed without firing before a stop (SIGTERM, a ``*_term`` fault); 0: never."""
    rest: float = 0.0
    """Seconds of unarmed life after a failpoint death, then a re-arming stop; 0: no end."""
    comments: int = 2
    """Comments (``post_comment`` calls) each run's first turn makes."""
    steers: int = 1
    """Comments a person steers into each run's live turns (one every few seconds at most)."""
    runner_gone_seconds: float = 20.0
    """How long a runner is away before the lost-runs policy may settle its runs."""
    timeout: float = 600.0
    until_fired: int = 0
    """End the faults once every point of ``points`` has fired this many times (0: never)."""
    settle_seconds: float = 90.0
    """After the faults stop, how long the last runs get to end (the lease plus a bound)."""
    lease_seconds: float = 2.0
    progress: Path | None = None
    """Rewrite the figures so far (faults, failpoints, runs) to this file every 30 s."""
    keep: Path | None = None
    """Keep the cluster's folder (logs, data) here instead of deleting it."""


@dataclass
class Cluster:
    folder: Path
    postgres: procs.Postgres
    control_planes: list[procs.Child] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    proxies: list[LinkProxy] = field(default_factory=list)
    runners: list[procs.Child] = field(default_factory=list)
    postgres_back_at: float = 0.0

    @property
    def script_dir(self) -> Path:
        return self.folder / "scripts"

    @property
    def fake_log(self) -> Path:
        return self.folder / "fake.log"


class ChaosRun:
    def __init__(self, options: ChaosOptions) -> None:
        self.options = options
        self.rng = random.Random(options.seed)
        self.faults: list[Fault] = []
        self.fired: dict[str, int] = {name: 0 for name in options.points}
        self.armed: dict[str, int] = {name: 0 for name in options.points}
        self.stale: dict[str, int] = {name: 0 for name in options.points}
        """Armings of a point stopped by ``arm_timeout`` before it fired."""
        self.steered_at = 0.0
        self.started = self.progress_at = 0.0
        self.steer_next: dict[str, float] = {}
        self.violations: list[Violation] = []
        self.replayed_lost_turns: list[dict[str, Any]] = []
        self.http_5xx: list[str] = []
        self.unplanned_exits: list[str] = []
        self.awaiting: list[tuple[Fault, str]] = []
        self.health: dict[int, dict[str, Any] | None] = {}
        self.probed_at = 0.0
        self.weights = parse_mix(options.mix, options.faults)
        unknown = [name for name in options.points if name not in BY_NAME]
        if unknown:
            raise ValueError(f"unknown failpoint(s): {', '.join(unknown)}")

    # The run

    def run(self) -> dict[str, Any]:
        started = self.started = time.monotonic()
        folder = Path(tempfile.mkdtemp(prefix="paperclip-chaos-", dir="/var/tmp"))
        folder.chmod(0o755)  # the embedded PostgreSQL may run as its own user
        self.cluster = Cluster(folder, procs.Postgres(folder))
        try:
            self._start()
            self._drive()
            self._settle()
            self.violations += asyncio.run(
                check_all(
                    self.cluster.postgres.url,
                    self.workload.company_id,
                    [item.issue_id for item in self.workload.items if item.assigned],
                    self.cluster.fake_log,
                    [folder / f"runner{i}" for i in range(self.options.runners)],
                    [c.log_path for c in [*self.cluster.control_planes, *self.cluster.runners]],
                )
            )
            completions = asyncio.run(
                turn_completions(self.cluster.postgres.url, self.workload.company_id)
            )
            self.violations += completions.violations
            self.replayed_lost_turns = completions.replayed
            self._next_event_times()
            self.http_5xx += self.workload.server_errors
            if self.http_5xx:
                self.violations += [Violation("http_500", line) for line in self.http_5xx[:20]]
            return report.result(self, time.monotonic() - started)
        finally:
            self._stop()
            if self.options.keep is not None:
                shutil.copytree(folder, self.options.keep, dirs_exist_ok=True, symlinks=True)
            shutil.rmtree(folder, ignore_errors=True)

    def _start(self) -> None:
        from paperclip.db import migrate

        c, o = self.cluster, self.options
        url = c.postgres.start()
        migrate.upgrade(url)
        env = {
            "PAPERCLIP_LEASE_SECONDS": str(o.lease_seconds),
            "PAPERCLIP_RUN_MAX_RESUMES": "10",
            "PAPERCLIP_RUNNER_GONE_SECONDS": str(o.runner_gone_seconds),
        }
        for index in range(o.replicas):
            port = procs.free_port()
            c.ports.append(port)
            c.control_planes.append(procs.control_plane(index, port, url, c.folder, env))
            c.proxies.append(LinkProxy(port, procs.free_port()).start())
        for child in c.control_planes:
            self._launch(child)
        self._wait(lambda: all(self._healthy(i) for i in range(o.replicas)), 90, "the replicas")
        launch = procs.fake_launch(c.script_dir, c.fake_log)
        for index in range(o.runners):
            credential = procs.runner_credential(f"chaos-runner-{index}", url)
            # Each runner dials the replicas in another order: every replica serves runs.
            shift = index % len(c.proxies)
            servers = [p.url for p in c.proxies[shift:] + c.proxies[:shift]]
            c.runners.append(procs.runner(index, servers, credential, c.folder, launch))
        for child in c.runners:
            self._launch(child)
        self._wait(lambda: self._connected() >= o.runners, 60, "the runners")
        self.workload = Workload(o.runs, c.script_dir, o.pause, o.comments)
        with self._api(0, timeout=30) as api:
            self.workload.create(api)

    def _drive(self) -> None:
        o = self.options
        deadline = time.monotonic() + o.timeout
        next_fault = time.monotonic() + self._gap()
        next_progress = 0.0
        armable = o.points if "failpoint" in o.faults else []
        while time.monotonic() < deadline:
            now = time.monotonic()
            self._probe()
            self._supervise()
            self._recovered()
            if now >= next_fault and self.weights:
                fault = inject(pick(self.rng, self.weights), self.cluster, self.rng)
                if fault is not None:
                    self._record(fault)
                next_fault = now + self._gap()
            self._feed()
            self._rearm()
            if self.options.progress is not None and now >= self.progress_at:
                self.progress_at = now + 30
                self._write_progress(now - self.started)
            if fired_enough(self.fired, armable, o.until_fired):
                return
            if now >= next_progress:
                if self.options.steers:
                    self._steer()
                next_progress = now + 1.0
                if self._progress() and not self.workload.pending():
                    return
            time.sleep(TICK)

    def _write_progress(self, seconds: float) -> None:
        assert self.options.progress is not None
        self.options.progress.write_text(json.dumps(report.progress(self, seconds), indent=1))

    def _settle(self) -> None:
        """No more faults: bring every process back and give the last runs their bound."""
        deadline = time.monotonic() + self.options.settle_seconds
        next_progress = 0.0
        while time.monotonic() < deadline:
            self._probe()
            self._supervise(arm=False)
            self._recovered()
            if time.monotonic() >= next_progress:
                next_progress = time.monotonic() + 1.0
                if self._progress() and self._presented():
                    return
            time.sleep(TICK)

    # Processes

    def _launch(self, child: procs.Child, *, arm: bool = True) -> None:
        process = CONTROL_PLANE if child.name.startswith("cp") else RUNNER
        armed = ""
        hosted = [n for n in self.options.points if BY_NAME[n].process == process]
        if arm and "failpoint" in self.options.faults and hosted:
            if self.rng.random() < self.options.arm_chance:
                kin = self.cluster.control_planes if process == CONTROL_PLANE else []
                elsewhere = [
                    p for o in kin if o is not child and o.alive() for p in armed_names(o.armed)
                ]
                names = choose_arming(
                    hosted, self.fired, self.armed, elsewhere, self.rng, stale=self.stale
                )
                for n in names:
                    self.armed[n] += 1
                armed = ",".join(
                    f"{n}=kill@{self.rng.randint(1, self.options.arm_spread)}" for n in names
                )
        child.start(armed)

    def _supervise(self, *, arm: bool = True) -> None:
        c = self.cluster
        if c.postgres.down and time.monotonic() >= c.postgres_back_at:
            c.postgres.start()
        for child in [*c.control_planes, *c.runners]:
            code = child.exited()
            if code is None:
                if child.expected_exit and child.proc is not None and child.alive():
                    # SIGTERM'd and still stopping: give up waiting after the grace.
                    if time.monotonic() - child.signalled_at > TERM_GRACE:
                        child.proc.kill()
                continue
            if time.monotonic() < child.retry_at:
                continue
            fired = False
            if not child.expected_exit:
                point = child.fired_point()
                if point is not None:
                    self.fired[point] = self.fired.get(point, 0) + 1
                    self._record(Fault("failpoint", child.name, point=point))
                    fired = True
                else:
                    self.unplanned_exits.append(f"{child.name} exited {code}: {child.tail(3)}")
                    child.retry_at = time.monotonic() + 2
                    child.expected_exit = True  # counted once; started again after the pause
                    continue
            # After a failpoint death, one life unarmed when every other process of
            # its kind is armed: a point on every path of a process (the runner's
            # start of a turn) would otherwise stop all progress.
            kin = c.control_planes if child in c.control_planes else c.runners
            rest = fired and all(o.armed for o in kin if o is not child)
            self._launch(child, arm=arm and not rest)
            child.resting = arm and rest

    def _rearm(self) -> None:
        """Stop a process whose armed point has not fired within ``arm_timeout``, or whose
        unarmed life lasted ``rest``: it starts again with another arming."""
        timeout, rest = self.options.arm_timeout, self.options.rest
        for child in self._children():
            if child.expected_exit or not child.alive():
                continue
            # Its life counts from when it serves: on a loaded machine a start alone
            # can take longer than the timeout, and every start would be stopped.
            if child.ready_at is None:
                continue
            life = time.monotonic() - child.ready_at
            if child.armed and 0 < timeout <= life:
                name = child.armed.partition("=")[0]
                self.stale[name] = self.stale.get(name, 0) + 1
            elif not (child.resting and 0 < rest <= life):
                continue
            child.signal(signal.SIGTERM)
            kind = "cp_term" if child.name.startswith("cp") else "runner_term"
            self._record(Fault(kind, child.name))

    def _steer(self) -> None:
        """Steer comments into the workload's runs (up to ``steers`` each) while a turn is live."""
        if self.cluster.postgres.down or time.monotonic() < self.steered_at:
            return
        self.steered_at = time.monotonic() + 1.0
        waiting = {
            i.issue_id: i
            for i in self.workload.active()
            if len(i.steered) < self.options.steers
            and time.monotonic() >= self.steer_next.get(i.issue_id, 0.0)
        }
        if not waiting:
            return
        try:
            live = asyncio.run(
                live_turns(self.cluster.postgres.url, self.workload.company_id, list(waiting))
            )
        except Exception:
            return  # the database is restarting: next time
        healthy = [i for i in range(self.options.replicas) if self._healthy(i)]
        if not healthy or not live:
            return
        with self._api(self.rng.choice(healthy)) as api:
            for issue_id, run_id in live:
                if self.workload.steer(api, waiting[issue_id], run_id):
                    self.steer_next[issue_id] = time.monotonic() + 3 * self.options.pause + 1

    def _api(self, index: int, timeout: float = 10) -> httpx.Client:
        """Replica ``index``'s API, as its operator: the token in its data dir."""
        token = read_token(token_file(self.cluster.folder / f"cp{index}"))
        return httpx.Client(
            base_url=f"http://127.0.0.1:{self.cluster.ports[index]}/api",
            headers={"Authorization": f"Bearer {token}"} if token else {},
            timeout=timeout,
        )

    def _record(self, fault: Fault) -> None:
        self.faults.append(fault)
        target = fault.target
        if target.startswith("cp"):
            self.awaiting.append((fault, target))
        elif target.startswith("runner") or fault.kind.startswith("link"):
            self.awaiting.append((fault, "runners"))
        elif target == "postgres":
            self.awaiting.append((fault, "replicas"))

    def _recovered(self) -> None:
        still = []
        for fault, what in self.awaiting:
            if self.probed_at <= fault.at_monotonic:
                still.append((fault, what))  # the last answers are from before the fault
                continue
            if what.startswith("cp"):
                ok = self._healthy(int(what[2:]))
            elif what == "runners":
                ok = self._connected() >= self.options.runners
            else:
                ok = all(self._healthy(i) for i in range(self.options.replicas))
            if ok:
                fault.to_health = time.monotonic() - fault.at_monotonic
            else:
                still.append((fault, what))
        self.awaiting = still

    # The API and the database, from outside

    def _probe(self) -> None:
        self.probed_at = time.monotonic()
        for index, port in enumerate(self.cluster.ports):
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1)
            except httpx.HTTPError:
                self.health[index] = None
                continue
            if r.status_code >= 500 and r.status_code != 503:
                self.http_5xx.append(f"GET /api/health on cp{index}: {r.status_code}")
            self.health[index] = r.json() if r.status_code == 200 else None
        self._mark_ready()

    def _mark_ready(self) -> None:
        """Note when each process first serves: a replica answers its health check, a
        runner is connected (counted together: the replicas report how many are)."""
        now = time.monotonic()
        c = self.cluster
        for index, child in enumerate(c.control_planes):
            if child.ready_at is None and child.alive() and self.health.get(index) is not None:
                child.ready_at = now
        alive = [r for r in c.runners if r.alive()]
        if alive and self._connected() >= len(alive):
            for child in alive:
                if child.ready_at is None:
                    child.ready_at = now

    def _healthy(self, index: int) -> bool:
        if index not in self.health:
            self._probe()
        return self.health.get(index) is not None

    def _connected(self) -> int:
        return sum(
            (h or {}).get("runners", {}).get("connected_here", 0) for h in self.health.values()
        )

    def _feed(self) -> None:
        live = [i for i in range(self.options.replicas) if self._healthy(i)]
        if not live:
            return
        want = self.options.concurrency - len(self.workload.active())
        with self._api(self.rng.choice(live)) as api:
            for item in self.workload.pending()[: max(want, 0)]:
                if not self.workload.assign(api, item):
                    return

    def _progress(self) -> bool:
        """Mark settled items; sample the one-active-run rule; True when every item is settled."""
        if self.cluster.postgres.down:
            return False
        company = self.workload.company_id
        try:
            outcome = asyncio.run(settled_issues(self.cluster.postgres.url, company))
            self.violations += asyncio.run(active_twice(self.cluster.postgres.url, company))
        except Exception:
            return False  # the database is restarting: next tick
        for item in self.workload.items:
            if item.assigned and not item.outcome:
                item.outcome = outcome.get(item.issue_id, "")
        # Settled: every assigned item (in the settle phase nothing new is assigned).
        return all(item.outcome for item in self.workload.items if item.assigned)

    def _presented(self) -> bool:
        url, company = self.cluster.postgres.url, self.workload.company_id
        try:
            return asyncio.run(unfinished_runs(url, company)) == 0
        except Exception:
            return False

    def _next_event_times(self) -> None:
        moments = [_utc(f.at) for f in self.faults]
        nexts = asyncio.run(next_events(self.cluster.postgres.url, moments))
        for fault, moment, after in zip(self.faults, moments, nexts, strict=True):
            if after is not None:
                fault.to_next_event = (after - moment).total_seconds()

    def _wait(self, predicate, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                tails = "\n".join(f"{c.name}:\n{c.tail(15)}" for c in self._children())
                raise RuntimeError(f"{what} did not come up in {timeout:.0f}s\n{tails}")
            time.sleep(0.3)
            self._probe()

    def _gap(self) -> float:
        return self.rng.uniform(0.5, 1.5) * self.options.interval

    def _children(self) -> list[procs.Child]:
        return [*self.cluster.control_planes, *self.cluster.runners]

    def _stop(self) -> None:
        c = getattr(self, "cluster", None)
        if c is None:
            return
        for child in [*c.runners, *c.control_planes]:
            child.stop()
        for proxy in c.proxies:
            proxy.close()
        for provider in procs.provider_processes(c.script_dir):
            provider.kill()
        if not c.postgres.down:
            c.postgres.stop()


def _utc(wall: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(wall, UTC)
