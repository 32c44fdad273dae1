"""An issue in a URL, named as people name it: ``…/issues/{issue_id}`` takes its id or its
identifier (``PAP-1``, any case).

The path parameter is a string that one dependency resolves, within the URL's
company, to the issue's id; handlers take that id as ``issue_uuid`` and never
see the string. A run token's reach (its own run's issue) is checked there too,
for an identifier is known only once resolved. An id goes through as given (the handler's own read finds the
issue in the company, or answers ``404 issue_not_found``, as before); an
identifier costs one indexed read. An identifier no issue of the company
carries is ``404 issue_not_found``, as a missing id is.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from litestar import Request
from litestar.di import Provide
from litestar.params import Parameter

from paperclip.domain.issues.issue_reads import IssueReads
from paperclip.errors import NotFoundError
from paperclip.http.access import ACTOR_KEY

IssueRef = Annotated[
    str,
    Parameter(
        min_length=1,
        max_length=64,
        description="The issue's id, or its identifier (`PAP-1`, any case).",
    ),
]


async def issue_uuid(
    company_id: uuid.UUID,
    issue_id: IssueRef,
    issue_reads: IssueReads,
    request: Request[Any, Any, Any],
) -> uuid.UUID:
    """The id of the issue that the path's ``issue_id`` names in the path's company.

    A run token reaches its own run's issue only: another one, by id or identifier,
    is answered as a missing one (the guard checks ids before; identifiers are known
    only here)."""
    found = await issue_reads.issue_id(company_id, issue_id)
    actor = request.state.get(ACTOR_KEY)
    if actor is not None and actor.run_id is not None and found != actor.issue_id:
        raise NotFoundError.of("issue", issue_id)
    return found


ISSUE_IN_PATH: dict[str, Any] = {"issue_uuid": Provide(issue_uuid)}
"""The dependencies of a route whose path holds ``{issue_id:str}``."""
