"""The page shape of every list response."""

from __future__ import annotations

from typing import Generic, TypeVar

import msgspec

T = TypeVar("T")


class Page(msgspec.Struct, Generic[T]):
    items: list[T]
    next_cursor: str | None = None
    """Pass as ``cursor`` to read the next page; null on the last page."""
