"""The completion guards' question, asked the same way at ``finish`` and after the turn.

At the feedback stage (inside the finish tool) a refusal becomes a correction
the model can act on in the same turn; at the terminal stage (after the
provider ended its turn) it fails the run with its code. Both build the check
here, so the two callers can never ask different questions.
"""

from __future__ import annotations

from typing import Any

from paperclip_hookspecs.completion import (
    CompletionCheck,
    CompletionRefusal,
    CompletionReport,
    CompletionStage,
    RunBinding,
)

from paperclip.models import Run


def binding_of(run: Run) -> RunBinding:
    return RunBinding(
        run_id=str(run.id),
        company_id=str(run.company_id),
        issue_id=str(run.issue_id or ""),
        agent_id=str(run.agent_id),
    )


def completion_check(run: Run, stage: CompletionStage, report: CompletionReport) -> CompletionCheck:
    """What the guards are shown for ``run``'s report.

    The wake snapshot and the run's read receipt are not recorded yet: every
    run is checked without them (the built-in guard then has nothing to refuse).
    """
    return CompletionCheck(stage=stage, binding=binding_of(run), report=report)


def report_of(result: dict[str, Any]) -> CompletionReport:
    """The completion report a run's saved result holds."""
    return CompletionReport(
        status=str(result.get("outcome", "")), summary=str(result.get("summary", ""))
    )


def refusal_body(refusal: CompletionRefusal) -> dict[str, Any]:
    """A refusal as the finish tool returns it: the code, and what to do about it now."""
    body: dict[str, Any] = {
        "code": refusal.code,
        "message": refusal.message,
        "reason": refusal.reason,
    }
    if refusal.correction is not None:
        body["correction"] = {
            "instruction": refusal.correction.instruction,
            "message": refusal.correction.message,
            "cursor": refusal.correction.cursor,
            "restart": refusal.correction.restart,
        }
    return body
