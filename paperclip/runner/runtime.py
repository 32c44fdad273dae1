"""The runner process: hosts provider drivers, keeps them running across control-plane restarts.

It speaks the runner protocol to whichever replica answers (unacknowledged
messages replayed after a reconnect, duplicates dropped by seq), serves the
run's tools over MCP on loopback and forwards each call as a durable input.

A run's way: ``start_turn`` from the link (``engine/links/link.py``); next, the
driver its provider plugin creates (e.g. ``paperclip_codex/driver.py``) runs the
turn; its output goes through ``runner/outbox.py`` to ``engine/connections/inbox.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websockets
from paperclip_hookspecs.providers import (
    DriverContext,
    ProviderDriver,
    ProviderEvent,
    ProviderKind,
    TurnInput,
    TurnResult,
)
from websockets.asyncio.client import ClientConnection, connect

from paperclip.failpoints import failpoint
from paperclip.runner.capabilities import may_steer, turn_input
from paperclip.runner.isolation import AgentUser, IsolationError, open_for_traversal
from paperclip.runner.launch import LaunchPolicy, LaunchRefused
from paperclip.runner.mcp_bridge import McpBridge, ToolCallResult
from paperclip.runner.models import ModelPolicy, ModelRefused
from paperclip.runner.offers import ProviderOffers
from paperclip.runner.outbox import Outbox
from paperclip.runner.records import TURN_LOST, TurnRecords  # noqa: F401 (re-exported)
from paperclip.runner.reports import session_reporter, usage_reporter
from paperclip.runner.steer_order import SteerOrder
from paperclip.runner.workspace_host import HeldWorkspace, WorkspaceHost, hold_workspace
from paperclip.runner.workspaces.errors import WorkspaceError
from paperclip.wire import messages as wire
from paperclip.wire.tools import TOOLS, ToolSpec

log = logging.getLogger(__name__)

BACKOFF_MAX = 2.0


@dataclass
class HostedRun:
    run_id: uuid.UUID
    token: str
    turn: int = 1
    driver: ProviderDriver | None = None
    kind: ProviderKind | None = None
    task: asyncio.Task[None] | None = None
    pending_calls: dict[str, asyncio.Future[ToolCallResult]] = field(default_factory=dict)
    order: SteerOrder[wire.DataMessage] = field(default_factory=SteerOrder)
    """Its events wait for the result of a steer in flight (the acknowledgement first)."""
    workspace: HeldWorkspace | None = None
    """The issue's worktree the run works in (None: its own folder)."""


class RunnerProcess:
    """One runner process: its connection to the control plane and the runs it hosts."""

    def __init__(
        self,
        servers: list[str],
        credential: str,
        *,
        work_dir: Path,
        providers: dict[str, Any],
        launch: LaunchPolicy | None = None,
        tools: Sequence[ToolSpec] = (),
        workspaces: WorkspaceHost | None = None,
        models: ModelPolicy | None = None,
        agents: AgentUser | None = None,
    ) -> None:
        if not servers:
            raise ValueError("a runner needs at least one control-plane URL")
        self.servers = servers
        self.credential = credential
        self.work_dir = work_dir
        self.providers = providers
        """Provider kinds by name (from the runner's plugin host)."""
        self.launch = launch if launch is not None else LaunchPolicy.build(providers)
        """The commands this host allows (the kinds' profiles and PAPERCLIP_RUNNER_LAUNCH)."""
        self.offers = ProviderOffers(providers, self.launch)
        self.models = models if models is not None else ModelPolicy.build()
        """The model endpoints, keys, sandbox and approvals this host allows, by profile."""
        self.agents = agents if agents is not None else AgentUser(None)
        """Who provider processes run as (None: this process's user)."""
        self.workspaces = workspaces
        """This host's worktrees (None: turns run in their run's folder only)."""
        self.instance = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.runs: dict[uuid.UUID, HostedRun] = {}
        # The core's tools, then the installed plugins' (their plugins load here too).
        self.bridge = McpBridge((*TOOLS, *tools), self._dispatch_tool)
        self.outbox = Outbox()
        self._received_seq = 0
        self._ws: ClientConnection | None = None
        self._send_lock = asyncio.Lock()
        self._ack_task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self.connected = asyncio.Event()

    # Lifecycle

    async def run(self) -> None:
        """Serve until ``stop()``: connect, reconnect, forever."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        (self.work_dir / "runs").mkdir(mode=0o700, exist_ok=True)
        if self.agents.user is not None:  # the agent user passes through to its run's folder
            open_for_traversal([self.work_dir, self.work_dir / "runs"])
        await self.bridge.start()
        housekeeping = asyncio.create_task(
            self.workspaces.housekeeping(lambda: {str(r) for r in self.runs})
            if self.workspaces is not None
            else asyncio.Event().wait()
        )
        attempt = 0
        try:
            while not self._stopping.is_set():
                url = self.servers[attempt % len(self.servers)]
                attempt += 1
                try:
                    await self._session(url)
                    attempt = 0
                except (OSError, websockets.WebSocketException, TimeoutError) as exc:
                    log.info("control plane %s: %s; retrying", url, exc)
                except wire.ProtocolError as exc:
                    log.error("control plane %s broke the protocol: %s", url, exc)
                self.connected.clear()
                self._ws = None
                if not self._stopping.is_set():
                    await asyncio.sleep(min(BACKOFF_MAX, 0.1 * 2 ** min(attempt, 5)))
        finally:
            housekeeping.cancel()
            await self._shutdown()

    async def stop(self) -> None:
        self._stopping.set()
        if self._ws is not None:
            await self._ws.close()

    async def _shutdown(self) -> None:
        for hosted in list(self.runs.values()):
            await self._close_run(hosted)
        await self.bridge.stop()

    # The connection

    async def _session(self, url: str) -> None:
        async with connect(
            wire.connect_url(url),
            additional_headers={"Authorization": f"Bearer {self.credential}"},
            max_size=wire.MAX_MESSAGE_BYTES,
            compression=None,  # small JSON messages: deflate costs more CPU than it saves
            open_timeout=10,
            ping_interval=10,
            ping_timeout=20,
        ) as ws:
            await ws.send(
                wire.encode(
                    wire.Hello(
                        protocol=wire.PROTOCOL,
                        runner_instance=self.instance,
                        providers=sorted(self.providers),
                        received_seq=self._received_seq,
                        runs=[
                            wire.HostedRun(
                                run_id=r.run_id, pending_calls=sorted(r.pending_calls), turn=r.turn
                            )
                            for r in self.runs.values()
                        ],
                        features=self._features(),
                        **(self.workspaces.hello() if self.workspaces is not None else {}),
                        **self.offers.hello(),
                        **self.models.hello(),
                    )
                )
            )
            welcome = wire.decode_to_runner(await asyncio.wait_for(ws.recv(), 60))
            if not isinstance(welcome, wire.Welcome):
                raise wire.ProtocolError(f"expected welcome, got {type(welcome).__name__}")
            self.outbox.acknowledged(welcome.acked_seq)
            log.info("connected to %s (replica %s)", url, welcome.replica)
            # Replay what the control plane has not acknowledged, in order, before
            # anything new: new messages wait in the outbox until the replay caught up.
            replayed = 0
            while pending := self.outbox.after(replayed):
                for message in pending:
                    await ws.send(wire.encode(message))
                    replayed = message.seq
            self._ws = ws  # no await since the last check: nothing can slip in between
            self.connected.set()
            self.offers.connected(welcome.features, self._send)
            if self.workspaces is not None:
                self.workspaces.connected(welcome.features, self._send)
            async for raw in ws:
                await self._receive(wire.decode_to_runner(raw))

    def _features(self) -> list[str]:
        """What ``hello`` says this process speaks beyond the base protocol."""
        features = [wire.FEATURE_UNSEQUENCED_RESULTS]
        if self.workspaces is not None:
            features += [wire.FEATURE_WORKSPACES, wire.FEATURE_WORKSPACE_MERGE]
        return features

    async def _send(self, message: wire.Message) -> None:
        ws = self._ws
        if ws is None:
            return  # kept in the outbox; replayed after the next connect
        with contextlib.suppress(websockets.WebSocketException):
            async with self._send_lock:
                await ws.send(wire.encode(message))

    async def _send_data(self, message: wire.DataMessage) -> None:
        """Number the message, keep it until acknowledged, send it if connected."""
        await self._send(await self.outbox.number(message))

    async def _receive(self, message: wire.ToRunner) -> None:
        if isinstance(message, wire.Ack):
            self.outbox.acknowledged(message.upto)
            return
        if isinstance(message, wire.Error):
            log.warning("control plane says: %s", message.message)
            return
        if not isinstance(message, wire.DataMessage):
            return
        if isinstance(message, wire.ToolResult) and message.seq == 0:
            # Unsequenced (FEATURE_UNSEQUENCED_RESULTS): its call id dedupes it, and there is
            # nothing to acknowledge.
            self._on_tool_result(message)
            return
        if message.seq > self._received_seq:
            try:
                await self._handle(message)
            except Exception:
                # A bug in one message's handling must not take the other runs down.
                log.exception("handling %s %s failed", type(message).__name__, message.seq)
            self._received_seq = message.seq
        self._acknowledge_soon()

    async def _handle(self, message: wire.DataMessage) -> None:
        if isinstance(message, wire.StartTurn):
            await self._on_start_turn(message)
        elif isinstance(message, wire.ToolResult):
            self._on_tool_result(message)
        elif isinstance(message, wire.Steer):
            await self._on_steer(message)
        elif isinstance(message, wire.Interrupt):
            await self._on_interrupt(message)
        elif isinstance(message, wire.Close):
            if (hosted := self.runs.get(message.run_id)) is not None:
                await self._close_run(hosted)
        elif isinstance(message, wire.ReleaseWorkspace):
            if self.workspaces is not None:
                self.workspaces.release_soon(message, self._send_data)
        elif isinstance(message, wire.MergeWorkspace):
            if self.workspaces is not None:
                self.workspaces.merge_soon(message, self._send_data)

    def _acknowledge_soon(self) -> None:
        """One cumulative ack for a burst: sent once the frames already received are handled."""
        if self._ack_task is None or self._ack_task.done():
            self._ack_task = asyncio.ensure_future(self._acknowledge())

    async def _acknowledge(self) -> None:
        await asyncio.sleep(0)  # let the receive loop drain what already arrived
        await self._send(wire.Ack(upto=self._received_seq))

    # Control-plane messages

    async def _on_start_turn(self, message: wire.StartTurn) -> None:
        run_id, number = message.run_id, message.turn
        hosted = self.runs.get(run_id)
        if hosted is not None and hosted.turn >= number:
            return  # a replay of a turn this process runs (or ran)
        run_dir = self.work_dir / "runs" / str(run_id)
        run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        records = TurnRecords(run_dir)
        if (lost := records.lost(run_id, number)) is not None:
            await self._send_data(lost)  # never started twice: the control plane resumes
            return
        if hosted is not None:
            await self._close_run(hosted)  # its earlier turn ended; this one starts afresh
        hosted = HostedRun(run_id=run_id, token=message.token, turn=number)
        self.runs[run_id] = hosted
        kind = self.providers.get(message.provider)
        if kind is None:
            await self._refuse_turn(
                hosted,
                "provider_not_installed",
                f"provider {message.provider!r} is not installed on this runner",
            )
            return
        try:
            # Decided here, before any process starts: the host's policy, not the caller's.
            command = self.launch.resolve(message.provider, message.config)
            grant = self.models.resolve(kind, message.config)
        except (LaunchRefused, ModelRefused) as exc:
            await self._refuse_turn(hosted, exc.code, str(exc))
            return
        try:
            hosted.workspace = hold_workspace(self.workspaces, message)
            git_env = hosted.workspace.env if hosted.workspace is not None else {}
            reached = hosted.workspace.reached if hosted.workspace is not None else None
            user, env, work = self.agents.prepare(
                command, run_dir, grant.access.keys, git_env, worktree=reached
            )
        except (WorkspaceError, IsolationError) as exc:
            await self._refuse_turn(hosted, exc.code, str(exc))
            return
        if hosted.workspace is not None:
            hosted.workspace.user = user  # the worktree is shared with it when it is made
        records.start(number, self.instance, message.session_ref)
        try:
            hosted.driver = kind.create_driver(
                DriverContext(
                    state_dir=str(run_dir),
                    env=git_env,
                    command=command,
                    report_session=session_reporter(records, run_id, number, self._send_data),
                    report_usage=usage_reporter(run_id, number, self._send_data),
                    process_env=env,
                    user=user,
                )
            )
        except Exception as exc:
            # A plugin's failure is its run's failure, never the runner's.
            log.exception("the %s provider plugin failed to create a driver", message.provider)
            await self._refuse_turn(
                hosted,
                "plugin_failed",
                f"the {message.provider!r} provider plugin failed to create its driver: "
                f"{type(exc).__name__}: {exc}",
            )
            return
        hosted.kind = kind
        view = hosted.workspace.view if hosted.workspace is not None else None
        turn = turn_input(kind, message, work or run_dir, self.bridge.url, view)
        if turn.mcp is not None:
            self.bridge.open_run(str(run_id), hosted.token)
        await self._send_data(
            wire.TurnStarted(seq=0, run_id=run_id, turn=number, session_ref=message.session_ref)
        )
        hosted.task = asyncio.create_task(self._run_turn(hosted, turn), name=f"turn-{run_id}")
        # Recorded as started, its ack not sent yet: a replay must not start it twice.
        failpoint("runner.start_turn.before_ack")

    async def _refuse_turn(self, hosted: HostedRun, code: str, text: str) -> None:
        log.warning("run %s refused: %s", hosted.run_id, text)
        await self._send_data(
            wire.TurnFinished(
                seq=0,
                run_id=hosted.run_id,
                turn=hosted.turn,
                status="failed",
                error=text,
                error_code=code,
            )
        )

    async def _run_turn(self, hosted: HostedRun, turn: TurnInput) -> None:
        assert hosted.driver is not None

        async def emit(event: ProviderEvent) -> None:
            await hosted.order.emit(
                wire.Event(
                    seq=0,
                    run_id=hosted.run_id,
                    event_type=event.type,
                    payload=dict(event.payload),
                    turn=hosted.turn,
                ),
                self._send_data,
            )

        if hosted.workspace is not None:
            try:  # made (or found) before the provider runs in it
                turn = await hosted.workspace.prepare(turn, hosted.turn, self._send_data)
            except WorkspaceError as exc:
                await self._refuse_turn(hosted, exc.code, str(exc))
                return
        try:
            result = await hosted.driver.run_turn(turn, emit)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("turn of run %s failed", hosted.run_id)
            result = TurnResult(status="failed", error=f"{type(exc).__name__}: {exc}")
        if hosted.workspace is not None:
            await hosted.workspace.report(hosted.turn, "turn_end", self._send_data)
        finished = wire.TurnFinished(
            seq=0,
            run_id=hosted.run_id,
            turn=hosted.turn,
            status=result.status,
            session_ref=result.session_ref,
            error=result.error,
            error_code=result.error_code,
            answer=result.answer,
            provider_turn_id=result.provider_turn_id,
        )
        # The provider completed the turn and its events are sent (or held behind a steer);
        # its end is not: a runner lost here leaves a completion its next turn follows.
        failpoint("runner.turn_finished.before_send")
        # Behind a steer in flight, as the run's events are: the turn's end closes its
        # log, so an event held back (a steer the model read as the turn ended) must go first.
        await hosted.order.emit(finished, self._send_data)

    def _on_tool_result(self, message: wire.ToolResult) -> None:
        hosted = self.runs.get(message.run_id)
        future = hosted.pending_calls.get(message.call_id) if hosted else None
        if future is not None and not future.done():
            future.set_result(ToolCallResult(content=message.content, is_error=message.is_error))

    async def _on_steer(self, message: wire.Steer) -> None:
        hosted = self.runs.get(message.run_id)

        async def steer() -> wire.DataMessage:
            acknowledged = False
            # A steer for another turn of the run (an earlier one, replayed) is refused.
            live = hosted is not None and message.turn in (0, hosted.turn)
            if live and hosted is not None and hosted.driver is not None and may_steer(hosted.kind):
                try:
                    acknowledged = await hosted.driver.steer(message.message_id, message.text)
                except Exception:
                    log.exception("steer of run %s failed", message.run_id)
                if acknowledged:
                    failpoint("runner.steer.acknowledged.before_event")
            return wire.SteerResult(
                seq=0,
                run_id=message.run_id,
                message_id=message.message_id,
                acknowledged=acknowledged,
                turn=message.turn or (hosted.turn if hosted is not None else 0),
            )

        if hosted is None:
            await self._send_data(await steer())
            return
        await hosted.order.steer(steer, self._send_data)

    async def _on_interrupt(self, message: wire.Interrupt) -> None:
        hosted = self.runs.get(message.run_id)
        if hosted is not None and hosted.driver is not None:
            await hosted.driver.interrupt()

    async def _close_run(self, hosted: HostedRun) -> None:
        self.runs.pop(hosted.run_id, None)
        self.bridge.close_run(str(hosted.run_id))
        if hosted.task is not None and not hosted.task.done():
            hosted.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await hosted.task
        if hosted.driver is not None:
            with contextlib.suppress(Exception):
                await hosted.driver.close()
        if hosted.workspace is not None:
            hosted.workspace.close()

    # Tool calls from the model (through the MCP bridge)

    async def _dispatch_tool(
        self, run_id: str, call_id: str, name: str, arguments: dict[str, Any]
    ) -> ToolCallResult:
        hosted = self.runs.get(uuid.UUID(run_id))
        if hosted is None:
            return ToolCallResult(
                {"error": {"code": "run_closed", "message": "the run has ended"}}, True
            )
        future: asyncio.Future[ToolCallResult] = asyncio.get_running_loop().create_future()
        hosted.pending_calls[call_id] = future
        try:
            await self._send_data(
                wire.ToolCall(
                    seq=0,
                    run_id=hosted.run_id,
                    call_id=call_id,
                    tool=name,
                    arguments=arguments,
                    token=hosted.token,
                )
            )
            # No timeout: the control plane may be restarting; the call is durable there.
            return await future
        finally:
            hosted.pending_calls.pop(call_id, None)
