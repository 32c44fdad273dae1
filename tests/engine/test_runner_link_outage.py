"""The control plane closes a runner's link while PostgreSQL is away: the route ends quietly.

The runner dials through a link proxy of ours that holds what the control
plane sends (its bytes still arrive), so the runner's close reply does not
come back at once. With the database stopped, the provider emits; the runner's
message cannot be stored, and the control plane closes the link. Cleaning the
link up then must wait for the database instead of raising out of the
WebSocket route: an exception there reached the framework's error handler,
which sent a second ``websocket.close`` on the socket it had closed (the
server logged ``Unexpected ASGI message 'websocket.close'``), and the gone
runner's runs were not let go.
"""

from __future__ import annotations

import json

import pytest

from paperclip.chaos.cluster import free_port
from paperclip.chaos.proxy import LinkProxy
from tests.engine.conftest import fake_launch
from tests.engine.test_database_outage import (  # noqa: F401 (fixtures)
    connected_runners,
    outage_stack,
    own_postgres,
)
from tests.support.processes import RunnerProcess, lines_with, wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def emits_on_a_signal(stack) -> tuple[dict, object, object]:
    held, go = stack.tmp / "held", stack.tmp / "go"
    finish = {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}}
    script = {
        "turns": [
            [
                {"touch_file": str(held)},
                {"wait_for_file": str(go), "timeout": 300},
                {"message": "Said while the database was away."},
                {"sleep": 2},
                {"message": "Done after the outage."},
                finish,
            ],
            [{"message": "Went on after the outage."}, finish],
        ]
    }
    return script, held, go


def test_a_link_closed_by_the_control_plane_during_an_outage_is_closed_once(
    outage_stack,  # noqa: F811 (the fixture)
):
    stack, postgres = outage_stack
    stack.start_server()
    proxy = LinkProxy(stack.ports[0], free_port()).start()
    stack.script_dir.mkdir(parents=True, exist_ok=True)
    stack.runner = RunnerProcess(
        [proxy.url],
        stack.runner_credential(),
        stack.tmp / "runner",
        stack.tmp / "runner.log",
        env={"PAPERCLIP_RUNNER_LAUNCH": json.dumps(fake_launch(stack.script_dir, stack.fake_log))},
    ).start()
    api = stack.api()
    cp_log = stack.tmp / "cp0.log"
    try:
        wait_until(lambda: connected_runners(api) == 1, 30, message="the runner connected")
        script, held, go = emits_on_a_signal(stack)
        ctx = stack.setup_issue(script)
        stack.assign(ctx)
        wait_until(held.exists, 90, message="the turn is running")

        postgres.stop()
        wait_until(lambda: api.get("/health").status_code == 503, 30, message="health 503")
        unavailable = lines_with(cp_log, "listing the runs of a gone runner")
        proxy.stall(8, down_only=True)  # the control plane's close waits for its reply
        go.write_text("now")  # the provider emits: the runner's message cannot be stored
        wait_until(
            lambda: "the connection of runner" in cp_log.read_text(),
            30,
            message="the control plane gave the link up",
        )
        # Once the stalled close returns, the link's cleanup meets the outage and waits.
        wait_until(
            lambda: lines_with(cp_log, "listing the runs of a gone runner") > unavailable,
            60,
            message="the link's cleanup waiting for the database",
        )

        postgres.start()
        wait_until(lambda: api.get("/companies").status_code == 200, 60, message="API back")
        wait_until(lambda: connected_runners(api) == 1, 60, message="the runner is back")
        run = stack.wait_for_terminal_run(ctx, timeout=120)
        assert run["status"] == "succeeded", (run, stack.runner.tail())
    finally:
        api.close()
        stack.stop()
        proxy.close()
    text = cp_log.read_text()
    assert "Unexpected ASGI message" not in text, text[-4000:]
    assert "Traceback" not in text, text[-4000:]
