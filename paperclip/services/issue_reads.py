"""The issue page's reads in plain SQL: an issue, and a page of its comments.

They are the API's most frequent requests (a board shows an issue with its
comments, and clients poll it). Through the ORM each read costs a
transaction (``BEGIN``, ``ROLLBACK``), a compiled statement and an object per
row, several times what the database does for it. Here each is one prepared
statement on the session's asyncpg connection, outside a transaction (a
single read needs none), and the rows go out as asyncpg returns them.

Both are scoped to the company in the statement itself: an issue of another
company is ``issue_not_found``, exactly as a missing one.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.db.driver import driver_connection
from paperclip.errors import NotFoundError
from paperclip.services.queries import Cursor

ISSUE_COLUMNS = (
    "id, company_id, identifier, number, title, description, status, priority,"
    " assignee_agent_id, parent_id, created_at, updated_at"
)
COMMENT_COLUMNS = (
    "id, company_id, issue_id, author_agent_id, author_user_id, body, revision,"
    " created_by_run_id, edited_at, deleted_at, created_at"
)

ISSUE = f"SELECT {ISSUE_COLUMNS} FROM issues WHERE id = $2 AND company_id = $1"


def _comments_page(after: bool) -> str:
    """The issue (its id, or no row when it is not the company's) and one page of its comments.

    One statement: the issue's row is the anchor, its comments are joined
    laterally, so a missing issue is no row at all and an issue without
    comments is one row of NULLs. ``(created_at, id)`` order, as every list.
    """
    keyset = " AND (cm.created_at, cm.id) > ($4, $5)" if after else ""
    return (
        f"SELECT i.id AS found, c.* FROM issues i LEFT JOIN LATERAL ("
        f" SELECT {COMMENT_COLUMNS} FROM comments cm"
        f" WHERE cm.company_id = i.company_id AND cm.issue_id = i.id{keyset}"
        f" ORDER BY cm.created_at, cm.id LIMIT $3) c ON true"
        f" WHERE i.id = $2 AND i.company_id = $1"
    )


COMMENTS_FIRST_PAGE = _comments_page(after=False)
COMMENTS_NEXT_PAGE = _comments_page(after=True)


class IssueReads:
    """Read an issue and its comments for the API (writes stay with the services)."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def issue(self, company_id: uuid.UUID, issue_id: uuid.UUID) -> dict[str, Any]:
        """The issue's columns, or ``issue_not_found``."""
        async with self.sessions() as session:
            row = await (await driver_connection(session)).fetchrow(ISSUE, company_id, issue_id)
        if row is None:
            raise NotFoundError.of("issue", issue_id)
        return dict(row)

    async def comments(
        self, company_id: uuid.UUID, issue_id: uuid.UUID, *, after: Cursor | None, limit: int
    ) -> tuple[list[dict[str, Any]], Cursor | None]:
        """One page of the issue's comments (deleted ones included, bodies emptied) and the next page's start."""
        if after is None:
            statement, args = COMMENTS_FIRST_PAGE, (company_id, issue_id, limit + 1)
        else:
            statement = COMMENTS_NEXT_PAGE
            args = (company_id, issue_id, limit + 1, after.created_at, after.id)
        async with self.sessions() as session:
            rows = await (await driver_connection(session)).fetch(statement, *args)
        if not rows:
            raise NotFoundError.of("issue", issue_id)
        comments = [_without_anchor(r) for r in rows if r["id"] is not None]
        if len(comments) > limit:
            comments = comments[:limit]
            last = comments[-1]
            return comments, Cursor(last["created_at"], last["id"])
        return comments, None


def _without_anchor(row: Any) -> dict[str, Any]:
    comment = dict(row)
    del comment["found"]
    return comment
