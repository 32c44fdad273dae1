"""A pass's new runs, written by one statement: each run with everything that starts it.

For each run: the run itself (``running``, its first turn opened, its lease
held by this replica at epoch 1), its first turn, its token (the hash), its
wake marked claimed, its issue in progress, its wake snapshot and the
snapshot's comments, its issue's worktree row, its budget reservations, the
``run.started`` activity entry, and its ``start_turn`` in its runner's outbox.

The one-active-run-per-issue unique index decides whether a run is created:
a run another replica created first for the issue is not (``ON CONFLICT DO
NOTHING``), and nothing else of it is written, so the other runs of the pass
commit without it. Every other write joins the runs the insert returned.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg

from paperclip.common.actor import SYSTEM
from paperclip.db.driver import jsonb
from paperclip.engine.context.snapshot import NewSnapshot
from paperclip.engine.logs.outbox import append_each_cte
from paperclip.engine.workspaces.placement import WorkspaceRow
from paperclip.models import RunStatus, TurnKind, TurnStatus, WakeStatus
from paperclip.wire.messages import StartTurn, payload_of

RUN_STARTED = "run.started"

CREATE = (
    f"""
WITH input AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[],
        $6::jsonb[], $7::text[], $8::uuid[], $9::uuid[], $10::timestamptz[],
        $11::timestamptz[], $12::text[])
    AS t(id, company_id, agent_id, issue_id, provider, execution_input, input_schema,
        runner_id, wake_id, started_at, lease_expires_at, token_hash)
), new_runs AS (
    INSERT INTO runs (id, company_id, agent_id, issue_id, status, phase, provider,
        execution_input, execution_input_schema, controller_instance, controller_epoch,
        lease_expires_at, runner_id, wake_request_id, started_at, turn, resume_attempts,
        last_event_seq)
    SELECT id, company_id, agent_id, issue_id, '{RunStatus.RUNNING}', 'turn', provider,
        execution_input, input_schema, $13, 1, lease_expires_at, runner_id, wake_id,
        started_at, 1, 0, 0
    FROM input
    ON CONFLICT (issue_id) WHERE status IN ('queued', 'running') AND issue_id IS NOT NULL
    DO NOTHING
    RETURNING id
), created AS MATERIALIZED (
    SELECT input.* FROM input JOIN new_runs ON new_runs.id = input.id
), turns AS (
    INSERT INTO run_turns (company_id, run_id, number, kind, status, runner_id)
    SELECT company_id, id, 1, '{TurnKind.INITIAL}', '{TurnStatus.STARTING}', runner_id
    FROM created
), tokens AS (
    INSERT INTO run_tokens (token_hash, run_id, company_id, agent_id)
    SELECT token_hash, id, company_id, agent_id FROM created
), claimed AS (
    UPDATE wake_requests w
    SET status = '{WakeStatus.CLAIMED}', claimed_at = c.started_at, run_id = c.id,
        updated_at = now()
    FROM created c WHERE w.id = c.wake_id
), working AS (
    UPDATE issues i SET status = s.status, updated_at = now()
    FROM unnest($14::uuid[], $15::text[]) AS s(issue_id, status)
    WHERE i.id = s.issue_id AND s.issue_id IN (SELECT issue_id FROM created)
), activity AS (
    INSERT INTO activity_log (company_id, actor_type, actor_id, action, entity_type,
        entity_id, details)
    SELECT company_id, $16, $17, '{RUN_STARTED}', 'run', id::text,
        jsonb_build_object('wake_request_id', wake_id::text)
    FROM created
), snapshots AS (
    INSERT INTO wake_snapshots (id, company_id, run_id, issue_id, agent_id, revision,
        comment_count, read_required, read_reason)
    SELECT s.id, c.company_id, c.id, c.issue_id, c.agent_id, s.revision, s.count,
        s.reason IS NOT NULL, s.reason
    FROM unnest($18::uuid[], $19::uuid[], $20::text[], $21::int[], $22::text[])
        AS s(run_id, id, revision, count, reason)
    JOIN created c ON c.id = s.run_id
), snapshot_comments AS (
    INSERT INTO wake_snapshot_comments (snapshot_id, position, comment_id, revision)
    SELECT e.snapshot_id, e.position, e.comment_id, e.revision
    FROM unnest($23::uuid[], $24::uuid[], $25::int[], $26::uuid[], $27::text[])
        AS e(run_id, snapshot_id, position, comment_id, revision)
    WHERE e.run_id IN (SELECT id FROM created)
), workspaces AS (
    INSERT INTO issue_workspaces (issue_id, company_id, status, runner_id, project_id, key,
        branch, repo_path, repo_url, base_ref, base_commit, hooks_enabled, path,
        diff_truncated)
    SELECT ws.*, false
    FROM unnest($28::uuid[], $29::uuid[], $30::text[], $31::uuid[], $32::uuid[],
        $33::text[], $34::text[], $35::text[], $36::text[], $37::text[], $38::text[],
        $39::bool[], $40::text[])
        AS ws(issue_id, company_id, status, runner_id, project_id, key, branch, repo_path,
            repo_url, base_ref, base_commit, hooks_enabled, path)
    WHERE ws.issue_id IN (SELECT issue_id FROM created)
    ON CONFLICT (issue_id) DO UPDATE SET
        status = EXCLUDED.status, runner_id = EXCLUDED.runner_id,
        project_id = EXCLUDED.project_id, repo_path = EXCLUDED.repo_path,
        repo_url = EXCLUDED.repo_url, base_ref = EXCLUDED.base_ref,
        base_commit = EXCLUDED.base_commit, hooks_enabled = EXCLUDED.hooks_enabled,
        path = EXCLUDED.path, release_after = NULL, released_at = NULL, saved_ref = NULL,
        error_code = NULL, error_message = NULL, updated_at = now()
), reservations AS (
    INSERT INTO run_reservations (run_id, budget_id, month, micros)
    SELECT r.run_id, r.budget_id, r.month, r.micros
    FROM unnest($41::uuid[], $42::uuid[], $43::text[], $44::bigint[])
        AS r(run_id, budget_id, month, micros)
    WHERE r.run_id IN (SELECT id FROM created)
    RETURNING budget_id, month, micros
), reserved AS (
    UPDATE budget_months m SET reserved_micros = m.reserved_micros + r.micros
    FROM (SELECT budget_id, month, sum(micros) AS micros FROM reservations
          GROUP BY budget_id, month) AS r
    WHERE m.budget_id = r.budget_id AND m.month = r.month
), """
    + append_each_cte(
        runners="$45",
        types="$46",
        run_ids="$47",
        payloads="$48",
        keep="m.run_id IN (SELECT id FROM created)",
    )
    + "\nSELECT run_id, seq FROM outbox_appended"
)


@dataclass(frozen=True, slots=True)
class Reservation:
    """What a run holds of a budget's month (``costs.admission``)."""

    budget_id: uuid.UUID
    month: str
    micros: int


@dataclass(slots=True)
class NewRun:
    """A run a claim creates, and everything written with it."""

    id: uuid.UUID
    company_id: uuid.UUID
    agent_id: uuid.UUID
    issue_id: uuid.UUID | None
    wake_id: uuid.UUID
    runner_id: uuid.UUID
    provider: str
    execution_input: dict[str, Any]
    execution_input_schema: str
    started_at: datetime
    lease_expires_at: datetime
    token_hash: str
    start: StartTurn
    """Its ``start_turn`` (its seq is the outbox's)."""
    issue_status: str | None = None
    """The issue's status once the run is claimed, when it changes."""
    snapshot: NewSnapshot | None = None
    workspace: WorkspaceRow | None = None
    """The issue's worktree row, when the run makes (or makes again) the worktree."""
    reservations: list[Reservation] = field(default_factory=list)


async def create_runs(
    driver: asyncpg.Connection, runs: Sequence[NewRun], *, instance: str
) -> dict[uuid.UUID, int]:
    """Write ``runs`` in the caller's transaction; the seq of each created run's
    ``start_turn`` (a run missing from it was not created: its issue has an active run)."""
    if not runs:
        return {}
    rows = await driver.fetch(CREATE, *_parameters(runs, instance))
    return {row[0]: row[1] for row in rows}


def _parameters(runs: Sequence[NewRun], instance: str) -> list[Any]:
    working = [r for r in runs if r.issue_status is not None]
    snapshots = [r for r in runs if r.snapshot is not None]
    entries = [(r, e) for r in snapshots for e in r.snapshot.entries]  # type: ignore[union-attr]
    workspaces = [r.workspace for r in runs if r.workspace is not None]
    reservations = [(r.id, h) for r in runs for h in r.reservations]
    return [
        [r.id for r in runs],
        [r.company_id for r in runs],
        [r.agent_id for r in runs],
        [r.issue_id for r in runs],
        [r.provider for r in runs],
        [jsonb(r.execution_input) for r in runs],
        [r.execution_input_schema for r in runs],
        [r.runner_id for r in runs],
        [r.wake_id for r in runs],
        [r.started_at for r in runs],
        [r.lease_expires_at for r in runs],
        [r.token_hash for r in runs],
        instance,
        [r.issue_id for r in working],
        [r.issue_status for r in working],
        SYSTEM.type,
        SYSTEM.id,
        [r.id for r in snapshots],
        [r.snapshot.id for r in snapshots],  # type: ignore[union-attr]
        [r.snapshot.revision for r in snapshots],  # type: ignore[union-attr]
        [len(r.snapshot.entries) for r in snapshots],  # type: ignore[union-attr]
        [r.snapshot.read_reason for r in snapshots],  # type: ignore[union-attr]
        [r.id for r, _ in entries],
        [r.snapshot.id for r, _ in entries],  # type: ignore[union-attr]
        [e.position for _, e in entries],
        [e.comment_id for _, e in entries],
        [e.revision for _, e in entries],
        [w.issue_id for w in workspaces],
        [w.company_id for w in workspaces],
        [w.status for w in workspaces],
        [w.runner_id for w in workspaces],
        [w.project_id for w in workspaces],
        [w.key for w in workspaces],
        [w.branch for w in workspaces],
        [w.repo_path for w in workspaces],
        [w.repo_url for w in workspaces],
        [w.base_ref for w in workspaces],
        [w.base_commit for w in workspaces],
        [w.hooks_enabled for w in workspaces],
        [w.path for w in workspaces],
        [run_id for run_id, _ in reservations],
        [h.budget_id for _, h in reservations],
        [h.month for _, h in reservations],
        [h.micros for _, h in reservations],
        [r.runner_id for r in runs],
        ["start_turn"] * len(runs),
        [r.id for r in runs],
        [jsonb(payload_of(r.start)) for r in runs],
    ]
