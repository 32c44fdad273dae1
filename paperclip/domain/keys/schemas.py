"""The bodies of the keys routes: msgspec structs that Litestar validates and documents."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from paperclip.http.fields import SPACES
from paperclip.models import ApiKey

KeyName = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=200,
        pattern=rf"^[^\x00-\x1f\x7f]*[^\x00-\x1f\x7f{SPACES}][^\x00-\x1f\x7f]*$",
        description="Printable, not blank; unique among the company's live keys.",
    ),
]


CompanyRoleName = Literal["admin", "member", "viewer"]


class ApiKeyCreate(msgspec.Struct, forbid_unknown_fields=True):
    name: KeyName
    role: CompanyRoleName = "member"


class ApiKeyOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID | None
    name: str
    role: Literal["admin", "member", "viewer", "instance_admin"]
    prefix: str
    """The key's first characters, to tell keys apart."""
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None

    @classmethod
    def of(cls, row: ApiKey) -> ApiKeyOut:
        return msgspec.convert(row, cls, from_attributes=True)


class ApiKeyCreated(msgspec.Struct):
    api_key: ApiKeyOut
    key: str
    """The secret: shown in this answer only. Send it as ``Authorization: Bearer <key>``."""
