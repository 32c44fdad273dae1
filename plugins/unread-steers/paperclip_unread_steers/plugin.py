"""Registers the unread-steers policy."""

from __future__ import annotations

from collections.abc import Sequence

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.steering import SteerLogEvent

from paperclip_unread_steers.ledger import unread_steered_message_ids


@hookimpl
def paperclip_unread_steers(events: Sequence[SteerLogEvent]) -> list[str]:
    return unread_steered_message_ids(events)
