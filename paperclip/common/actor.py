"""Who is acting: recorded on every write, and the basis of every scope check."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from paperclip.models.api_key import ROLE_RANK, KeyRole

ActorType = Literal["user", "api_key", "agent", "system"]


@dataclass(frozen=True, slots=True)
class Actor:
    type: ActorType
    id: str
    company_id: uuid.UUID | None = None
    """Set for actors bound to one company: company keys, and agents acting through a run token."""
    run_id: uuid.UUID | None = None
    """Set when an agent acts through a run token: it may act only as that run."""
    issue_id: uuid.UUID | None = None
    """A run token's run's issue (None for other actors, and runs without one)."""
    role: KeyRole | None = None
    """What a person or key may do (None for agents: a run token's rules are its own)."""

    def may(self, needed: KeyRole) -> bool:
        """Whether this actor's role includes ``needed``."""
        return self.role is not None and ROLE_RANK[self.role] >= ROLE_RANK[needed]

    def sees(self, company_id: uuid.UUID) -> bool:
        """Whether this actor may see the company at all."""
        return self.company_id is None or self.company_id == company_id


LOCAL_OPERATOR = Actor(type="user", id="local-operator", role=KeyRole.INSTANCE_ADMIN)
SYSTEM = Actor(type="system", id="paperclip", role=KeyRole.INSTANCE_ADMIN)
