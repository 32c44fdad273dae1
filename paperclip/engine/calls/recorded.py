"""Self-contained calls: admitted, applied and settled by one statement, on the receive side.

A tool whose outcome follows from its arguments alone (``tools.SELF_CONTAINED``,
``report_progress``) reads no state and needs no session, so nothing can
happen between its admission and its effect: the journal writes both, with
its result, its receipt and its reply, in one statement that commits on its
own (``journal.record_many``). Its row is never pending, so a restart finds
nothing of it to recover; a replay finds it settled and gets its saved result.
A call this path cannot take (a command id the model named, arguments that
are not valid, a run over its budget, a replay) takes the two-step path.
"""

from __future__ import annotations

from functools import cache

import jsonschema_rs

from paperclip.engine.calls.executor import state_revision
from paperclip.engine.logs import journal
from paperclip.engine.tools import SELF_CONTAINED
from paperclip.wire.tools import BY_NAME


def recording(request: journal.Request) -> journal.Recording | None:
    """The call's whole outcome, or None when it must take the two-step path."""
    outcome_of = SELF_CONTAINED.get(request.tool)
    if outcome_of is None or request.arguments.get("command_id"):
        return None  # a named command may repeat another call's: its receipt is looked up
    if not checker(request.tool).is_valid(request.arguments):
        return None  # the two-step path says what is wrong (jsonschema's messages)
    outcome = outcome_of(request.arguments)
    if outcome.is_error or len(outcome.events) > 1:
        return None  # one log entry at most: the call's journal id is its replay key
    revision = state_revision(outcome.result)
    command_id = f"{request.run_id}:{request.call_id}"
    receipt = {"command_id": command_id, "outcome": "applied", "state_revision": revision}
    events = outcome.events
    return journal.Recording(
        request,
        {**outcome.result, "receipt": receipt},
        revision,
        (events[0].type, events[0].payload) if events else None,
    )


@cache
def checker(tool: str) -> jsonschema_rs.Draft202012Validator:
    """The tool's argument schema, compiled once: a check here costs a fortieth of jsonschema's
    (which the two-step path keeps, for its messages)."""
    return jsonschema_rs.Draft202012Validator(BY_NAME[tool].input_schema)
