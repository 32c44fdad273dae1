"""A chat message sent while the turn runs reaches the model in that turn, once, over HTTP.

Real processes (a control plane, a runner, the fake Codex app-server): the
person's second message is steered into the running turn (``delivery: steer``),
the provider acknowledges it, the model reads it at its next step, and the
turn's answer is the one reply of the conversation.
"""

from __future__ import annotations

import pytest

from tests.engine.chat_stack import messages, open_chat, replies, say
from tests.engine.test_steer_restarts import running_turn, user_messages
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

STEER = "Also update the changelog."
ANSWER = "The build is green, and the changelog says why."


def test_a_message_sent_while_the_turn_runs_reaches_the_model_once(stack):
    stack.start_server()
    stack.start_runner()
    held, steered = stack.tmp / "held", stack.tmp / "steered"
    script = {
        "consume_steer": True,  # the fake reads pending steers before each step
        "turns": [
            [
                {"touch_file": str(held)},
                {"wait_for_file": str(steered), "timeout": 120},
                {"message": ANSWER},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "yielded", "summary": "ok"},
                    }
                },
            ]
        ],
    }
    ctx = stack.setup_issue(script)
    open_chat(stack, ctx)
    assert say(stack, ctx, "Can you fix the build?")["delivery"] == "turn"
    wait_until(held.exists, 60, message="the turn held")
    run_id = stack.runs(ctx)[0]["id"]
    running_turn(stack, ctx, run_id)

    sent = say(stack, ctx, STEER)

    assert sent["delivery"] == "steer"
    wait_until(
        lambda: any(e["type"] == "steering_acknowledgement" for e in stack.events(ctx, run_id)),
        30,
        message="the provider's acknowledgement in the run log",
    )
    steered.touch()
    # This run's own presentation: the steered message's comment wakes the agent again
    # after it, and that next run (an ordinary one) is presented too.
    wait_until(
        lambda: any(r["id"] == run_id and r["presentation"] for r in stack.runs(ctx)),
        90,
        message="the turn's answer presented",
    )
    assert replies(stack, ctx) == [ANSWER]
    said = [(m["role"], m["delivery"], m["body"]) for m in messages(stack, ctx)]
    assert said[:2] == [("user", "turn", "Can you fix the build?"), ("user", "steer", STEER)]
    assert [text for _, text in user_messages(stack, ctx, run_id)].count(STEER) == 1
