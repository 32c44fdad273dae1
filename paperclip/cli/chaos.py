"""``paperclip chaos``: real processes under faults, then the invariants (see docs/reliability.md)."""

from __future__ import annotations

import shlex
import signal
import sys
from pathlib import Path
from typing import Any

import click

from paperclip.cli_kit.output import console, emit_json, fail


def _names(value: str, known: list[str], what: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise click.BadParameter(f"unknown {what}: {', '.join(unknown)}; known: {', '.join(known)}")
    return names


@click.command()
@click.option(
    "--runs", default=12, show_default=True, help="Runs in the workload (one issue each)."
)
@click.option("--concurrency", default=4, show_default=True, help="Runs active at once.")
@click.option("--replicas", default=2, show_default=True, help="Control-plane replicas.")
@click.option("--runners", default=1, show_default=True, help="Runner processes.")
@click.option("--faults", default="all", show_default=True, help="Fault kinds, comma-separated.")
@click.option("--mix", default="", help="Relative weights, e.g. cp_kill=3,pg_kill=1 (1 each).")
@click.option("--points", default="all", show_default=True, help="Failpoints to arm.")
@click.option("--interval", default=3.0, show_default=True, help="Mean seconds between faults.")
@click.option("--seed", default=1, show_default=True, help="Seeds every random choice.")
@click.option("--pause", default=0.5, show_default=True, help="Seconds between a run's tool calls.")
@click.option("--arm-chance", default=0.5, show_default=True, help="Chance a start arms a point.")
@click.option(
    "--arm-spread", default=3, show_default=True, help="An armed point fires on pass 1..N."
)
@click.option(
    "--arm-timeout",
    default=0.0,
    show_default=True,
    help="Re-arm after N s serving unfired (0: never).",
)
@click.option(
    "--rest",
    default=0.0,
    show_default=True,
    help="End an unarmed life after a failpoint N s after it serves (0: never).",
)
@click.option("--comments", default=2, show_default=True, help="Comments each run posts.")
@click.option("--steers", default=1, show_default=True, help="Comments steered into each run.")
@click.option(
    "--runner-gone",
    default=20.0,
    show_default=True,
    help="Seconds before a runner's runs are lost.",
)
@click.option("--timeout", default=600.0, show_default=True, help="Seconds of faults at most.")
@click.option(
    "--until-fired",
    default=0,
    show_default=True,
    help="End the faults once every point has fired N times (0: at --timeout).",
)
@click.option("--settle", default=90.0, show_default=True, help="Seconds the last runs get after.")
@click.option(
    "--progress", type=click.Path(path_type=Path), help="Write the figures so far here (30 s)."
)
@click.option("--keep", type=click.Path(path_type=Path), help="Copy the logs here afterwards.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
def chaos(
    runs: int,
    concurrency: int,
    replicas: int,
    runners: int,
    faults: str,
    mix: str,
    points: str,
    interval: float,
    seed: int,
    pause: float,
    arm_chance: float,
    arm_spread: int,
    arm_timeout: float,
    rest: float,
    comments: int,
    steers: int,
    runner_gone: float,
    timeout: float,
    until_fired: int,
    settle: float,
    progress: Path | None,
    keep: Path | None,
    as_json: bool,
) -> None:
    """Run a workload on real processes while injecting faults, then check the invariants.

    Starts an embedded PostgreSQL in a temporary folder, control-plane replicas
    and runners (through link proxies), and the scripted fake Codex provider.
    Exits 1 when any invariant is violated.
    """
    from paperclip.chaos.faults import KINDS
    from paperclip.chaos.harness import ChaosOptions, ChaosRun
    from paperclip.chaos.points import POINTS

    try:
        import paperclip_codex_testing.fake_app_server  # noqa: F401
    except ImportError:
        fail(
            "the chaos workload runs the fake Codex, and paperclip-codex-testing is not installed",
            hint="install the codex plugin with its fake: pip install 'paperclip-codex[testing]'",
        )
    options = ChaosOptions(
        runs=runs,
        concurrency=concurrency,
        replicas=replicas,
        runners=runners,
        faults=list(KINDS) if faults == "all" else _names(faults, list(KINDS), "fault kind"),
        mix=mix,
        points=[p.name for p in POINTS]
        if points == "all"
        else _names(points, [p.name for p in POINTS], "failpoint"),
        interval=interval,
        seed=seed,
        pause=pause,
        arm_chance=arm_chance,
        arm_spread=arm_spread,
        arm_timeout=arm_timeout,
        rest=rest,
        comments=comments,
        steers=steers,
        runner_gone_seconds=runner_gone,
        timeout=timeout,
        until_fired=until_fired,
        settle_seconds=settle,
        progress=progress,
        keep=keep,
    )
    # A SIGTERM ends the run like Ctrl-C does: the cluster's processes are stopped first.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        result = ChaosRun(options).run()
    except ValueError as exc:
        fail(str(exc))
    result["command"] = shlex.join(["paperclip", "chaos", *sys.argv[2:]])
    if as_json:
        emit_json(result)
    else:
        show(result)
    raise SystemExit(0 if result["ok"] else 1)


def show(result: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=f"paperclip chaos, seed {result['seed']}, {result['seconds']} s")
    for column in (
        "fault",
        "count",
        "to health (median / p99 s)",
        "to next event (median / p99 s)",
    ):
        table.add_column(column)
    recovery = result["recovery_seconds"]
    for kind, count in sorted(result["faults"]["by_kind"].items()):
        health, event = recovery[kind]["to_health"], recovery[kind]["to_next_event"]
        table.add_row(
            kind,
            str(count),
            f"{health['median']} / {health['p99']}",
            f"{event['median']} / {event['p99']}",
        )
    table.add_row("total", str(result["faults"]["total"]), "", "")
    console.print(table)
    points = result["failpoints"]
    for name, fired in points["fired"].items():
        console.print(f"failpoint {name}: armed {points['armed'][name]}, fired {fired}")
    console.print("runs: " + ", ".join(f"{k} {v}" for k, v in result["runs"].items()))
    replayed = result["replayed_lost_turns"]
    console.print(
        f"replayed lost turns: {replayed['count']} (completed by the provider, lost with "
        "the runner before their end was stored; the run went on in its next turn)"
    )
    if result["violations"]:
        console.print(f"[bold red]{len(result['violations'])} violation(s)[/]")
        for v in result["violations"][:30]:
            console.print(f"  {v['kind']}: {v['detail']}", highlight=False)
    else:
        console.print("[green]0 violations[/]")
