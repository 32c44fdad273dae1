"""``GET …/runs/{run_id}/events/stream``: a run's log as server-sent events, live.

Each event carries its ``seq`` as the SSE ``id``, so a client that reconnects
with ``Last-Event-ID`` (or ``after_seq``) gets exactly the events after the
last one it saw: no gap, no duplicate, whichever replica answers (the log is
in PostgreSQL; this reads it, nothing more). A stream ends with an ``end``
event once the run is terminal and every event was sent, or after ``wait``
seconds without that (the client then reconnects), so no stream is unbounded.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import Annotated

import msgspec
from litestar import Controller, get
from litestar.params import HeaderParameter, Parameter
from litestar.response import ServerSentEvent, ServerSentEventMessage

from paperclip.domain.runs.runs import RunQueries
from paperclip.domain.runs.schemas import RunEventOut
from paperclip.http.access import Access, access
from paperclip.http.errors import error_responses
from paperclip.models import RunStatus

log = logging.getLogger(__name__)

SEQ_MAX = 2**31 - 1
BATCH = 200
POLL_SECONDS = 0.25
RETRY_MS = 1000
"""What a reconnecting client waits (the SSE ``retry`` field)."""


class RunStreamController(Controller):
    path = "/companies/{company_id:uuid}/runs"
    tags = ["runs"]

    @get(
        "/{run_id:uuid}/events/stream",
        opt=access(Access.READ),
        responses=error_responses(404, 429),  # 429: paperclip.api.stream_limits
        media_type="text/event-stream",
    )
    async def stream_run_events(
        self,
        company_id: uuid.UUID,
        run_id: uuid.UUID,
        runs: RunQueries,
        after_seq: Annotated[
            int, Parameter(ge=0, le=SEQ_MAX, description="Send events with a greater seq.")
        ] = 0,
        last_event_id: Annotated[
            int,
            HeaderParameter(
                name="Last-Event-ID",
                ge=0,
                le=SEQ_MAX,
                description="The last seq received, sent by a reconnecting client.",
            ),
        ] = 0,
        wait: Annotated[
            int, Parameter(ge=0, le=300, description="Seconds to stay open for a live run.")
        ] = 60,
    ) -> ServerSentEvent:
        """The run's events after a seq, then each new one as it is stored (``run_event``)."""
        await runs.get(company_id, run_id)  # a missing or foreign run is a 404, before streaming
        # A reconnecting client keeps its first URL and adds the last id it saw.
        start = max(after_seq, last_event_id)
        return ServerSentEvent(_follow(runs, company_id, run_id, start, wait))


async def _follow(
    runs: RunQueries, company_id: uuid.UUID, run_id: uuid.UUID, after: int, wait: int
) -> AsyncIterator[ServerSentEventMessage]:
    deadline = time.monotonic() + wait
    yield ServerSentEventMessage(data=None, comment="paperclip run events", retry=RETRY_MS)
    try:
        while True:
            # The status is read before the events: a run seen terminal has stored its last
            # event already, so an empty read after it means the log is complete.
            status = RunStatus((await runs.get(company_id, run_id)).status)
            rows = await runs.events(company_id, run_id, after_seq=after, limit=BATCH)
            for row in rows:
                after = row.seq
                yield ServerSentEventMessage(
                    data=msgspec.json.encode(RunEventOut.of(row)).decode(),
                    event="run_event",
                    id=str(row.seq),
                )
            if len(rows) == BATCH:
                continue
            if not rows and status.terminal:
                yield ServerSentEventMessage(
                    data=msgspec.json.encode({"status": status.value, "last_seq": after}).decode(),
                    event="end",
                )
                return
            if time.monotonic() >= deadline:
                return  # the client reconnects from its last id
            await asyncio.sleep(POLL_SECONDS)
    except Exception as error:
        # Whatever broke (the database went away, say), the stream ends here and the
        # client resumes from its last id; the response has started, so no error body.
        log.warning("run event stream of %s ended early: %s", run_id, error)
