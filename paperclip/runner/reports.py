"""What a provider driver reports while its turn runs, as runner protocol messages.

- its session, as soon as it exists: recorded on disk first (a turn lost with
  this process resumes it), then ``turn_started`` with it;
- each model response's usage: a ``usage`` message, which the control plane
  records once by its key (a replay after a reconnect counts once).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from paperclip_hookspecs.usage import MAX_USAGE_KEY, TurnUsage

from paperclip.runner.records import TurnRecords
from paperclip.wire import messages as wire

SendData = Callable[[wire.DataMessage], Awaitable[None]]


def session_reporter(
    records: TurnRecords, run_id: uuid.UUID, turn: int, send: SendData
) -> Callable[[str], Awaitable[None]]:
    async def report_session(session_ref: str) -> None:
        records.report_session(turn, session_ref)
        await send(wire.TurnStarted(seq=0, run_id=run_id, turn=turn, session_ref=session_ref))

    return report_session


def usage_reporter(
    run_id: uuid.UUID, turn: int, send: SendData
) -> Callable[[TurnUsage], Awaitable[None]]:
    async def report_usage(usage: TurnUsage) -> None:
        await send(
            wire.Usage(
                seq=0,
                run_id=run_id,
                turn=turn,
                key=str(usage.key)[:MAX_USAGE_KEY],
                model=str(usage.model)[:200],
                input_tokens=max(0, int(usage.input_tokens)),
                cached_input_tokens=max(0, int(usage.cached_input_tokens)),
                output_tokens=max(0, int(usage.output_tokens)),
                reasoning_tokens=max(0, int(usage.reasoning_tokens)),
                cost_micros=None if usage.cost_micros is None else max(0, int(usage.cost_micros)),
                currency=str(usage.currency)[:8] or "USD",
            )
        )

    return report_usage
