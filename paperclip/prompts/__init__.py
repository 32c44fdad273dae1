"""Prompt assembly: the task brief, the wake prompt and task-context ownership.

The default rendering is the built-in plugin :mod:`paperclip.plugin_host.builtin.prompts`;
the run engine calls :func:`assemble_execution_input` and reads persisted
inputs with :func:`read_execution_input`.
"""

from paperclip.prompts.assemble import (
    AgentBrief,
    AssembledInput,
    AssemblyRequest,
    OwnershipError,
    assemble_execution_input,
    validate_completion,
)
from paperclip.prompts.continuation import build_continuation
from paperclip.prompts.envelopes import (
    EXECUTION_INPUT_V4,
    EXECUTION_INPUT_V5,
    MODEL_ENVELOPE_V2,
    MODEL_ENVELOPE_V3,
    ExecutionInput,
    ModelEnvelope,
    UnknownSchemaError,
    read_execution_input,
    read_model_envelope,
    write_execution_input,
)
from paperclip.prompts.hooks import PromptHooks
from paperclip.prompts.task_markdown import build_task_markdown
from paperclip.prompts.wire import WireError
from paperclip.revisions import revision, sanitize, source_text

__all__ = [
    "EXECUTION_INPUT_V4",
    "EXECUTION_INPUT_V5",
    "MODEL_ENVELOPE_V2",
    "MODEL_ENVELOPE_V3",
    "AgentBrief",
    "AssembledInput",
    "AssemblyRequest",
    "ExecutionInput",
    "ModelEnvelope",
    "OwnershipError",
    "PromptHooks",
    "UnknownSchemaError",
    "WireError",
    "assemble_execution_input",
    "build_continuation",
    "build_task_markdown",
    "read_execution_input",
    "read_model_envelope",
    "revision",
    "sanitize",
    "source_text",
    "validate_completion",
    "write_execution_input",
]
