"""Query parameters shared by list routes."""

from __future__ import annotations

from typing import Annotated

from litestar.params import Parameter

from paperclip.common.queries import SortKey

PAGE_SIZE_MAX = 200
PAGE_SIZE_DEFAULT = 50

Limit = Annotated[
    int, Parameter(ge=1, le=PAGE_SIZE_MAX, description=f"Page size, at most {PAGE_SIZE_MAX}.")
]
PageCursor = Annotated[
    str | None,
    Parameter(max_length=200, description="The next_cursor of the previous page."),
]

Sort = Annotated[
    SortKey,
    Parameter(
        description="The order: `created` (oldest first, the default), `-created` (newest "
        "first), `updated`, `-updated` (the last changed first).",
    ),
]
