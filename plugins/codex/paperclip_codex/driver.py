"""The Codex provider driver: one ``codex app-server`` process per run, one turn at a time."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperclip_hookspecs.providers import (
    DriverContext,
    EventSink,
    ProviderEvent,
    TurnInput,
    TurnResult,
)

from paperclip_codex import __version__
from paperclip_codex.config import (
    MCP_TOKEN_ENV_VAR,
    CodexSettings,
    ConfigError,
    flatten,
    mcp_overrides,
    override_args,
    write_config,
)
from paperclip_codex.jsonrpc import METHOD_NOT_FOUND, ConnectionClosed, JsonRpcError
from paperclip_codex.process import AppServerProcess, SpawnError

logger = logging.getLogger(__name__)

EVENT_BUFFER = 1024
"""Provider messages buffered ahead of the event sink; beyond it the provider is made to wait."""
CLIENT_INFO = {"name": "paperclip", "title": "Paperclip", "version": __version__}


class ErrorCode(enum.StrEnum):
    """Machine-readable prefixes of :attr:`TurnResult.error` (``"<code>: <message>"``)."""

    INVALID_CONFIG = "invalid_config"
    SPAWN_FAILED = "spawn_failed"
    STARTUP_FAILED = "startup_failed"
    PROVIDER_EXITED = "provider_exited"
    THREAD_START_FAILED = "thread_start_failed"
    RESUME_FAILED = "resume_failed"
    TURN_START_FAILED = "turn_start_failed"
    TURN_FAILED = "turn_failed"
    TURN_TIMEOUT = "turn_timeout"
    REQUEST_TIMEOUT = "request_timeout"
    TURN_IN_PROGRESS = "turn_in_progress"
    DRIVER_CLOSED = "driver_closed"


def error_text(code: ErrorCode, message: str) -> str:
    """Format a turn error as ``"<code>: <message>"``."""
    return f"{code.value}: {message}"


class _TurnAborted(Exception):
    """Ends a turn early with a failed result."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class _Launch:
    """What a provider process was started with; a turn that needs another one restarts it."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    codex_home: str


class _Stop:
    """Put after the last message a turn should emit, to end that turn's pump early."""


@dataclass(slots=True)
class _Ended:
    reason: str


class _EventChannel:
    """Bounded FIFO of provider messages, with an end marker that never blocks."""

    def __init__(self, maxsize: int) -> None:
        self._queue: asyncio.Queue[object] = asyncio.Queue(maxsize)
        self._ended: str | None = None
        self._end = asyncio.Event()

    async def put(self, item: object) -> None:
        await self._queue.put(item)

    def end(self, reason: str) -> None:
        if self._ended is None:
            self._ended = reason
            self._end.set()

    async def get(self) -> object:
        while True:
            if not self._queue.empty():
                return self._queue.get_nowait()
            if self._ended is not None:
                return _Ended(self._ended)
            getter = asyncio.ensure_future(self._queue.get())
            ender = asyncio.ensure_future(self._end.wait())
            try:
                await asyncio.wait({getter, ender}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ender.cancel()
                if not getter.done():
                    getter.cancel()
            if getter.done() and not getter.cancelled():
                return getter.result()


class _Session:
    """A running provider process with its event channel and what it has loaded."""

    def __init__(self, launch: _Launch) -> None:
        self.launch = launch
        self.channel = _EventChannel(EVENT_BUFFER)
        self.process: AppServerProcess | None = None
        self.thread_id: str | None = None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.connection.closed_reason is None


class CodexDriver:
    """Drives ``codex app-server`` for one run (see :class:`ProviderDriver`).

    The process starts with the first turn and stays up between turns. A turn
    whose launch settings differ (command, MCP endpoint or token, home) replaces
    the process; the thread carries over by ``thread/resume``, since threads are
    persisted in ``CODEX_HOME``.
    """

    def __init__(self, context: DriverContext) -> None:
        self._context = context
        self._session: _Session | None = None
        self._settings = CodexSettings()
        self._running = False
        self._thread_id: str | None = None
        self._answer: str | None = None
        """The last agent message of the running turn: its final prose."""
        self._turn_request: asyncio.Future[Any] | None = None
        self._turn_id: str | None = None
        self._turn_known = asyncio.Event()
        self._interrupt_pending = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._closed = False
        self._close_task: asyncio.Task[None] | None = None

    # ProviderDriver

    async def run_turn(self, turn: TurnInput, emit: EventSink) -> TurnResult:
        """Start or resume the Codex thread and run one turn; events go to ``emit`` in order."""
        if self._closed:
            return _failed(turn.session_ref, ErrorCode.DRIVER_CLOSED, "the driver is closed")
        if self._running:
            return _failed(
                turn.session_ref,
                ErrorCode.TURN_IN_PROGRESS,
                "a turn is already running on this driver",
            )
        self._running = True
        self._idle.clear()
        self._thread_id = turn.session_ref
        self._answer = None
        try:
            return await self._run_turn(turn, emit)
        except _TurnAborted as exc:
            return _failed(self._thread_id, exc.code, exc.message)
        finally:
            self._running = False
            self._turn_request = None
            self._turn_id = None
            self._interrupt_pending = False
            # Wake steers still waiting for this turn's id; the next turn gets a fresh event.
            self._turn_known.set()
            self._turn_known = asyncio.Event()
            self._idle.set()

    async def steer(self, message_id: str, text: str) -> bool:
        """Send ``text`` into the running turn (``turn/steer``); True when Codex accepted it."""
        if not self._running or self._closed:
            return False
        with contextlib.suppress(TimeoutError):
            # A steer racing turn/start waits for the turn id rather than failing.
            await asyncio.wait_for(self._turn_known.wait(), self._settings.request_timeout_seconds)
        session, turn_id, thread_id = self._session, self._turn_id, self._thread_id
        if session is None or session.process is None or turn_id is None or thread_id is None:
            return False
        params = {
            "threadId": thread_id,
            "expectedTurnId": turn_id,
            "input": [{"type": "text", "text": text}],
        }
        try:
            result = await session.process.connection.request(
                "turn/steer", params, wait_seconds=self._settings.request_timeout_seconds
            )
        except (TimeoutError, JsonRpcError, ConnectionClosed) as exc:
            logger.info("steer %s was not accepted: %s", message_id, exc)
            return False
        return isinstance(result, Mapping) and bool(result.get("turnId") == turn_id)

    async def interrupt(self) -> None:
        """Ask Codex to stop the running turn (``turn/interrupt``); the turn then ends ``interrupted``."""
        if not self._running or self._closed:
            return
        if self._turn_id is None:
            self._interrupt_pending = True  # sent as soon as turn/start answers
            return
        await self._send_interrupt()

    async def close(self) -> None:
        """Terminate the provider process (SIGTERM, then SIGKILL). Idempotent."""
        self._closed = True
        if self._close_task is None:
            self._close_task = asyncio.ensure_future(self._close())
        await asyncio.shield(self._close_task)

    async def _close(self) -> None:
        await self._stop_session()
        # A running turn sees the closed flag and ends; a process it was spawning
        # at this very moment is stopped by it, so wait for that (bounded).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), 2 * self._settings.close_timeout_seconds + 1)
        await self._stop_session()

    # The turn

    async def _run_turn(self, turn: TurnInput, emit: EventSink) -> TurnResult:
        try:
            settings = CodexSettings.from_config(turn.config)
            launch = self._launch_for(turn, settings)
        except ConfigError as exc:
            raise _TurnAborted(ErrorCode.INVALID_CONFIG, str(exc)) from None
        self._settings = settings
        session = await self._ensure_session(launch, settings, turn)
        stop = _Stop()
        pump = asyncio.create_task(self._pump(session, emit, stop), name="codex-event-pump")
        try:
            try:
                thread_id = await self._open_thread(session, turn, settings)
                turn_id = await self._start_turn(session, thread_id, turn, settings)
            except _TurnAborted:
                await self._finish_pump(session, pump, stop)
                raise
            return await self._await_completion(session, pump, stop, thread_id, turn_id, settings)
        finally:
            if not pump.done():
                pump.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pump

    def _launch_for(self, turn: TurnInput, settings: CodexSettings) -> _Launch:
        home = settings.codex_home or os.path.join(self._context.state_dir, "codex-home")
        pairs = list(settings.config_overrides)
        env = {**self._context.env, "CODEX_HOME": home}
        if turn.mcp is not None:
            pairs = mcp_overrides(turn.mcp, settings.mcp_tool_timeout_seconds) + pairs
            env[MCP_TOKEN_ENV_VAR] = turn.mcp.bearer_token
        argv = (*settings.command, *override_args(pairs))
        return _Launch(argv=argv, env=tuple(sorted(env.items())), codex_home=home)

    async def _ensure_session(
        self, launch: _Launch, settings: CodexSettings, turn: TurnInput
    ) -> _Session:
        current = self._session
        if current is not None and current.alive and current.launch == launch:
            return current
        await self._stop_session()
        if self._closed:
            raise _TurnAborted(ErrorCode.DRIVER_CLOSED, "the driver was closed")
        home = Path(launch.codex_home)
        argv = launch.argv
        try:
            if not write_config(home, settings.config_document()):
                # Someone else's config.toml: ours rides on the command line, which wins.
                argv = (
                    *settings.command,
                    *override_args(flatten(settings.config_document())),
                    *argv[len(settings.command) :],
                )
        except OSError as exc:
            raise _TurnAborted(
                ErrorCode.SPAWN_FAILED, f"cannot prepare CODEX_HOME {home}: {exc}"
            ) from None
        session = _Session(launch)
        env = {**os.environ, **dict(launch.env)}
        try:
            session.process = await AppServerProcess.spawn(
                argv,
                env=env,
                cwd=turn.cwd,
                on_message=session.channel.put,
                on_request=self._answer_server_request,
                on_close=session.channel.end,
            )
        except SpawnError as exc:
            raise _TurnAborted(ErrorCode.SPAWN_FAILED, str(exc)) from None
        self._session = session
        if self._closed:  # close() ran while we were spawning
            await self._stop_session()
            raise _TurnAborted(ErrorCode.DRIVER_CLOSED, "the driver was closed")
        connection = session.process.connection
        try:
            await connection.request(
                "initialize",
                {"clientInfo": CLIENT_INFO, "capabilities": {"experimentalApi": False}},
                wait_seconds=settings.request_timeout_seconds,
            )
            await connection.notify("initialized")
        except (TimeoutError, JsonRpcError, ConnectionClosed) as exc:
            detail = await session.process.exit_description(wait=0.5)
            await self._stop_session()
            if self._closed:
                raise _TurnAborted(ErrorCode.DRIVER_CLOSED, "the driver was closed") from None
            raise _TurnAborted(
                ErrorCode.STARTUP_FAILED, f"initialize failed ({_describe(exc)}); {detail}"
            ) from None
        return session

    async def _open_thread(
        self, session: _Session, turn: TurnInput, settings: CodexSettings
    ) -> str:
        overrides: dict[str, Any] = {
            "cwd": turn.cwd,
            "approvalPolicy": settings.approval_policy,
            "sandbox": settings.sandbox,
        }
        if settings.model is not None:
            overrides["model"] = settings.model
        ref = turn.session_ref
        if ref is not None and ref == session.thread_id:
            return ref  # already loaded in this process
        if ref is not None:
            try:
                result = await self._request(
                    session, "thread/resume", {"threadId": ref, **overrides}
                )
            except JsonRpcError as exc:
                if settings.resume_fallback != "fresh":
                    raise _TurnAborted(
                        ErrorCode.RESUME_FAILED, f"thread {ref} could not be resumed: {exc.message}"
                    ) from None
                logger.warning(
                    "thread %s could not be resumed (%s); starting a fresh one", ref, exc.message
                )
            else:
                return self._adopt_thread(session, result, "thread/resume")
        try:
            result = await self._request(session, "thread/start", overrides)
        except JsonRpcError as exc:
            raise _TurnAborted(ErrorCode.THREAD_START_FAILED, exc.message) from None
        return self._adopt_thread(session, result, "thread/start")

    def _adopt_thread(self, session: _Session, result: Any, method: str) -> str:
        thread_id = _dig(result, "thread", "id")
        if not isinstance(thread_id, str):
            raise _TurnAborted(ErrorCode.THREAD_START_FAILED, f"{method} returned no thread id")
        session.thread_id = thread_id
        self._thread_id = thread_id
        return thread_id

    async def _start_turn(
        self, session: _Session, thread_id: str, turn: TurnInput, settings: CodexSettings
    ) -> str:
        assert session.process is not None
        params: dict[str, Any] = {
            "threadId": thread_id,
            "input": [{"type": "text", "text": turn.prompt}],
            "cwd": turn.cwd,
        }
        if settings.model is not None:
            params["model"] = settings.model  # a thread loaded earlier may carry another
        try:
            future = await session.process.connection.send_request("turn/start", params)
        except ConnectionClosed as exc:
            raise await self._exited(session, exc) from None
        # The pump reads this future to recognise this turn's turn/completed.
        self._turn_request = future
        result = await self._await_response(session, future, "turn/start")
        turn_id = _dig(result, "turn", "id")
        if not isinstance(turn_id, str):
            raise _TurnAborted(ErrorCode.TURN_START_FAILED, "turn/start returned no turn id")
        self._turn_id = turn_id
        self._turn_known.set()
        if self._interrupt_pending:
            await self._send_interrupt()
        return turn_id

    async def _await_completion(
        self,
        session: _Session,
        pump: asyncio.Task[tuple[str, Any]],
        stop: _Stop,
        thread_id: str,
        turn_id: str,
        settings: CodexSettings,
    ) -> TurnResult:
        try:
            how, detail = await asyncio.wait_for(
                asyncio.shield(pump), settings.turn_timeout_seconds
            )
        except TimeoutError:
            await self._send_interrupt()
            try:
                how, detail = await asyncio.wait_for(
                    asyncio.shield(pump), settings.request_timeout_seconds
                )
            except TimeoutError:
                await self._finish_pump(session, pump, stop)
                await self._stop_session()  # wedged: a fresh process resumes the thread next time
                return _failed(
                    thread_id,
                    ErrorCode.TURN_TIMEOUT,
                    f"turn {turn_id} did not end within {settings.turn_timeout_seconds:g}s, "
                    "nor after an interrupt",
                )
            if how == "completed":
                return _failed(
                    thread_id,
                    ErrorCode.TURN_TIMEOUT,
                    f"turn {turn_id} exceeded {settings.turn_timeout_seconds:g}s and was interrupted",
                )
        if how == "completed":
            return _turn_result(thread_id, detail, self._answer)
        raise await self._exited(session, ConnectionClosed(str(detail)))

    async def _pump(self, session: _Session, emit: EventSink, stop: _Stop) -> tuple[str, Any]:
        """Emit provider messages in order until this turn's ``turn/completed`` (or the end)."""
        while True:
            item = await session.channel.get()
            if item is stop:
                return ("stopped", None)
            if isinstance(item, _Stop):
                continue  # left over from an earlier turn's early end
            if isinstance(item, _Ended):
                return ("ended", item.reason)
            assert isinstance(item, dict)
            method = item.get("method")
            params = item.get("params")
            payload = (
                params
                if isinstance(params, Mapping)
                else ({} if params is None else {"value": params})
            )
            await emit(ProviderEvent(type=str(method), payload=payload))
            if method == "item/completed" and _dig(payload, "item", "type") == "agentMessage":
                text = _dig(payload, "item", "text")
                if isinstance(text, str) and text.strip():
                    self._answer = text  # the last one is the turn's final prose
            if method == "turn/completed" and "id" not in item and self._is_this_turn(payload):
                return ("completed", payload)

    def _is_this_turn(self, payload: Mapping[str, Any]) -> bool:
        # The turn/start response always precedes its turn's notifications on the
        # wire, and the reader settles it before reading further, so the future is
        # already done when this turn's turn/completed comes through.
        future = self._turn_request
        if (
            future is None
            or not future.done()
            or future.cancelled()
            or future.exception() is not None
        ):
            return False
        turn_id = _dig(payload, "turn", "id")
        return isinstance(turn_id, str) and turn_id == _dig(future.result(), "turn", "id")

    async def _finish_pump(
        self, session: _Session, pump: asyncio.Task[tuple[str, Any]], stop: _Stop
    ) -> None:
        """Let the pump emit what has arrived so far, then stop it (bounded)."""
        if pump.done():
            return
        limit = self._settings.request_timeout_seconds
        with contextlib.suppress(TimeoutError):
            if session.alive:
                await asyncio.wait_for(session.channel.put(stop), limit)
            # A dead session's channel ends by itself once drained.
            await asyncio.wait_for(asyncio.shield(pump), limit)
            return
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pump

    # Requests

    async def _request(self, session: _Session, method: str, params: Any) -> Any:
        assert session.process is not None
        try:
            future = await session.process.connection.send_request(method, params)
        except ConnectionClosed as exc:
            raise await self._exited(session, exc) from None
        return await self._await_response(session, future, method)

    async def _await_response(
        self, session: _Session, future: asyncio.Future[Any], method: str
    ) -> Any:
        try:
            return await asyncio.wait_for(future, self._settings.request_timeout_seconds)
        except ConnectionClosed as exc:
            raise await self._exited(session, exc) from None
        except TimeoutError:
            # An app-server that stops answering is not trusted with the next turn.
            if self._session is session:
                await self._stop_session()
            raise _TurnAborted(
                ErrorCode.REQUEST_TIMEOUT,
                f"{method} got no answer within {self._settings.request_timeout_seconds:g}s",
            ) from None
        except JsonRpcError as exc:
            if method == "turn/start":
                raise _TurnAborted(ErrorCode.TURN_START_FAILED, exc.message) from None
            raise

    async def _send_interrupt(self) -> None:
        session, thread_id, turn_id = self._session, self._thread_id, self._turn_id
        if session is None or session.process is None or thread_id is None or turn_id is None:
            return
        self._interrupt_pending = False
        try:
            await session.process.connection.request(
                "turn/interrupt",
                {"threadId": thread_id, "turnId": turn_id},
                wait_seconds=self._settings.request_timeout_seconds,
            )
        except (TimeoutError, JsonRpcError, ConnectionClosed) as exc:
            logger.info("turn/interrupt for %s failed: %s", turn_id, _describe(exc))

    async def _answer_server_request(self, method: str, params: Any) -> Any:
        """Answer Codex's requests to the client without a person: by policy, and at once."""
        approve = self._settings.approvals == "approve"
        if method in ("item/commandExecution/requestApproval", "item/fileChange/requestApproval"):
            return {"decision": "accept" if approve else "decline"}
        if method in ("execCommandApproval", "applyPatchApproval"):
            return {"decision": "approved" if approve else "denied"}
        if method == "item/permissions/requestApproval":
            granted = (
                params.get("permissions", {}) if approve and isinstance(params, Mapping) else {}
            )
            return {"permissions": granted, "scope": "turn"}
        if method == "mcpServer/elicitation/request":
            meta = _dig(params, "meta") or _dig(params, "_meta") or {}
            is_tool_approval = (
                isinstance(meta, Mapping) and meta.get("codex_approval_kind") == "mcp_tool_call"
            )
            if approve and is_tool_approval:
                return {"action": "accept", "content": {}}
            return {"action": "decline", "content": None}
        if method == "item/tool/requestUserInput":
            return {"answers": {}}
        raise JsonRpcError(METHOD_NOT_FOUND, f"paperclip does not handle {method}")

    # Process lifecycle

    async def _exited(self, session: _Session, exc: Exception) -> _TurnAborted:
        """The failure for a provider that went away; the process is reaped."""
        if self._closed:
            return _TurnAborted(ErrorCode.DRIVER_CLOSED, "the driver was closed during the turn")
        detail = (
            await session.process.exit_description() if session.process is not None else str(exc)
        )
        if self._session is session:
            await self._stop_session()
        return _TurnAborted(ErrorCode.PROVIDER_EXITED, detail)

    async def _stop_session(self) -> None:
        session, self._session = self._session, None
        if session is not None and session.process is not None:
            await session.process.terminate(self._settings.close_timeout_seconds)


def _failed(session_ref: str | None, code: ErrorCode, message: str) -> TurnResult:
    return TurnResult(status="failed", session_ref=session_ref, error=error_text(code, message))


def _turn_result(thread_id: str, payload: Mapping[str, Any], answer: str | None) -> TurnResult:
    turn = payload.get("turn")
    status = turn.get("status") if isinstance(turn, Mapping) else None
    if status == "completed":
        return TurnResult(status="completed", session_ref=thread_id, answer=answer)
    if status == "interrupted":
        return TurnResult(status="interrupted", session_ref=thread_id)
    error = turn.get("error") if isinstance(turn, Mapping) else None
    message = error.get("message") if isinstance(error, Mapping) else None
    info = error.get("codexErrorInfo") if isinstance(error, Mapping) else None
    text = str(message or f"turn ended with status {status!r}")
    if info:
        text += f" ({info})"
    return _failed(thread_id, ErrorCode.TURN_FAILED, text)


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return str(exc) or type(exc).__name__
