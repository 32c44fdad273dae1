"""A runner's connection ends while PostgreSQL is away: the route ends quietly, the run goes on.

The runner is stopped (SIGTERM: it closes its WebSocket, and the server
answers the close) while the database is stopped, so the control plane cleans
the link up during the outage. That cleanup must wait for the database
instead of raising out of the WebSocket route: an exception there reached the
framework's error handler, which closed the already closed socket again
(``Unexpected ASGI message 'websocket.close'`` in the log) and skipped letting
the runner's runs go.
"""

from __future__ import annotations

import time

import httpx
import pytest

from tests.engine.test_database_outage import (  # noqa: F401 (fixtures)
    connected_runners,
    outage_stack,
    own_postgres,
)
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def held_then_finish(stack) -> tuple[dict, object]:
    held = stack.tmp / "held"
    script = {
        "turns": [
            [
                {"touch_file": str(held)},
                {"wait_for_file": str(stack.tmp / "never"), "timeout": 300},
            ],
            [
                {"message": "Went on after the outage."},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "done", "summary": "ok"},
                    }
                },
            ],
        ]
    }
    return script, held


def test_a_runner_link_failing_during_an_outage_closes_once_and_its_run_goes_on(outage_stack):
    stack, postgres = outage_stack
    stack.start_server()
    stack.start_runner()
    api = httpx.Client(base_url=f"{stack.url()}/api", timeout=10)
    wait_until(lambda: connected_runners(api) == 1, 30, message="the runner connected")
    script, held = held_then_finish(stack)
    ctx = stack.setup_issue(script)
    stack.assign(ctx)
    wait_until(held.exists, 90, message="the turn is running")

    postgres.stop()
    wait_until(lambda: api.get("/health").status_code == 503, 30, message="health 503")
    stack.runner.stop()  # an orderly stop: its socket closes during the outage
    time.sleep(4)  # the link's cleanup meets the outage

    postgres.start()
    wait_until(lambda: api.get("/companies").status_code == 200, 60, message="the API is back")
    stack.start_runner()
    wait_until(lambda: connected_runners(api) == 1, 60, message="the runner is connected again")
    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    api.close()

    stack.stop()
    text = (stack.tmp / "cp0.log").read_text()
    assert "Unexpected ASGI message" not in text, text[-4000:]
    assert "Traceback" not in text, text[-4000:]
