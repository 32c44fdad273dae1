"""The constrained field types of request bodies, and the fields a PATCH body set."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta

# Not blank: one character that no regex engine counts as a space. ``\S`` does not do:
# Python's ``\s`` has \x1c-\x1f and \x85, JavaScript's has \ufeff, so a client (or a
# fuzzer) reading the document and the server would disagree about a blank text.
SPACES = r"\t\n\v\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
NOT_BLANK = rf"[^{SPACES}]"
Name = Annotated[str, Meta(min_length=1, max_length=200, pattern=NOT_BLANK)]
Prefix = Annotated[str, Meta(min_length=2, max_length=10, pattern=r"^[A-Z][A-Z0-9]+$")]
Title = Annotated[str, Meta(min_length=1, max_length=500, pattern=NOT_BLANK)]
LongText = Annotated[str, Meta(max_length=100_000)]
Body = Annotated[str, Meta(min_length=1, max_length=100_000, pattern=NOT_BLANK)]
ProviderName = Annotated[str, Meta(min_length=1, max_length=100, pattern=r"^[a-z][a-z0-9_-]*$")]
Role = Annotated[str, Meta(max_length=200)]
ShortText = Annotated[str, Meta(max_length=500)]
IdempotencyKey = Annotated[str, Meta(min_length=1, max_length=200)]
HeartbeatSeconds = Annotated[int, Meta(ge=60, le=7 * 86_400)]
JsonObject = dict[str, Any]


def changes(struct: msgspec.Struct) -> dict[str, Any]:
    """The fields a PATCH body actually set."""
    return {
        name: value
        for name in struct.__struct_fields__
        if (value := getattr(struct, name)) is not UNSET
    }
