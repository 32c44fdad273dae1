"""Separate OS processes for the run engine: control plane(s), a runner, the fake Codex app-server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.support.processes import RunnerProcess, ServerProcess, free_port, wait_until

FAKE_CODEX = [sys.executable, "-m", "paperclip_codex_testing.fake_app_server"]
FAKE_PROFILE = "fake"
"""The runner's launch profile for the fake app-server; agents select it by name."""


def fake_launch(script_dir: Path, log_path: Path) -> dict[str, dict[str, list[str]]]:
    """``PAPERCLIP_RUNNER_LAUNCH`` offering the fake: each agent's ``model`` picks its script
    in ``script_dir``, the way a model endpoint answers by model name."""
    argv = [*FAKE_CODEX, "--script-dir", str(script_dir), "--log", str(log_path)]
    return {"codex": {FAKE_PROFILE: argv}}


@dataclass
class Stack:
    """A control plane (one or more replicas), a runner, and helpers to drive a run over HTTP."""

    database_url: str
    tmp: Path
    lease_seconds: float = 2.0
    servers: list[ServerProcess] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    runner: RunnerProcess | None = None
    credential: str | None = None
    runner_folder: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    """More environment for the control-plane processes (e.g. PYTHONPATH to installed plugins)."""

    def server_env(self, index: int) -> dict[str, str]:
        return {
            **self.extra_env,
            "PAPERCLIP_DATABASE_URL": self.database_url,
            "PAPERCLIP_DATA_DIR": str(self.tmp / f"cp{index}"),
            "PAPERCLIP_PORT": str(self.ports[index]),
            "PAPERCLIP_LEASE_SECONDS": str(self.lease_seconds),
            "PAPERCLIP_LOG_FORMAT": "json",
            "PAPERCLIP_INSTANCE_ID": f"replica-{index}",
        }

    def start_server(
        self, index: int = 0, *, local_runner: bool = False, healthy: bool = True
    ) -> ServerProcess:
        """A control plane; with ``local_runner``, it starts its own runner offering the fake.

        ``healthy=False`` returns once it listens (see :meth:`ServerProcess.start`).
        """
        while len(self.ports) <= index:
            self.ports.append(free_port())
        env = self.server_env(index)
        if local_runner:
            self.script_dir.mkdir(parents=True, exist_ok=True)
            env["PAPERCLIP_RUNNER_LAUNCH"] = json.dumps(fake_launch(self.script_dir, self.fake_log))
        args = () if local_runner else ("--no-runner",)
        server = ServerProcess(env, self.tmp / f"cp{index}.log", *args).start(healthy=healthy)
        if index < len(self.servers):
            self.servers[index] = server
        else:
            self.servers.append(server)
        return server

    def url(self, index: int = 0) -> str:
        return f"http://127.0.0.1:{self.ports[index]}"

    @property
    def script_dir(self) -> Path:
        """Where agents' fake scripts live, one ``<model>.json`` each."""
        return self.tmp / "fake-scripts"

    @property
    def fake_log(self) -> Path:
        return self.tmp / "fake.log"

    def start_runner(
        self,
        launch: dict | None = None,
        env: dict[str, str] | None = None,
        *,
        another: bool = False,
    ) -> RunnerProcess:
        """The runner (a next process of the same one, after the first), offering the fake
        app-server (or the given launch profiles); ``another``: a second runner, on its own
        credential and work folder."""
        self.script_dir.mkdir(parents=True, exist_ok=True)
        profiles = launch if launch is not None else fake_launch(self.script_dir, self.fake_log)
        if another or self.credential is None:
            self.credential = self.runner_credential()
            self.runner_folder = self.tmp / (
                "runner" if not another else f"runner-{uuid.uuid4().hex[:8]}"
            )
        self.runner = RunnerProcess(
            [self.url(i) for i in range(len(self.ports))],
            self.credential,
            self.runner_folder,
            self.tmp / "runner.log",
            env={**(env or {}), "PAPERCLIP_RUNNER_LAUNCH": json.dumps(profiles)},
        ).start()
        return self.runner

    def runner_credential(self) -> str:
        import os

        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "paperclip",
                "runners",
                "create",
                # Unique in the module's database: a free port may be handed out twice.
                f"runner-{uuid.uuid4().hex[:8]}",
                "--json",
            ],
            env={**os.environ, **self.server_env(0)},
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(out.stdout)["credential"]

    def stop(self) -> None:
        if self.runner is not None:
            self.runner.stop()
        for server in self.servers:
            server.stop()

    # HTTP helpers

    def api(self, index: int = 0) -> httpx.Client:
        """A client of replica ``index``'s API, as its operator."""
        return httpx.Client(
            base_url=f"{self.url(index)}/api", headers=self.headers(index), timeout=30
        )

    def headers(self, index: int = 0) -> dict[str, str]:
        """What a client of replica ``index`` sends: its operator token (tests/support/processes)."""
        return self.servers[index].headers if index < len(self.servers) else {}

    def board(self, path: str = "/", index: int = 0) -> str:
        """Replica ``index``'s board at ``path`` (``/#/…``), through its sign-in URL."""
        return self.servers[index].board(path)

    def setup_issue(
        self,
        script: dict,
        *,
        title: str = "Fix the build",
        provider_config: dict | None = None,
        provider: str = "codex",
        extra_config: dict | None = None,
    ) -> dict:
        """A company, an agent on the fake (its model names its script) and an issue.
        ``extra_config``: more provider settings beside the fake's ``launch`` and ``model``."""
        model = f"scripted-{uuid.uuid4().hex[:8]}"  # its script file: unique in the folder
        self.script_dir.mkdir(parents=True, exist_ok=True)
        script_path = self.script_dir / f"{model}.json"
        if provider_config is None:
            script_path.write_text(json.dumps(script))
        fake = {"launch": FAKE_PROFILE, "model": model, **(extra_config or {})}
        config = provider_config or fake
        with self.api() as api:
            company = _created(api.post("/companies", json={"name": "Acme", "issue_prefix": "ACM"}))
            agent = _created(
                api.post(
                    f"/companies/{company['id']}/agents",
                    json={
                        "name": f"coder-{model}",
                        "provider": provider,
                        "provider_config": config,
                    },
                )
            )
            issue = _created(
                api.post(
                    f"/companies/{company['id']}/issues",
                    json={"title": title, "description": "The build is red."},
                )
            )
        return {
            "company": company,
            "agent": agent,
            "issue": issue,
            "model": model,
            "script_path": script_path,
            "fake_log": self.fake_log,
        }

    def rewrite_script(self, ctx: dict, script: dict) -> None:
        """Change the fake's script before its run starts (it reads it when it starts)."""
        ctx["script_path"].write_text(json.dumps(script))

    def assign(self, ctx: dict) -> None:
        with self.api() as api:
            r = api.patch(
                f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}",
                json={"assignee_agent_id": ctx["agent"]["id"]},
            )
            assert r.status_code == 200, r.text

    def runs(self, ctx: dict, index: int = 0) -> list[dict]:
        with self.api(index) as api:
            return api.get(
                f"/companies/{ctx['company']['id']}/runs", params={"issue_id": ctx["issue"]["id"]}
            ).json()["items"]

    def wait_for_terminal_run(self, ctx: dict, timeout: float = 90, index: int = 0) -> dict:
        def done():
            try:
                runs = self.runs(ctx, index)
            except httpx.HTTPError:
                return None
            finished = [r for r in runs if r["status"] in ("succeeded", "failed", "cancelled")]
            return finished[0] if finished else None

        return wait_until(done, timeout, 0.2, "a terminal run")

    def events(self, ctx: dict, run_id: str, index: int = 0) -> list[dict]:
        items: list[dict] = []
        after = 0
        with self.api(index) as api:
            while True:
                page = api.get(
                    f"/companies/{ctx['company']['id']}/runs/{run_id}/events",
                    params={"after_seq": after, "limit": 500},
                ).json()
                items += page["items"]
                if page["next_after_seq"] is None:
                    return items
                after = page["next_after_seq"]

    def tool_calls(self, ctx: dict, run_id: str, tool: str | None = None) -> list[dict]:
        """The run's tool journal, as ``GET …/runs/{run_id}/tool-calls`` pages it."""
        items: list[dict] = []
        params: dict = {"limit": 200} | ({"tool": tool} if tool else {})
        with self.api() as api:
            while True:
                page = api.get(
                    f"/companies/{ctx['company']['id']}/runs/{run_id}/tool-calls", params=params
                ).json()
                items += page["items"]
                if page["next_cursor"] is None:
                    return items
                params["cursor"] = page["next_cursor"]

    def comments(self, ctx: dict, index: int = 0) -> list[dict]:
        with self.api(index) as api:
            return api.get(
                f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}/comments"
            ).json()["items"]


@pytest.fixture
async def world(paperclip_container, paperclip_plugin_host, paperclip_register_plugin):
    """The engine in memory, started, with a company and an agent (``tests.engine.memory_world``)."""
    from tests.engine.memory_world import make_world

    built, engine = await make_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin
    )
    await engine.start()
    try:
        yield built
    finally:
        await engine.stop()


@pytest.fixture
async def steer_world(paperclip_container, paperclip_plugin_host, paperclip_register_plugin):
    """``world`` whose provider can steer and resume (``tests.engine.steer_world``)."""
    from tests.engine.steer_world import steerable_world

    built, engine = await steerable_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin
    )
    await engine.start()
    try:
        yield built
    finally:
        await engine.stop()


@pytest.fixture
async def quiet_world(paperclip_container, paperclip_plugin_host, paperclip_register_plugin):
    """A world whose engine is not started: its wake listener alone runs, and one runner is
    connected; the passes the connection and the listener ask for have run."""
    from tests.engine.memory_world import make_world

    world, engine = await make_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin
    )
    listener = asyncio.create_task(engine.scheduler.listen())
    try:
        await asyncio.wait_for(engine.scheduler.listening.wait(), 10)
        engine.scheduler.resumptions.clear()
        world.peer, task = await world.connect(await world.new_runner())
        # The runner's connection asks the next pass to look for queued turns of lost runs.
        await asyncio.wait_for(engine.scheduler.resumptions.wait(), 10)
        assert await engine.claim_wakes() == 0
        yield world
        world.peer.transport.hang_up()
        await asyncio.wait_for(task, 10)
    finally:
        listener.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await listener
        await engine.stop()


@pytest.fixture
def stack(paperclip_database_url, tmp_path):
    s = Stack(database_url=paperclip_database_url, tmp=tmp_path)
    yield s
    s.stop()


def _created(response: httpx.Response) -> dict:
    assert response.status_code == 201, response.text
    return response.json()
