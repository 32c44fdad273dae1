"""Real runs for plugin authors' tests: a control plane and a runner as processes (the test kit's
``paperclip_provider_run`` fixture, see :mod:`paperclip.testing`).

A provider plugin installed in the test's environment is found by both
processes through its entry point, exactly as in production. A run goes the
whole way: the wake, the prompt, ``start_turn``, the driver's turn on the
runner, the run's tools over the runner's MCP endpoint (journaled by the
control plane), the status decision and the presentation of the answer.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

PAPERCLIP = [sys.executable, "-m", "paperclip"]
TERMINAL = ("succeeded", "failed", "cancelled")


@dataclass(frozen=True)
class RunOutcome:
    """A finished run, as the API shows it."""

    run: Mapping[str, Any]
    """The run as ``GET …/runs/{run_id}`` shows it (``status``, ``error_code``,
    ``error_message``, ``result``, ``answer``, ``presentation``, ``execution_input``, ...)."""
    events: list[Mapping[str, Any]]
    """The run's log, oldest first (at most 1,000), as ``GET …/runs/{run_id}/events`` shows it:
    ``seq``, ``type`` (the provider's event type, or one of Paperclip's), ``payload``,
    ``turn``, ``source_instance``, ``source_seq``, ``created_at``."""
    comments: list[Mapping[str, Any]]
    """The issue's comments, oldest first (the agent's have ``author_agent_id``)."""
    issue: Mapping[str, Any]
    tool_calls: list[Mapping[str, Any]] = field(default_factory=list)
    """The run's tool journal, in call order, as ``GET …/runs/{run_id}/tool-calls`` shows it:
    ``tool``, ``arguments``, ``status``, ``is_error``, ``result``, ..."""

    def calls_of(self, tool: str) -> list[Mapping[str, Any]]:
        """The journaled calls of one tool, in order."""
        return [call for call in self.tool_calls if call["tool"] == tool]

    @property
    def status(self) -> str:
        return str(self.run["status"])

    @property
    def error_code(self) -> str | None:
        return self.run.get("error_code")

    @property
    def answer(self) -> str | None:
        """The turn's final prose, as the presentation recorded it."""
        return self.run.get("answer")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(predicate: Callable[[], Any], limit: float, what: str) -> Any:
    deadline = time.monotonic() + limit
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.2)
    return value


@dataclass
class RunStack:
    """``paperclip serve --no-runner`` and ``paperclip runner`` on one database, started lazily."""

    database_url: str
    folder: Path
    launch: Mapping[str, Mapping[str, Sequence[str]]] | None = None
    runner_env: Mapping[str, str] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    """What its clients send: the operator token (``paperclip serve`` says where it is)."""
    _processes: list[subprocess.Popen[str]] = field(default_factory=list)
    _logs: list[Any] = field(default_factory=list)

    def _env(self) -> dict[str, str]:
        return {
            **os.environ,
            "PAPERCLIP_DATABASE_URL": self.database_url,
            "PAPERCLIP_DATA_DIR": str(self.folder / "data"),
            "PAPERCLIP_LOG_FORMAT": "json",
        }

    def start(self) -> None:
        if self.url:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        env = {**self._env(), "PAPERCLIP_PORT": str(_free_port())}
        self._logs.append((self.folder / "server.log").open("a"))
        server = subprocess.Popen(
            [*PAPERCLIP, "serve", "--json", "--no-runner"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=self._logs[-1],
            text=True,
        )
        self._processes.append(server)
        assert server.stdout is not None
        line = server.stdout.readline()
        if not line:
            raise RuntimeError(f"paperclip serve exited: {self.tail('server.log')}")
        said = json.loads(line)
        self.url = said["url"]
        # Without login the API acts for the operator only, who shows the token on file.
        if "token_file" in said:
            token = Path(said["token_file"]).read_text().strip()
            self.headers = {"Authorization": f"Bearer {token}"}
        _wait(self._healthy, 60, "paperclip serve to answer")
        made = subprocess.run(
            [*PAPERCLIP, "runners", "create", f"test-runner-{_free_port()}", "--json"],
            env=self._env(),
            capture_output=True,
            text=True,
            check=True,
        )
        runner_env = {
            **self._env(),
            **self.runner_env,
            "PAPERCLIP_RUNNER_CREDENTIAL": json.loads(made.stdout)["credential"],
            "PAPERCLIP_RUNNER_SERVER": self.url,
            "PAPERCLIP_RUNNER_WORK_DIR": str(self.folder / "runner"),
        }
        if self.launch is not None:
            runner_env["PAPERCLIP_RUNNER_LAUNCH"] = json.dumps(self.launch)
        log = (self.folder / "runner.log").open("a")
        self._logs.append(log)
        self._processes.append(
            subprocess.Popen(
                [*PAPERCLIP, "runner"], env=runner_env, stdout=log, stderr=log, text=True
            )
        )

    def _healthy(self) -> bool:
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(f"{self.url}/api/health", timeout=2).status_code == 200
        return False

    def tail(self, name: str, lines: int = 40) -> str:
        path = self.folder / name
        return "\n".join(path.read_text().splitlines()[-lines:]) if path.exists() else ""

    def stop(self) -> None:
        for process in reversed(self._processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(10)
            if process.stdout is not None:
                process.stdout.close()
        for log in self._logs:
            log.close()

    def run(
        self,
        provider: str,
        provider_config: Mapping[str, Any] | None = None,
        *,
        title: str = "Say hello",
        description: str = "",
        timeout: float = 120,
    ) -> RunOutcome:
        """Create a company, an agent on ``provider`` and an issue; assign it; wait for the run."""
        self.start()
        with httpx.Client(base_url=f"{self.url}/api", headers=self.headers, timeout=30) as api:
            company = _ok(api.post("/companies", json={"name": "Test", "issue_prefix": "TST"}))
            base = f"/companies/{company['id']}"
            agent = _ok(
                api.post(
                    f"{base}/agents",
                    json={
                        "name": f"agent-{_free_port()}",
                        "provider": provider,
                        "provider_config": dict(provider_config or {}),
                    },
                )
            )
            issue = _ok(
                api.post(f"{base}/issues", json={"title": title, "description": description})
            )
            _ok(api.patch(f"{base}/issues/{issue['id']}", json={"assignee_agent_id": agent["id"]}))

            def finished() -> Mapping[str, Any] | None:
                runs = _ok(api.get(f"{base}/runs", params={"issue_id": issue["id"]}))["items"]
                done = [r for r in runs if r["status"] in TERMINAL]
                return done[0] if done else None

            try:
                run = _wait(finished, timeout, f"the run of {provider!r} to end")
            except TimeoutError:
                raise TimeoutError(
                    f"no run ended; runner log:\n{self.tail('runner.log')}"
                ) from None
            if run["status"] == "succeeded":  # the answer is presented right after the end
                run = _wait(
                    lambda: _presented(api, base, run["id"]), 30, "the answer's presentation"
                )
            events = _ok(api.get(f"{base}/runs/{run['id']}/events", params={"limit": 1000}))[
                "items"
            ]
            comments = _ok(api.get(f"{base}/issues/{issue['id']}/comments"))["items"]
            issue = _ok(api.get(f"{base}/issues/{issue['id']}"))
            calls = _pages(api, f"{base}/runs/{run['id']}/tool-calls")
        return RunOutcome(run=run, events=events, comments=comments, issue=issue, tool_calls=calls)


def _pages(api: httpx.Client, url: str) -> list[Mapping[str, Any]]:
    """Every item of a cursor-paged list."""
    items: list[Mapping[str, Any]] = []
    params: dict[str, Any] = {"limit": 200}
    while True:
        page = _ok(api.get(url, params=params))
        items += page["items"]
        if page["next_cursor"] is None:
            return items
        params["cursor"] = page["next_cursor"]


def _presented(api: httpx.Client, base: str, run_id: str) -> Mapping[str, Any] | None:
    run = _ok(api.get(f"{base}/runs/{run_id}"))
    return run if run.get("presentation") or not run.get("answer") else None


def _ok(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise AssertionError(
            f"{response.request.method} {response.request.url}: {response.status_code} {response.text}"
        )
    return response.json()
