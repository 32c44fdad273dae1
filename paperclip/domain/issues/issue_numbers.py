"""Issue numbers: each company's counter, moved apart from the transactions that write issues.

An issue's number (``PAP-12``) comes from its company's ``issue_counter``. The
counter was moved inside the transaction that wrote the issue, so that
transaction held the company's row until it committed, and every other issue
of the company (an API call, a routine's slot) waited for it: fifty routines
due together queued on one row. Now the counter moves in a statement that
commits on its own, on a connection of its own (:class:`IssueNumbers`' pool),
and holds the row for that statement only.

- **Unique**, still: the counter moves under its row lock, and the database
  refuses a second issue with a company's number (``uq_issues_company_id_number``).
- **Not gapless**: a number taken by a transaction that then rolls back (a
  refused or failed write, a process killed before its commit) is never used.
- **In the order taken**, not the order committed: PAP-12 may become visible
  a moment before PAP-11.

The statement commits without waiting for the disk (``synchronous_commit``
off, for itself only). A crash of PostgreSQL may lose such a commit, but never
one whose number a durable issue holds: the issue's commit comes later in the
write-ahead log, and flushing it flushes everything before it.

The pool is separate so that a transaction that holds a connection of the
main pool (and its locks) and asks for a number never waits for the main pool:
the number's statement holds nothing else while it waits.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY, INTEGER, UUID
from sqlalchemy.ext.asyncio import AsyncEngine

from paperclip.errors import NotFoundError

NUMBERS_POOL_SIZE = 2
"""Connections of the numbers' pool (and as many more under load): each holds one statement."""

# The companies' rows are locked in id order, so two allocations for several
# companies never wait for each other in a cycle. ``set_config(..., true)``
# applies to this statement's own transaction: it commits without the flush.
TAKE = text(
    """
    WITH wanted AS (
        SELECT unnest(:ids) AS id, unnest(:counts) AS n
    ), locked AS (
        SELECT c.id FROM companies c JOIN wanted w ON w.id = c.id
        ORDER BY c.id FOR NO KEY UPDATE OF c
    )
    UPDATE companies c SET issue_counter = c.issue_counter + w.n, updated_at = now()
    FROM wanted w JOIN locked l ON l.id = w.id
    WHERE c.id = w.id AND set_config('synchronous_commit', 'off', true) IS NOT NULL
    RETURNING c.id, c.issue_counter, c.issue_prefix
    """
).bindparams(
    bindparam("ids", type_=ARRAY(UUID(as_uuid=True))),
    bindparam("counts", type_=ARRAY(INTEGER)),
)


@dataclass(frozen=True, slots=True)
class IssueNumber:
    """A number of a company's issues, taken for one issue."""

    number: int
    identifier: str
    """``<prefix>-<number>``, the prefix the company had when the number was taken."""


class IssueNumbers:
    """Where issue numbers come from; ``engine``: a pool of their own (each statement of it
    commits by itself)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def take(self, wanted: Mapping[uuid.UUID, int]) -> dict[uuid.UUID, list[IssueNumber]]:
        """``wanted[company]`` new numbers of each company, in one statement committed at once;
        a company that does not exist (any more) is not in the answer."""
        asked = {company: n for company, n in wanted.items() if n > 0}
        if not asked:
            return {}
        companies = sorted(asked)
        async with self.engine.connect() as connection:
            connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
            rows = (
                await connection.execute(
                    TAKE, {"ids": companies, "counts": [asked[c] for c in companies]}
                )
            ).all()
        taken: dict[uuid.UUID, list[IssueNumber]] = {}
        for company, last, prefix in rows:
            first = last - asked[company] + 1
            taken[company] = [IssueNumber(n, f"{prefix}-{n}") for n in range(first, last + 1)]
        return taken

    async def one(self, company_id: uuid.UUID) -> IssueNumber:
        """A new number of the company's issues; ``company_not_found`` when it is gone."""
        taken = await self.take({company_id: 1})
        if company_id not in taken:
            raise NotFoundError.of("company", company_id)
        return taken[company_id][0]
