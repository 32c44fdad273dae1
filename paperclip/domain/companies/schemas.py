"""The bodies of the companies routes: msgspec structs that Litestar validates and documents."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

import msgspec
from msgspec import UNSET, Meta, UnsetType

from paperclip.http.fields import Name, Prefix
from paperclip.models import Company

TimeZoneName = Annotated[str, Meta(min_length=1, max_length=64)]


class CompanyCreate(msgspec.Struct, forbid_unknown_fields=True):
    name: Name
    issue_prefix: Prefix | None = None
    time_zone: TimeZoneName = "UTC"
    """An IANA time zone (``Europe/Paris``): budget months are calendar months there."""


class CompanyUpdate(msgspec.Struct, forbid_unknown_fields=True):
    name: Name | UnsetType = UNSET
    issue_prefix: Prefix | UnsetType = UNSET
    time_zone: TimeZoneName | UnsetType = UNSET


class CompanyOut(msgspec.Struct):
    id: uuid.UUID
    name: str
    issue_prefix: str
    issue_counter: int
    created_at: datetime
    updated_at: datetime
    time_zone: str = "UTC"

    @classmethod
    def of(cls, row: Company) -> CompanyOut:
        return msgspec.convert(row, cls, from_attributes=True)
