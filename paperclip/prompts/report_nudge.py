"""The report nudge: a completion-only recovery turn in the same provider session.

When a run's turn ends without an accepted ``finish`` or ``block`` report (real
models often end a turn with prose), the session gets one short follow-up turn
instead of the run failing at once (seed 001's completion-only recovery). Its
prompt, rendered by ``paperclip_render_completion_recovery``, says that no
report was recorded and what the run has done (the comments it posted, the
tool calls the journal holds), restores the task's complete current criteria
and asks for the report.

The prompt replaces the task prompt for that turn, so the turn's execution
input cites the task alone (``recovery: completion_only``): the description
and comments are not sources of it. Completion references are still checked
against the run's own input, whose sources the session holds.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from paperclip_hookspecs.prompts import RenderedSection, SourceBlock, SourceKind, TaskSource
from paperclip_hookspecs.runs import RunView

from paperclip.prompts.envelopes import (
    COMPLETION_ONLY,
    EXECUTION_INPUT_V5,
    MODEL_ENVELOPE_FOR,
    ExecutionInput,
    ModelEnvelope,
    write_execution_input,
)
from paperclip.prompts.hooks import PromptHooks
from paperclip.prompts.markdown import fence, join_blocks, truncate
from paperclip.prompts.run_record import render_run_record
from paperclip.prompts.sources import normalize_task
from paperclip.prompts.task_markdown import DATA_NOTICE, task_header

SECTION = "completion_recovery"
NATIVE_CONTINUATION_V1 = "paperclip.native-continuation.v1"
REASON = "completion_recovery"
"""The ``reason`` of a nudge turn's input (a restart continuation's is ``restart``)."""

DESCRIPTION_CHARS = 4000

ASK = (
    "Report now. If the task is done, call the Paperclip `finish` tool with your outcome and "
    "a short summary; do not do again what is already done (it is listed above). If you "
    "cannot complete it, call `block` with the reason. If work remains, do it first, then "
    "report. Your turn ending without one of these calls leaves the task unreported."
)


def render_completion_recovery(task: TaskSource, run: RunView) -> RenderedSection:
    """The built-in prompt of a report nudge: no report recorded, what the run did, the ask."""
    task = normalize_task(task)
    blocks = [
        "## Paperclip: your report is missing",
        f"Your last turn on {task.identifier or task.id} ended, but no completion report was "
        "recorded for this run: neither `finish` nor `block` reached Paperclip.",
        render_run_record(run, reported=False),
        DATA_NOTICE,
        task_header(task),
        _criteria(task),
        ASK,
    ]
    return RenderedSection(
        SECTION, join_blocks(blocks), (SourceBlock(SourceKind.TASK, task.id, None, SECTION),)
    )


def _criteria(task: TaskSource) -> str:
    if task.acceptance_criteria:
        items = "\n".join(f"{n}. {c}" for n, c in enumerate(task.acceptance_criteria, 1))
        criteria = f"### Acceptance criteria (current)\n{items}"
    else:
        criteria = ""
    if not task.description:
        return criteria
    text, cut = truncate(task.description, DESCRIPTION_CHARS)
    note = "\n[Cut here; read it in full with get_task_context.]" if cut else ""
    return join_blocks([f"### The task as it is now\n{fence(text)}{note}", criteria])


def nudge_input(
    previous: ExecutionInput,
    task: TaskSource,
    run: RunView,
    hooks: PromptHooks,
    *,
    turn: int,
    nudge: int,
) -> dict[str, Any]:
    """The input of nudge turn ``turn`` (the run's ``nudge``-th), persisted on the turn.

    The recovery section replaces the task prompt: the turn's execution input
    cites the task alone (seed 001), keeps the run's system carrier, and is
    marked ``completion_only``."""
    current = normalize_task(task)
    section = hooks.render_completion_recovery(current, run)
    v5 = previous.schema == EXECUTION_INPUT_V5
    model = ModelEnvelope(
        MODEL_ENVELOPE_FOR[previous.schema],
        section.text,
        previous.model.system,
        tuple(b for b in section.sources if b.kind is SourceKind.TASK) if v5 else (),
    )
    value = replace(
        previous,
        task=current,
        task_markdown=section.text,
        wake_prompt="",
        model=model,
        recovery=COMPLETION_ONLY,
    )
    return {
        "schema": NATIVE_CONTINUATION_V1,
        "reason": REASON,
        "runId": previous.run_id,
        "turn": turn,
        "nudge": nudge,
        "issue": {"id": current.id, "identifier": current.identifier, "title": current.title},
        "prompt": section.text,
        "system": previous.model.system,
        "executionInput": write_execution_input(value),
    }
