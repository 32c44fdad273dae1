"""The issue page's reads in plain SQL: an issue, and a page of its comments.

They are the API's most frequent requests (a board shows an issue with its
comments, and clients poll it). Through the ORM each read costs a
transaction (``BEGIN``, ``ROLLBACK``), a compiled statement and an object per
row, several times what the database does for it. Here each is one prepared
statement on a pooled asyncpg connection without a session, outside a
transaction (a single read needs none), and the rows go out as asyncpg
returns them.

Both are scoped to the company in the statement itself: an issue of another
company is ``issue_not_found``, exactly as a missing one.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from paperclip.common.queries import Cursor
from paperclip.db.driver import plain_connection
from paperclip.errors import NotFoundError

Columns = Mapping[str, Any]
"""A row as the driver returns it, read by column name."""

ISSUE_COLUMNS = (
    "id, company_id, identifier, number, title, description, status, priority,"
    " assignee_agent_id, parent_id, project_id, created_at, updated_at"
)
# In the order of the API's CommentOut fields: it is built from a row by position.
COMMENT_COLUMNS = (
    "id, company_id, issue_id, author_agent_id, author_user_id, body, revision,"
    " created_by_run_id, edited_at, deleted_at, created_at"
)

ISSUE = f"SELECT {ISSUE_COLUMNS} FROM issues WHERE id = $2 AND company_id = $1"


ISSUE_EXISTS = "SELECT true FROM issues WHERE id = $2 AND company_id = $1"

# By the number (unique in the company, indexed), then the whole identifier: an issue made
# before its company's prefix changed keeps the identifier it was given.
ISSUE_ID_BY_IDENTIFIER = (
    "SELECT id FROM issues WHERE company_id = $1 AND number = $2 AND identifier = $3"
)
IDENTIFIER = re.compile(r"^[A-Z][A-Z0-9]{1,9}-([1-9][0-9]{0,8})$")
"""``<prefix>-<number>``: the prefix as companies have it, a number that fits the column."""


def _comments_page(after: bool) -> str:
    """One page of an issue's comments, ``(created_at, id)`` order as every list.

    Scoped by the comment's own ``company_id``: another company's issue has no
    comments here. A comment goes with its issue (``ON DELETE CASCADE``), so
    a row found means the issue exists; only an empty page asks whether it does.
    """
    keyset = " AND (created_at, id) > ($4, $5)" if after else ""
    return (
        f"SELECT {COMMENT_COLUMNS} FROM comments"
        f" WHERE company_id = $1 AND issue_id = $2{keyset}"
        f" ORDER BY created_at, id LIMIT $3"
    )


COMMENTS_FIRST_PAGE = _comments_page(after=False)
COMMENTS_NEXT_PAGE = _comments_page(after=True)


class IssueReads:
    """Read an issue and its comments for the API (writes stay with the services)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def issue(self, company_id: uuid.UUID, issue_id: uuid.UUID) -> Columns:
        """The issue's columns, or ``issue_not_found``."""
        async with plain_connection(self.engine) as connection:
            row = await connection.fetchrow(ISSUE, company_id, issue_id)
        if row is None:
            raise NotFoundError.of("issue", issue_id)
        return row

    async def issue_id(self, company_id: uuid.UUID, ref: str) -> uuid.UUID:
        """The id of the issue ``ref`` names: an id as given (the read that follows finds it in
        the company, or not), an identifier (``PAP-1``, any case) looked up in the company;
        ``issue_not_found`` for an identifier no issue of the company has, or anything else."""
        try:
            return uuid.UUID(ref)
        except ValueError:
            pass
        identifier = ref.strip().upper()
        if match := IDENTIFIER.match(identifier):
            async with plain_connection(self.engine) as connection:
                found = await connection.fetchval(
                    ISSUE_ID_BY_IDENTIFIER, company_id, int(match.group(1)), identifier
                )
            if found is not None:
                return uuid.UUID(str(found))
        raise NotFoundError.of("issue", ref)

    async def comments(
        self, company_id: uuid.UUID, issue_id: uuid.UUID, *, after: Cursor | None, limit: int
    ) -> tuple[list[Columns], Cursor | None]:
        """One page of the issue's comments (deleted ones included, bodies emptied) and the next page's start."""
        if after is None:
            statement, args = COMMENTS_FIRST_PAGE, (company_id, issue_id, limit + 1)
        else:
            statement = COMMENTS_NEXT_PAGE
            args = (company_id, issue_id, limit + 1, after.created_at, after.id)
        async with plain_connection(self.engine) as connection:
            comments = await connection.fetch(statement, *args)
            found = bool(comments) or await connection.fetchval(ISSUE_EXISTS, company_id, issue_id)
        if not found:
            raise NotFoundError.of("issue", issue_id)
        if len(comments) > limit:
            comments = comments[:limit]
            last = comments[-1]
            return comments, Cursor(last["created_at"], last["id"])
        return comments, None
