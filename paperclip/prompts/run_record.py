"""What Paperclip recorded of a run, told to the model when its turn was cut short.

A later turn of a session (a restart continuation, a report nudge) may follow
tool calls that never reached Paperclip: a gateway's agent calls the runner's
tool relay, which is down while its runner restarts, and the model is told
only that the call failed. The journal is the record: this block lists what
took effect and whether the run's report is recorded, so the model knows what
is done and what it must do again, without being asked to re-check.
"""

from __future__ import annotations

from collections import Counter

from paperclip_hookspecs.runs import RunView, ToolCallStatus

from paperclip.prompts.markdown import count, truncate

SHOWN_COMMENTS = 5
"""The newest comments of the run the block quotes (the count says how many in all)."""
COMMENT_CHARS = 300


def render_run_record(run: RunView, *, reported: bool) -> str:
    """The run's comments and effective tool calls, its last refusal, and its report's state."""
    lines = ["### What Paperclip recorded of this run"]
    posted = len(run.comments) + run.comments_omitted
    if not posted:
        lines.append("- Comments posted: none.")
    else:
        lines.append(f"- Comments posted: {count(posted, 'comment')} (the newest below).")
        for comment in run.comments[-SHOWN_COMMENTS:]:
            text, cut = truncate(" ".join(comment.body.split()), COMMENT_CHARS)
            lines.append(f"  - {text}{' [...]' if cut else ''}")
    settled = [c for c in run.tool_calls if c.status is ToolCallStatus.SETTLED]
    made = Counter(c.tool for c in settled if not c.is_error)
    listed = ", ".join(f"{tool} x{n}" for tool, n in sorted(made.items())) or "none"
    lines.append(f"- Tool calls that took effect: {listed}.")
    failed = [c for c in settled if c.is_error]
    if failed:
        last = failed[-1]
        lines.append(
            f"- Calls that failed or were refused: {count(len(failed), 'call')}; the last was "
            f"`{last.tool}` ({last.error_code or 'error'})."
        )
    pending = [c.tool for c in run.tool_calls if c.status is ToolCallStatus.PENDING]
    if pending:
        lines.append(f"- Calls whose outcome is not known yet: {', '.join(pending)}.")
    lines.append(
        "- A call you made that is not counted here did not reach Paperclip and had no effect."
    )
    lines.append(
        "- Completion report: recorded."
        if reported
        else "- Completion report: none recorded (neither `finish` nor `block` reached Paperclip)."
    )
    return "\n".join(lines)
