"""Who is acting: recorded on every write, and the basis of every scope check."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

ActorType = Literal["user", "api_key", "agent", "system"]


@dataclass(frozen=True, slots=True)
class Actor:
    type: ActorType
    id: str
    company_id: uuid.UUID | None = None
    """Set for actors bound to one company (agents acting through a run token)."""
    run_id: uuid.UUID | None = None
    """Set when an agent acts through a run token: it may act only as that run."""

    @property
    def is_board(self) -> bool:
        """A person or board key: may act on every company."""
        return self.type in {"user", "api_key"}


LOCAL_OPERATOR = Actor(type="user", id="local-operator")
SYSTEM = Actor(type="system", id="paperclip")
