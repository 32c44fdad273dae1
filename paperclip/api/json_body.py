"""What every JSON request body must be before any handler sees it.

Well-formed (``malformed_json``), nested at most ``MAX_JSON_DEPTH`` deep
(``json_too_deep``: a 10,000-deep array otherwise exhausts the decoder's
recursion), and free of NUL characters, which PostgreSQL cannot store in text
or JSONB (``invalid_character``, naming the field).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

MAX_JSON_DEPTH = 32
"""Deepest nesting of arrays and objects accepted in a request body."""


@dataclass(frozen=True, slots=True)
class BodyRefused(Exception):
    code: str
    message: str
    field: str | None = None


def check_json_body(body: bytes) -> None:
    """Raise :class:`BodyRefused` unless ``body`` is acceptable JSON."""
    try:
        value = msgspec.json.decode(body)
    except RecursionError:
        raise BodyRefused(
            "json_too_deep", f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels"
        ) from None
    except msgspec.DecodeError as exc:
        raise BodyRefused("malformed_json", f"the body is not valid JSON: {exc}") from None
    _walk(value)


def _walk(root: Any) -> None:
    # Iterative, so that no input can exhaust the interpreter's stack.
    stack: list[tuple[Any, str, int]] = [(root, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, str):
            if "\x00" in value:
                raise BodyRefused(
                    "invalid_character", "text may not contain NUL (\\u0000)", path or "(body)"
                )
            continue
        if not isinstance(value, dict | list):
            continue
        if depth >= MAX_JSON_DEPTH:
            raise BodyRefused(
                "json_too_deep",
                f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels",
                path or None,
            )
        if isinstance(value, dict):
            for key, item in value.items():
                child = f"{path}.{key}" if path else str(key)
                if "\x00" in key:
                    raise BodyRefused(
                        "invalid_character", "a key may not contain NUL (\\u0000)", path or "(body)"
                    )
                stack.append((item, child, depth + 1))
        else:
            for index, item in enumerate(value):
                stack.append((item, f"{path}[{index}]", depth + 1))
