"""Markdown helpers shared by the prompt sections."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

_BACKTICK_RUN = re.compile("`+")


def fence(text: str, info: str = "text") -> str:
    """Fence ``text`` with more backticks than any run inside it, so it cannot close early."""
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}{info}\n{text}\n{marks}"


def quote(value: str) -> str:
    """A scalar as a JSON string: a title with line breaks or quotes stays on one line."""
    return json.dumps(value, ensure_ascii=False)


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters, and whether it was cut."""
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def join_blocks(blocks: Iterable[str]) -> str:
    """Join non-empty blocks with one blank line between them."""
    return "\n\n".join(block.strip("\n") for block in blocks if block.strip())


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``1 comment``, ``3 comments``, ``1,200 comments``."""
    word = singular if n == 1 else (plural or f"{singular}s")
    return f"{n:,} {word}"
