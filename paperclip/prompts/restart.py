"""The restart continuation: what a resumed session is told after its turn was lost.

A turn lost with its runner or provider process is resumed in the same
provider session, which already holds the brief and everything said so far.
The next turn's input is assembled through the resumed lane of the prompt
hooks: the compact brief, the continuation over the steered messages the
model has not read yet (oldest first) with its objective, and the wake delta;
then one instruction to continue the current request and check the state
before repeating an action. Persisted on the turn under
``paperclip.native-continuation.v1``, with the resumed-lane execution input
(v5, or v4 for a run that started on v4) under ``executionInput``."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from paperclip_hookspecs.prompts import (
    CommentSource,
    ContinuationMessage,
    ContinuationOptions,
    Placement,
    ProviderCarriers,
    SessionAttempt,
)

from paperclip.prompts.assemble import (
    AgentBrief,
    AssembledInput,
    AssemblyRequest,
    assemble_execution_input,
)
from paperclip.prompts.continuation import build_continuation
from paperclip.prompts.envelopes import EXECUTION_INPUT_V5, ExecutionInput, write_execution_input
from paperclip.prompts.hooks import PromptHooks
from paperclip.prompts.markdown import join_blocks
from paperclip.prompts.sources import normalize_task

NATIVE_CONTINUATION_V1 = "paperclip.native-continuation.v1"

RESTART_INSTRUCTION = (
    "Your previous turn was interrupted by a restart of the system that runs you; your "
    "session was kept. Continue the current request where you left off. Before you repeat "
    "an action that may already have happened (a comment, a change to a file), check the "
    "current state first: use get_task_context for the task and its comments."
)
STEERED_INSTRUCTION = (
    "Messages were sent to you during the interrupted turn that you have not read yet. "
    "Handle each of them once, oldest first, as part of the current request."
)
FRESH_STEERED_INSTRUCTION = (
    "Messages were sent to you during an earlier attempt at this task that ended before "
    "you read them. Handle each of them once, oldest first, as part of the task."
)


@dataclass(frozen=True, slots=True)
class RestartContinuation:
    prompt: str
    envelope: dict[str, Any]


def restart_continuation(
    previous: ExecutionInput,
    hooks: PromptHooks,
    *,
    turn: int,
    steered: tuple[ContinuationMessage, ...] = (),
    steered_comments: tuple[CommentSource, ...] = (),
    record: str = "",
) -> RestartContinuation:
    """The input of turn ``turn`` of the run whose persisted input is ``previous``.

    Assembled through the resumed lane: the run's persisted input is ``previous``
    (it pins the envelope version and names the brief the session holds), the
    steers the model has not read are the resume delta, oldest first. On a v5
    run, the ones that are comments of the issue (``steered_comments``) are
    current comments of this turn too, after the wake's own: the continuation
    shows them, so the wake delta keeps their author, trust and attachments and
    points there instead of repeating the text, and the latest trusted one is
    the objective (``objectiveSource``), named rather than repeated. The compact
    brief and the provider's carriers apply; the restart instruction follows.
    The resumed-lane input is persisted with the turn (``executionInput``).
    ``record`` (``run_record``) says what Paperclip recorded of the run before the
    instruction: a call the model made while its runner was away is not in it.
    """
    wake = previous.wake
    if previous.schema == EXECUTION_INPUT_V5:
        # Owned events only: a v4 run keeps the legacy wake, whose brief would repeat the
        # latest comment; there the steers stay in the continuation alone.
        known = {c.id for c in wake.comments}
        new = tuple(c for c in steered_comments if c.id not in known)
        wake = replace(wake, comments=(*wake.comments, *new))
    request = AssemblyRequest(
        task=previous.task,
        wake=wake,
        lane=previous.lane,
        attempt=SessionAttempt.RESUMED,
        run_id=previous.run_id,
        provider=previous.provider,
        carriers=carriers_of(previous),
        resume_delta=steered,
        previous=previous,
    )
    assembled = assemble_execution_input(request, hooks)
    value = assembled.execution_input
    blocks = [value.model.prompt]
    shown = {c.id for c in wake.comments}
    unshown = tuple(m for m in steered if m.id not in shown)
    if unshown and value.continuation is None:
        # No continuation was selected: the steers the wake delta does not show still
        # reach the model, once.
        blocks.append(_steered_section(previous, hooks, unshown))
    blocks.append(record)
    blocks.append(RESTART_INSTRUCTION)
    if steered:
        blocks.append(STEERED_INSTRUCTION)
    prompt = join_blocks(blocks)
    value = replace(value, model=replace(value.model, prompt=prompt))
    task = value.task
    envelope = {
        "schema": NATIVE_CONTINUATION_V1,
        "reason": "restart",
        "runId": previous.run_id,
        "turn": turn,
        "issue": {"id": task.id, "identifier": task.identifier, "title": task.title},
        "steeredMessages": [{"id": m.id, "issueId": m.issue_id, "body": m.body} for m in steered],
        "prompt": prompt,
        "system": value.model.system,
        "executionInput": write_execution_input(value),
    }
    return RestartContinuation(prompt, envelope)


def _steered_section(
    previous: ExecutionInput, hooks: PromptHooks, steered: tuple[ContinuationMessage, ...]
) -> str:
    task = normalize_task(previous.task)
    rendered = hooks.render_continuation(
        build_continuation(task, steered), task, (), ContinuationOptions()
    )
    return rendered.section.text


def fresh_retry(
    previous: ExecutionInput,
    hooks: PromptHooks,
    agent: AgentBrief,
    *,
    history: tuple[CommentSource, ...] = (),
    steered: tuple[ContinuationMessage, ...] = (),
) -> AssembledInput:
    """The full brief again, for a new session: the provider could not resume the old one.

    Assembled from the sources the run was woken with (its persisted input), under
    the prompt rules of a ``fresh_retry`` attempt, as the run's first turn was: the
    same envelope version (a v4 run stays v4), the same carriers (the rules stay in
    the provider's system carrier), and the earlier thread (``history``: the
    issue's comments before the wake, and what the lost attempt itself posted, so
    the new session sees it). The steers the lost session acknowledged but never
    read follow the brief, as a restart continuation carries them: the new session
    is the only way they still reach the model.
    """
    request = AssemblyRequest(
        task=previous.task,
        wake=previous.wake,
        lane=previous.lane,
        attempt=SessionAttempt.FRESH_RETRY,
        run_id=previous.run_id,
        provider=previous.provider,
        agent=agent,
        carriers=carriers_of(previous),
        history=history,
        previous=previous,
    )
    assembled = assemble_execution_input(request, hooks)
    if not steered:
        return assembled
    value = assembled.execution_input
    steers = _steered_section(previous, hooks, steered)
    prompt = join_blocks([value.model.prompt, steers, FRESH_STEERED_INSTRUCTION])
    value = replace(value, model=replace(value.model, prompt=prompt))
    return AssembledInput(value, write_execution_input(value))


def carriers_of(previous: ExecutionInput) -> ProviderCarriers:
    """The carriers the run's input was assembled for, read back from its section selection."""
    selection = previous.selection
    return ProviderCarriers(
        default_rules=selection.default_rules is Placement.SYSTEM_CARRIER,
        execution_contract=selection.wake_rules is Placement.SYSTEM_CARRIER,
    )
