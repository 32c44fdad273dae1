"""The placeholders of a routine's issue template, checked when it is saved, filled per slot."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from paperclip.errors import InvalidInputError

PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")
PLACEHOLDERS = {
    "date": "the slot's date in the routine's time zone (2026-03-09)",
    "time": "the slot's time there (09:00)",
    "datetime": "the slot's date, time and UTC offset there (2026-03-09T09:00:00+01:00)",
    "weekday": "the slot's day of the week there (Monday)",
    "routine": "the routine's name",
    "trigger": "cron, webhook or manual",
}
PAYLOAD_CHARS = 20_000
"""A webhook's or call's payload is shown under the description, cut here."""


def check_template(text: str, field: str) -> str:
    """``text`` if every ``{{name}}`` in it is a known placeholder; else 422 naming the field."""
    unknown = sorted({m.group(1) for m in PLACEHOLDER.finditer(text)} - set(PLACEHOLDERS))
    if unknown:
        raise InvalidInputError(
            f"unknown placeholder(s) {', '.join('{{' + u + '}}' for u in unknown)}; "
            f"known: {', '.join('{{' + k + '}}' for k in PLACEHOLDERS)}",
            code="unknown_placeholder",
            field=field,
        )
    return text


def fill(text: str, *, slot_at: datetime, zone: str, routine: str, trigger: str) -> str:
    """``text`` with its placeholders replaced for one slot."""
    local = slot_at.astimezone(ZoneInfo(zone))
    values = {
        "date": local.strftime("%Y-%m-%d"),
        "time": local.strftime("%H:%M"),
        "datetime": local.isoformat(timespec="seconds"),
        "weekday": local.strftime("%A"),
        "routine": routine,
        "trigger": trigger,
    }
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def with_payload(description: str, payload: dict[str, Any]) -> str:
    """The description, and under it the payload that triggered the slot (when there is one)."""
    if not payload:
        return description
    shown = json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False)
    if len(shown) > PAYLOAD_CHARS:
        shown = shown[:PAYLOAD_CHARS] + "\n… (cut)"
    return f"{description}\n\nPayload of this execution:\n\n```json\n{shown}\n```".lstrip()
