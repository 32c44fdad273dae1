"""Versioned envelopes: the execution input persisted on a run and the model envelope.

Writers produce ``paperclip.native-execution-input.v5`` with
``paperclip.native-model-envelope.v3`` (ownership metadata on), or v4 with v2
(ownership production off, or a session pinned to them). Readers for all four
stay, so a run or session persisted under any of them resumes. The schema ids
are public redaction discriminators: keep them verbatim.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from paperclip_hookspecs.prompts import (
    Continuation,
    Lane,
    SectionSelection,
    SessionAttempt,
    SourceBlock,
    SourceKind,
    TaskSource,
    TurnContext,
    WakeSource,
)

from paperclip.prompts.wire import (
    Wire,
    WireError,
    continuation_from_wire,
    continuation_to_wire,
    selection_from_wire,
    selection_to_wire,
    source_block_from_wire,
    source_block_to_wire,
    task_from_wire,
    task_to_wire,
    turn_context_from_wire,
    turn_context_to_wire,
    wake_from_wire,
    wake_to_wire,
)

EXECUTION_INPUT_V5 = "paperclip.native-execution-input.v5"
EXECUTION_INPUT_V4 = "paperclip.native-execution-input.v4"
MODEL_ENVELOPE_V3 = "paperclip.native-model-envelope.v3"
MODEL_ENVELOPE_V2 = "paperclip.native-model-envelope.v2"

MODEL_ENVELOPE_FOR = {EXECUTION_INPUT_V5: MODEL_ENVELOPE_V3, EXECUTION_INPUT_V4: MODEL_ENVELOPE_V2}
COMPLETION_ONLY = "completion_only"


class UnknownSchemaError(WireError):
    """An envelope names a schema this version cannot read."""


@dataclass(frozen=True, slots=True)
class ModelEnvelope:
    """What the model is sent: the user prompt, the carrier text, and (v3) the rendered sources."""

    schema: str
    prompt: str
    system: str | None = None
    rendered_sources: tuple[SourceBlock, ...] = ()
    """The source blocks rendered into ``prompt``; always empty under v2."""


@dataclass(frozen=True, slots=True)
class ExecutionInput:
    """A run's persisted execution input, whichever schema it was written under."""

    schema: str
    run_id: str
    lane: Lane
    attempt: SessionAttempt
    provider: str
    task: TaskSource
    wake: WakeSource
    task_markdown: str
    wake_prompt: str
    selection: SectionSelection
    model: ModelEnvelope
    turn_context: TurnContext | None = None
    continuation: Continuation | None = None
    recovery: str | None = None

    @property
    def owned(self) -> bool:
        """Ownership metadata is present: the wake prompt owns the current comments."""
        return self.turn_context is not None

    @property
    def completion_sources(self) -> tuple[SourceBlock, ...]:
        """The sources a completion report may cite.

        Under v2 no source was recorded as rendered, and ownership is never
        inferred from prompt text: only the task itself can be cited.
        """
        if self.model.schema == MODEL_ENVELOPE_V3:
            return self.model.rendered_sources
        return (SourceBlock(SourceKind.TASK, self.task.id, None, "task_markdown"),)


# -- writers ---------------------------------------------------------------------------------


def write_model_envelope(envelope: ModelEnvelope) -> Wire:
    data: Wire = {"schema": envelope.schema, "prompt": envelope.prompt, "system": envelope.system}
    if envelope.schema == MODEL_ENVELOPE_V3:
        data["renderedSources"] = [source_block_to_wire(b) for b in envelope.rendered_sources]
    elif envelope.schema != MODEL_ENVELOPE_V2:
        raise UnknownSchemaError(f"cannot write model envelope {envelope.schema!r}")
    return data


def write_execution_input(value: ExecutionInput) -> Wire:
    """The JSON object persisted on the run (``runs.execution_input``)."""
    v5 = value.schema == EXECUTION_INPUT_V5
    if not v5 and value.schema != EXECUTION_INPUT_V4:
        raise UnknownSchemaError(f"cannot write execution input {value.schema!r}")
    data: Wire = {
        "schema": value.schema,
        "runId": value.run_id,
        "lane": value.lane.value,
        "attempt": value.attempt.value,
        "provider": value.provider,
        "issue": task_to_wire(value.task),
        "paperclipWake": wake_to_wire(value.wake, value.task),
        "paperclipTaskMarkdown": value.task_markdown,
        "paperclipWakePrompt": value.wake_prompt,
        "executionContinuation": None
        if value.continuation is None
        else continuation_to_wire(value.continuation, objective_source=v5),
        "sections": selection_to_wire(value.selection),
        "recovery": value.recovery,
        "modelEnvelope": write_model_envelope(value.model),
    }
    if v5 and value.turn_context is not None:
        data["paperclipTurnContext"] = turn_context_to_wire(value.turn_context)
    return data


# -- readers ---------------------------------------------------------------------------------


def read_model_envelope(data: Mapping[str, Any]) -> ModelEnvelope:
    """Read a v3 or v2 model envelope."""
    schema = data.get("schema")
    if schema not in (MODEL_ENVELOPE_V3, MODEL_ENVELOPE_V2):
        raise UnknownSchemaError(f"unknown model envelope schema {schema!r}")
    prompt = data.get("prompt")
    if not isinstance(prompt, str):
        raise WireError("modelEnvelope.prompt: expected str")
    system = data.get("system")
    sources: tuple[SourceBlock, ...] = ()
    if schema == MODEL_ENVELOPE_V3:
        sources = tuple(
            source_block_from_wire(b)
            for b in data.get("renderedSources") or ()
            if isinstance(b, Mapping)
        )
    return ModelEnvelope(schema, prompt, system if isinstance(system, str) else None, sources)


def read_execution_input(data: Mapping[str, Any]) -> ExecutionInput:
    """Read a persisted v5 or v4 execution input into the same typed value.

    A v4 input (or a v5 one whose turn context is missing or unknown) has no
    ownership metadata; rendering from it uses the legacy wake behaviour.
    """
    schema = data.get("schema")
    if schema not in (EXECUTION_INPUT_V5, EXECUTION_INPUT_V4):
        raise UnknownSchemaError(f"unknown execution input schema {schema!r}")
    v5 = schema == EXECUTION_INPUT_V5
    issue, wake, sections, model = (
        data.get("issue"),
        data.get("paperclipWake"),
        data.get("sections"),
        data.get("modelEnvelope"),
    )
    for key, part in (
        ("issue", issue),
        ("paperclipWake", wake),
        ("sections", sections),
        ("modelEnvelope", model),
    ):
        if not isinstance(part, Mapping):
            raise WireError(f"{schema}: {key} is missing")
    assert isinstance(issue, Mapping) and isinstance(wake, Mapping)  # narrowed above
    assert isinstance(sections, Mapping) and isinstance(model, Mapping)
    recovery = data.get("recovery")
    return ExecutionInput(
        schema=schema,
        run_id=str(data.get("runId") or ""),
        lane=Lane(str(data.get("lane"))),
        attempt=SessionAttempt(str(data.get("attempt"))),
        provider=str(data.get("provider") or ""),
        task=task_from_wire(issue),
        wake=wake_from_wire(wake),
        task_markdown=str(data.get("paperclipTaskMarkdown") or ""),
        wake_prompt=str(data.get("paperclipWakePrompt") or ""),
        selection=selection_from_wire(sections),
        model=read_model_envelope(model),
        turn_context=turn_context_from_wire(data.get("paperclipTurnContext")) if v5 else None,
        continuation=continuation_from_wire(data.get("executionContinuation"), objective_source=v5),
        recovery=recovery if isinstance(recovery, str) else None,
    )
