"""The base of a recovery policy that lists, proves and settles through the control-plane port.

A policy names what it needs of the port; the base does the rest of the
:class:`~paperclip_hookspecs.recovery.RecoveryPolicy` protocol: it takes the
port from the pass's context (refusing a pass without one, naming the hook
API the policy needs), builds the candidates, and hands the port to each step.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from paperclip_hookspecs.recovery import (
    OwnerProof,
    OwnerRef,
    RecoveryCandidate,
    RecoveryContext,
    RecoveryPort,
    Settlement,
)


def port_of(ctx: RecoveryContext, hook_api: str) -> RecoveryPort:
    """The pass's control-plane port; RuntimeError when the reconciler gave none."""
    if ctx.port is None:
        raise RuntimeError(
            f"the reconciler gave no control-plane port (hook API {hook_api} needed)"
        )
    return ctx.port


class PortPolicy(abc.ABC):
    """A recovery policy whose every step goes through the control-plane port.

    A subclass is a frozen dataclass with a ``name`` field and the four
    steps below; ``hook_api`` is the contract its port operations came in.
    """

    __slots__ = ()
    name: str
    hook_api: ClassVar[str] = "1.3"

    @abc.abstractmethod
    async def pending(self, port: RecoveryPort, limit: int) -> Sequence[Any]:
        """The items the port lists for this policy, at most ``limit``."""

    @abc.abstractmethod
    def to_candidate(self, item: Any) -> RecoveryCandidate:
        """One listed item as a candidate (see :meth:`candidate`)."""

    @abc.abstractmethod
    async def prove(self, port: RecoveryPort, candidate: RecoveryCandidate) -> OwnerProof:
        """Whether the candidate's earlier owner is provably gone."""

    @abc.abstractmethod
    async def settle_with(
        self, port: RecoveryPort, candidate: RecoveryCandidate, proof: OwnerProof
    ) -> Settlement:
        """Settle the candidate, once."""

    def candidate(
        self, item: Any, key: str, owner: OwnerRef | None, facts: Mapping[str, Any]
    ) -> RecoveryCandidate:
        """A candidate of this kind for ``item`` (its company, and its issue and run if any)."""
        return RecoveryCandidate(
            kind=self.name,
            key=key,
            company_id=item.company_id,
            issue_id=getattr(item, "issue_id", None),
            run_id=getattr(item, "run_id", None),
            owner=owner,
            facts=facts,
        )

    async def list_candidates(
        self, ctx: RecoveryContext, limit: int
    ) -> Sequence[RecoveryCandidate]:
        """The port's items for this policy, as candidates."""
        items = await self.pending(port_of(ctx, self.hook_api), limit)
        return [self.to_candidate(item) for item in items]

    async def prove_owner_gone(
        self, ctx: RecoveryContext, candidate: RecoveryCandidate
    ) -> OwnerProof:
        """:meth:`prove`, given the port."""
        return await self.prove(port_of(ctx, self.hook_api), candidate)

    async def settle(
        self, ctx: RecoveryContext, candidate: RecoveryCandidate, proof: OwnerProof
    ) -> Settlement:
        """:meth:`settle_with`, given the port."""
        return await self.settle_with(port_of(ctx, self.hook_api), candidate, proof)
