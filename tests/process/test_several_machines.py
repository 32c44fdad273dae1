"""Several machines: a standalone PostgreSQL, two control-plane replicas and two runners,
each in its own network namespace, joined by virtual links.

While runs are in flight, links are delayed and cut, a replica and a runner
are SIGKILLed and started again; the metrics of both replicas are scraped
throughout. Every run settles, and the chaos invariants hold (no comment
written twice, no tool replayed, one active run per issue, ...).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from paperclip.chaos.db import settled_issues, unfinished_runs
from paperclip.chaos.invariants import check_all
from paperclip.chaos.workload import Workload
from tests.support.db import query
from tests.support.machines import Cluster, available
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

RUNS = int(os.environ.get("PAPERCLIP_MACHINES_RUNS", "6"))
"""Runs in flight through each cycle of faults."""
CYCLES = int(os.environ.get("PAPERCLIP_MACHINES_CYCLES", "1"))
"""Cycles of faults (CI: one; the longer recorded run of docs/reliability.md: more)."""


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    why = available()
    if why is not None:
        pytest.skip(why)
    folder = Path(tempfile.mkdtemp(prefix="paperclip-machines-", dir="/var/tmp"))
    folder.chmod(0o755)
    built = Cluster(
        folder,
        replicas=2,
        runners=2,
        env={"PAPERCLIP_LEASE_SECONDS": "2", "PAPERCLIP_RUNNER_GONE_SECONDS": "10"},
    )
    try:
        yield built
    finally:
        built.stop()
        shutil.rmtree(folder, ignore_errors=True)


def client(cluster: Cluster, index: int, timeout: float = 10) -> httpx.Client:
    return httpx.Client(
        base_url=f"{cluster.url(index)}/api",
        headers={"authorization": f"Bearer {cluster.key}"},
        timeout=timeout,
        trust_env=False,  # the machines' own addresses: never through a proxy
    )


def scrape(cluster: Cluster, index: int) -> dict[tuple[str, tuple], float] | None:
    try:
        with client(cluster, index, timeout=3) as api:
            r = api.get("/metrics")
    except httpx.HTTPError:
        return None  # cut off, or killed: no answer is an answer
    assert r.status_code == 200, r.text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }


def healthy(cluster: Cluster, index: int) -> bool:
    try:
        with client(cluster, index, timeout=2) as api:
            return api.get("/health").status_code == 200
    except httpx.HTTPError:
        return False


def runners_connected(cluster: Cluster) -> int:
    total = 0
    for index in range(len(cluster.replicas)):
        seen = scrape(cluster, index)
        total += int((seen or {}).get(("paperclip_runners_connected", ()), 0))
    return total


def test_replicas_and_runners_on_their_own_machines_survive_cut_links_and_kills(cluster):
    cluster.start()
    wait_until(lambda: all(healthy(cluster, i) for i in (0, 1)), 90, 0.3, "both replicas")
    cluster.start_runners()
    wait_until(lambda: runners_connected(cluster) == 2, 60, 0.3, "both runners connected")
    # Each run lasts about 30 s (three comments 10 s apart): the faults below, some 12 s
    # long, fall on runs still going on a fast machine too.
    workload = Workload(RUNS * CYCLES, cluster.script_dir, pause=10.0, comments=3)
    with client(cluster, 0, timeout=30) as api:
        workload.create(api)
    url, company = cluster.postgres.url, workload.company_id
    scrapes: list[dict] = []

    def scrape_both() -> None:
        for index in (0, 1):
            seen = scrape(cluster, index)
            if seen is not None:
                assert seen[("paperclip_database_up", ())] in (0, 1)
                scrapes.append(seen)

    def in_flight() -> int:
        return asyncio.run(unfinished_runs(url, company))

    def started(items) -> bool:
        ids = [item.issue_id for item in items]
        found = query(url, "SELECT DISTINCT issue_id FROM runs WHERE issue_id::text = ANY($1)", ids)
        return len(found) == len(ids)

    for cycle in range(CYCLES):
        # Each cycle's runs, assigned through a live replica; the faults fall on the two
        # sides in turn.
        wave = workload.items[cycle * RUNS : (cycle + 1) * RUNS]
        with client(cluster, cycle % 2, timeout=30) as api:
            for item in wave:
                assert workload.assign(api, item)
        cut, killed = cycle % 2, 1 - cycle % 2
        slow = cluster.runner_machines[cycle % 2]
        net, replica = cluster.network, cluster.replicas[cut]
        wait_until(lambda wave=wave: started(wave), 60, 0.3, "the cycle's runs started")
        # A slow link to a runner, then a replica cut off from everything (its runners move
        # to the other, its runs are adopted there), then healed.
        net.delay(slow, 200)
        time.sleep(2)  # deliberate: the link stays slow this long, with runs on it
        scrape_both()
        assert in_flight() > 0
        net.cut(replica)
        time.sleep(1)  # deliberate: cut this long before it is looked at
        assert scrape(cluster, cut) is None  # cut off: nothing reaches it
        time.sleep(4)  # deliberate: the cut lasts past the lease (2 s): its runs are adopted
        scrape_both()
        net.heal(replica)
        net.heal(slow)
        # SIGKILL of the other replica and of a runner, started again on their machines.
        assert in_flight() > 0
        cluster.control_planes[killed].signal(signal.SIGKILL)
        cluster.runners[killed].signal(signal.SIGKILL)
        time.sleep(2)  # deliberate: both stay dead a while, their runs without them
        scrape_both()
        cluster.control_planes[killed].start()
        cluster.runners[killed].start()
        wait_until(lambda: all(healthy(cluster, i) for i in (0, 1)), 90, 0.3, "both replicas")
        scrape_both()

    def settled() -> bool:
        outcome = asyncio.run(settled_issues(url, company))
        return len(outcome) == RUNS * CYCLES and asyncio.run(unfinished_runs(url, company)) == 0

    wait_until(settled, 240, 1.0, "every run settled")
    violations = asyncio.run(
        check_all(
            url,
            company,
            [item.issue_id for item in workload.items],
            cluster.fake_log,
            [cluster.folder / f"runner{i}" for i in (0, 1)],
            [c.log_path for c in [*cluster.control_planes, *cluster.runners]],
        )
    )
    assert violations == [], violations
    assert not workload.server_errors
    outcome = asyncio.run(settled_issues(url, company))
    assert set(outcome.values()) == {"succeeded"}, outcome

    # The metrics, scraped under the faults: read from replicas that could answer, and at
    # the end the whole instance seen the same way from both.
    assert len(scrapes) >= 4 * CYCLES
    wait_until(lambda: runners_connected(cluster) == 2, 60, 0.5, "both runners back")
    ends = [scrape(cluster, i) for i in (0, 1)]
    for seen in ends:
        assert seen is not None
        assert seen[("paperclip_runs", (("status", "succeeded"),))] >= RUNS * CYCLES
        assert seen[("paperclip_journal_pending", ())] == 0
        assert seen[("paperclip_database_up", ())] == 1
    # A replica counts the calls it ran since it started: seen while the runs went on.
    post_comment = ("paperclip_tool_calls_total", (("outcome", "ok"), ("tool", "post_comment")))
    assert any(seen.get(post_comment, 0) >= 1 for seen in scrapes)
