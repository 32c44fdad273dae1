"""Recovery policies: what a restart left behind, and how each item is settled once.

After a restart the reconciler asks every registered policy (one per ownership
kind: tool callbacks, cleanup holds, unread steers, unpresented answers, ...)
for its candidates, asks it to prove each candidate's earlier owner gone, and
then asks it to settle the candidate. A settled candidate is never listed
again; the policy's store guarantees that, not the reconciler's memory.

A policy is an object registered through ``paperclip_recovery_policies``. Its
methods are async (the host never awaits inside pluggy) and are called from
one event loop, one candidate at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, Protocol, runtime_checkable

from paperclip_hookspecs._markers import hookspec


@dataclass(frozen=True, slots=True)
class LostRun:
    """A run whose current turn was lost with its runner or provider process (hook API 1.3)."""

    run_id: str
    company_id: str
    issue_id: str | None
    turn: int
    """The lost turn's number (1 for the run's first)."""
    reason: str
    """``runner_restarted`` (its runner came back without it), ``runner_gone`` (no runner
    has reported for it within its lease), ``provider_exited``, ``provider_spawn_failed``."""
    owner: OwnerRef | None
    """The controller that last held the run."""


@dataclass(frozen=True, slots=True)
class ResumeOutcome:
    """What became of a lost run the reconciler asked the control plane to resume."""

    outcome: Literal["resuming", "held", "already_settled"]
    detail: str = ""
    """``resuming``: its next turn (a restart continuation, or a fresh retry) waits for a
    runner that offers its provider. ``held``: its retries are spent; the run failed and
    its task is held with the reason. ``already_settled``: another pass (or replica) did it."""


@dataclass(frozen=True, slots=True)
class PendingCallback:
    """A tool input without a saved result, of a run this replica controls now, that an
    earlier controller admitted (hook API 1.5)."""

    run_id: str
    company_id: str
    input_id: str
    tool_name: str
    admitted_by: str
    admitted_epoch: int
    epoch: int
    """The run's epoch now; greater than ``admitted_epoch``: the fence moved past the admission."""


@dataclass(frozen=True, slots=True)
class CallbacksRecovered:
    """What a recovery of a run's pending tool inputs did (hook API 1.5)."""

    settled: int
    """Inputs settled now (a receipt replayed, or interrupted), their results on the way."""
    pending: int
    """Inputs still pending (this process still runs them, or a rule kept them)."""


@dataclass(frozen=True, slots=True)
class CleanupHold:
    """A system no-replay hold left on the task of a run that failed with
    ``native_session_cleanup_quarantined`` after its turn completed (hook API 1.5)."""

    hold_id: str
    company_id: str
    issue_id: str
    run_id: str
    closing: OwnerRef | None
    """The controller that tried to close the session (its cleanup gate was in-process)."""
    protects_unsaved_files: bool
    """The hold keeps work tree files not verified as saved: workspace recovery decides it."""
    shape: str
    """``v2`` as this release saves it, ``v1`` as earlier releases did."""


class RecoveryPort(Protocol):
    """The control plane's operations a recovery policy may call (hook API 1.3).

    Each is one transaction, fenced by the run's epoch; a settlement names its
    candidate, and a candidate is settled at most once (a database constraint).
    """

    async def lost_runs(self, limit: int) -> Sequence[LostRun]:
        """Up to ``limit`` active runs whose current turn is lost, oldest first."""
        ...

    async def take_over_run(self, run_id: str) -> OwnerProof:
        """Become the run's controller if its lease expired: the epoch moves (the fence),
        which is the proof that the earlier owner can write nothing more."""
        ...

    async def resume_run(self, run_id: str, *, epoch: int, settlement: str) -> ResumeOutcome:
        """Queue the run's next turn (resuming its session), or hold its task when its
        retries are spent; ``settlement`` names the candidate, settled at most once."""
        ...

    async def pending_callbacks(self, limit: int) -> Sequence[PendingCallback]:
        """Up to ``limit`` tool inputs without a result that an earlier controller admitted,
        of runs this replica controls now, oldest first (hook API 1.5)."""
        ...

    async def recover_callbacks(self, run_id: str, *, epoch: int) -> CallbacksRecovered:
        """Ask the tool-recovery hook about each of the run's pending inputs again, with
        their admission, this process's memory of them and the tool's receipt lookup, and
        settle what it answers, under ``epoch`` (hook API 1.5)."""
        ...

    async def cleanup_holds(self, limit: int) -> Sequence[CleanupHold]:
        """Up to ``limit`` active system no-replay holds of runs that failed with
        ``native_session_cleanup_quarantined`` after a completed turn (hook API 1.5)."""
        ...

    async def prove_closing_controller_gone(self, hold_id: str) -> OwnerProof:
        """Whether the controller that stamped the cleanup hold is provably gone: its boot is
        retired (not seen for a lease, then retired by this proof); a hold saved in the
        earlier shape predates boots, so its controller is gone (hook API 1.5)."""
        ...

    async def settle_cleanup_hold(self, hold_id: str, *, settlement: str) -> bool:
        """Resolve the hold as ``restored``, lift its replay block and log
        ``issue.recovery_action_resolved``, once; False when it was settled or resolved
        before (hook API 1.5). Starts no run."""
        ...


@dataclass(frozen=True, slots=True)
class RecoveryContext:
    """What the reconciler tells a policy about this pass."""

    instance_id: str
    """This control-plane replica."""
    now: datetime
    """The pass's clock, timezone-aware; compare leases against it, not the wall clock."""
    port: RecoveryPort | None = None
    """The control plane's operations for policies (hook API 1.3); the reconciler always
    sets it."""


@dataclass(frozen=True, slots=True)
class OwnerRef:
    """The controller that owned a candidate: its instance and epoch."""

    instance_id: str
    epoch: int


@dataclass(frozen=True, slots=True)
class RecoveryCandidate:
    """One item a policy may have to settle."""

    kind: str
    """The policy's name (the ownership kind)."""
    key: str
    """The item's id, unique within its kind (a hold id, a semantic input id, ...)."""
    company_id: str
    issue_id: str | None = None
    run_id: str | None = None
    owner: OwnerRef | None = None
    facts: Mapping[str, Any] = field(default_factory=dict)
    """What the policy read when listing it, for its own later steps and for the report."""


@dataclass(frozen=True, slots=True)
class OwnerProof:
    """Whether the candidate's earlier owner is provably gone, and the evidence."""

    gone: bool
    reason: str
    """E.g. ``lease expired and epoch fence moved``, or why it is not proven."""
    epoch: int | None = None
    """The fence's new epoch, when the proof moved it (hook API 1.3): settle under it."""


class SettlementOutcome(StrEnum):
    SETTLED = "settled"
    """Done: the candidate is never listed again."""
    KEPT = "kept"
    """Left as it is for now (its owner is alive, or it needs something else first)."""
    QUARANTINED = "quarantined"
    """Set aside with a reason, for an operator."""


@dataclass(frozen=True, slots=True)
class Settlement:
    outcome: SettlementOutcome
    reason: str = ""


@runtime_checkable
class RecoveryPolicy(Protocol):
    """A recovery policy for one ownership kind.

    Any object with these members will do; a frozen dataclass with a ``name``
    field and the three async methods is the usual shape.
    """

    @property
    def name(self) -> str:
        """The ownership kind, e.g. ``native_completed_turn_cleanup_hold``; unique."""
        ...

    async def list_candidates(
        self, ctx: RecoveryContext, limit: int
    ) -> Sequence[RecoveryCandidate]:
        """Up to ``limit`` unsettled candidates, oldest first."""
        ...

    async def prove_owner_gone(
        self, ctx: RecoveryContext, candidate: RecoveryCandidate
    ) -> OwnerProof:
        """Prove the candidate's earlier owner gone (expired lease and moved fence), or say why not."""
        ...

    async def settle(
        self, ctx: RecoveryContext, candidate: RecoveryCandidate, proof: OwnerProof
    ) -> Settlement:
        """Settle the candidate exactly once; called only with ``proof.gone``."""
        ...


@hookspec
def paperclip_recovery_policies() -> list[RecoveryPolicy]:  # type: ignore[empty-body]
    """Register recovery policies.

    Returns a list of :class:`RecoveryPolicy` objects; the host flattens the
    lists of all plugins and refuses two policies with the same name, naming
    both plugins.
    """
