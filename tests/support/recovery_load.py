"""Recovery under load: lost runs and settled history written straight into a database.

``seed_lost_runs`` writes runs whose first turn was lost with its provider
(what a crash of many runners leaves behind: every one a candidate of the
``lost_runs`` policy); ``seed_history`` writes runs that ended long ago, with
their events and tool calls, which recovery must not pay for. Both use
``generate_series`` so that a million rows take seconds. Used by the
health-under-load test and by ``bench/recovery_pass.py``.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

import asyncpg
from paperclip_hookspecs.prompts import Lane, SessionAttempt, TaskSource, WakeSource

from paperclip.plugin_host import PluginHost
from paperclip.prompts import AgentBrief, AssemblyRequest, assemble_execution_input

EVENTS_PER_RUN = 6
CALLS_PER_RUN = 3
ROWS_PER_HISTORY_RUN = 1 + EVENTS_PER_RUN + CALLS_PER_RUN
"""A settled run, its events and its tool calls."""


@dataclass(frozen=True)
class Tenant:
    company_id: uuid.UUID
    agent_id: uuid.UUID


async def seed_tenant(conn: asyncpg.Connection, provider: str = "codex") -> Tenant:
    """A company and its agent on ``provider``."""
    company_id, agent_id = uuid.uuid4(), uuid.uuid4()
    await conn.execute(
        "INSERT INTO companies (id, name, issue_prefix, issue_counter, created_at, updated_at) "
        "VALUES ($1, 'Load', 'LOAD', 0, now(), now())",
        company_id,
    )
    await conn.execute(
        "INSERT INTO agents (id, company_id, name, role, provider, provider_config, status, "
        "created_at, updated_at) VALUES ($1, $2, 'loader', '', $3, '{}'::jsonb, 'active', "
        "now(), now())",
        agent_id,
        company_id,
        provider,
    )
    return Tenant(company_id, agent_id)


def execution_input() -> tuple[str, str]:
    """A real execution input (schema, JSON), as a claim would have stored it."""
    assembled = assemble_execution_input(
        AssemblyRequest(
            task=TaskSource("issue", "LOAD-1", "Fix the build", "The build is red."),
            wake=WakeSource("assignment", ()),
            lane=Lane.NATIVE,
            attempt=SessionAttempt.FRESH,
            provider="codex",
            agent=AgentBrief(name="loader", instructions=""),
        ),
        PluginHost.with_builtins(),
    )
    return assembled.schema, json.dumps(assembled.envelope)


async def seed_lost_runs(conn: asyncpg.Connection, tenant: Tenant, count: int) -> None:
    """``count`` issues, each with a run whose first turn was lost (``provider_exited``),
    its controller's lease long expired: candidates of the ``lost_runs`` policy."""
    schema, envelope = execution_input()
    async with conn.transaction():
        start = await conn.fetchval(
            "UPDATE companies SET issue_counter = issue_counter + $2 WHERE id = $1 "
            "RETURNING issue_counter - $2",
            tenant.company_id,
            count,
        )
        await conn.execute(
            """
            CREATE TEMP TABLE lost_seed ON COMMIT DROP AS
            SELECT gen_random_uuid() AS issue_id, gen_random_uuid() AS run_id, n
            FROM generate_series($1::int + 1, $1::int + $2::int) AS n
            """,
            start,
            count,
        )
        await conn.execute(
            """
            INSERT INTO issues (id, company_id, number, identifier, title, description, status,
                                priority, assignee_agent_id, created_at, updated_at)
            SELECT issue_id, $1, n, 'LOAD-' || n, 'Lost run ' || n, '', 'in_progress',
                   'medium', $2, now(), now()
            FROM lost_seed
            """,
            tenant.company_id,
            tenant.agent_id,
        )
        await conn.execute(
            """
            INSERT INTO runs (id, company_id, agent_id, issue_id, status, phase, provider,
                              session_ref, execution_input, execution_input_schema,
                              controller_instance, controller_epoch, lease_expires_at,
                              turn, resume_attempts, last_event_seq, started_at,
                              created_at, updated_at)
            SELECT run_id, $1, $2, issue_id, 'running', 'turn', 'codex',
                   'thread-' || n, $3::jsonb, $4, 'gone-replica', 1,
                   now() - interval '1 hour', 1, 0, 0, now() - interval '1 hour',
                   now() - interval '1 hour', now()
            FROM lost_seed
            """,
            tenant.company_id,
            tenant.agent_id,
            envelope,
            schema,
        )
        await conn.execute(
            """
            INSERT INTO run_turns (company_id, run_id, number, kind, status, session_ref,
                                   error_code, created_at, started_at, finished_at)
            SELECT $1, run_id, 1, 'initial', 'lost', 'thread-' || n, 'provider_exited',
                   now() - interval '1 hour', now() - interval '1 hour', now()
            FROM lost_seed
            """,
            tenant.company_id,
        )


async def seed_history(conn: asyncpg.Connection, tenant: Tenant, rows: int) -> None:
    """About ``rows`` rows of the past: settled runs, each with its events and tool calls."""
    runs = max(1, rows // ROWS_PER_HISTORY_RUN)
    async with conn.transaction():
        await conn.execute(
            """
            CREATE TEMP TABLE history_seed ON COMMIT DROP AS
            SELECT gen_random_uuid() AS run_id, n FROM generate_series(1, $1::int) AS n
            """,
            runs,
        )
        await conn.execute(
            """
            INSERT INTO runs (id, company_id, agent_id, status, phase, provider, session_ref,
                              status_reason, controller_instance, controller_epoch, turn,
                              resume_attempts, last_event_seq, started_at, finished_at,
                              created_at, updated_at)
            SELECT run_id, $1, $2, 'succeeded', 'done', 'codex', 'thread-h' || n,
                   'task_completed', 'old-replica', 1, 1, 0, $3, now() - interval '30 days',
                   now() - interval '30 days', now() - interval '30 days',
                   now() - interval '30 days'
            FROM history_seed
            """,
            tenant.company_id,
            tenant.agent_id,
            EVENTS_PER_RUN,
        )
        await conn.execute(
            """
            INSERT INTO run_turns (company_id, run_id, number, kind, status, session_ref,
                                   created_at, started_at, finished_at)
            SELECT $1, run_id, 1, 'initial', 'completed', 'thread-h' || n,
                   now() - interval '30 days', now() - interval '30 days',
                   now() - interval '30 days'
            FROM history_seed
            """,
            tenant.company_id,
        )
        await conn.execute(
            """
            INSERT INTO run_events (company_id, run_id, seq, type, payload, turn,
                                    source_instance, source_seq, created_at)
            SELECT $1, run_id, e, 'item/completed', '{"text": "done"}'::jsonb, 1,
                   'old-runner', (n - 1) * $2 + e, now() - interval '30 days'
            FROM history_seed, generate_series(1, $2::int) AS e
            """,
            tenant.company_id,
            EVENTS_PER_RUN,
        )
        await conn.execute(
            """
            INSERT INTO tool_calls (company_id, run_id, call_id, tool, arguments, status,
                                    admitted_by, admitted_epoch, result, is_error, settled_by,
                                    settled_epoch, created_at, settled_at)
            SELECT $1, run_id, 'call-' || c, 'post_comment', '{}'::jsonb, 'settled',
                   'old-replica', 1, '{"ok": true}'::jsonb, false, 'old-replica', 1,
                   now() - interval '30 days', now() - interval '30 days'
            FROM history_seed, generate_series(1, $2::int) AS c
            """,
            tenant.company_id,
            CALLS_PER_RUN,
        )
    await conn.execute("ANALYZE")
