"""The Codex provider driver: one ``codex app-server`` process per run, one turn at a time.

A run's way: the runner (``paperclip/runner/runtime.py``) hands it each turn;
what it emits goes back through the runner's outbox to the control plane's
``paperclip/engine/connections/inbox.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from paperclip_hookspecs.providers import ProviderEvent, TurnResult
from paperclip_provider_kit.errors import ErrorCode, TurnAborted
from paperclip_provider_kit.values import dig

from paperclip_codex.approvals import answer_server_request
from paperclip_codex.channel import Ended, Stop
from paperclip_codex.config import DEFAULT_COMMAND, CodexSettings, ConfigError
from paperclip_codex.jsonrpc import ConnectionClosed, JsonRpcError
from paperclip_codex.results import describe, failed, turn_result
from paperclip_codex.session import Launch, Session, spawn
from paperclip_codex.usage import METHOD as USAGE
from paperclip_codex.usage import UsageReports, turn_usage

if TYPE_CHECKING:
    from paperclip_hookspecs.providers import DriverContext, EventSink, TurnInput

logger = logging.getLogger(__name__)


class CodexDriver:
    """Drives ``codex app-server`` for one run (see :class:`ProviderDriver`).

    The process starts with the first turn and stays up between turns. A turn
    whose launch settings differ (command, MCP endpoint or token, home) replaces
    the process; the thread carries over by ``thread/resume``, since threads are
    persisted in ``CODEX_HOME``.
    """

    def __init__(self, context: DriverContext) -> None:
        self._context = context
        self._session: Session | None = None
        self._settings = CodexSettings()
        self._mcp_name: str | None = None
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
        self._usage = UsageReports(context)
        self._model: str | None = None
        """The model answering the running turn, as Codex names it (for the usage reports)."""

    # ProviderDriver

    async def run_turn(self, turn: TurnInput, emit: EventSink) -> TurnResult:
        """Start or resume the Codex thread and run one turn; events go to ``emit`` in order."""
        if self._closed:
            return failed(turn.session_ref, ErrorCode.DRIVER_CLOSED, "the driver is closed")
        if self._running:
            return failed(
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
        except TurnAborted as exc:
            return failed(self._thread_id, exc.code, exc.message)
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
            launch = Launch.for_turn(
                self.command, self._context.state_dir, self._context.env, turn, settings
            )
        except ConfigError as exc:
            raise TurnAborted(ErrorCode.INVALID_CONFIG, str(exc)) from None
        self._settings = settings
        self._mcp_name = turn.mcp.name if turn.mcp is not None else None
        session = await self._ensure_session(launch, settings, turn)
        stop = Stop()
        pump = asyncio.create_task(self._pump(session, emit, stop), name="codex-event-pump")
        try:
            try:
                thread_id = await self._open_thread(session, turn, settings)
                turn_id = await self._start_turn(session, thread_id, turn, settings)
            except TurnAborted:
                await self._finish_pump(session, pump, stop)
                raise
            result = await self._await_completion(session, pump, stop, thread_id, turn_id, settings)
            return replace(result, provider_turn_id=turn_id)
        finally:
            if not pump.done():
                pump.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pump

    @property
    def command(self) -> tuple[str, ...]:
        """The program this driver starts: the runner's launch profile, never the agent's config."""
        return tuple(self._context.command) or DEFAULT_COMMAND

    async def _ensure_session(
        self, launch: Launch, settings: CodexSettings, turn: TurnInput
    ) -> Session:
        current = self._session
        if current is not None and current.alive and current.launch == launch:
            return current
        await self._stop_session()
        if self._closed:
            raise TurnAborted(ErrorCode.DRIVER_CLOSED, "the driver was closed")
        session = await spawn(
            launch,
            settings,
            command=self.command,
            state_dir=self._context.state_dir,
            cwd=turn.cwd,
            on_request=self._answer_server_request,
            base_env=getattr(self._context, "process_env", None),
            user=getattr(self._context, "user", None),
        )
        self._session = session
        if self._closed:  # close() ran while we were spawning
            await self._stop_session()
            raise TurnAborted(ErrorCode.DRIVER_CLOSED, "the driver was closed")
        try:
            await session.initialize(settings.request_timeout_seconds)
        except (TimeoutError, JsonRpcError, ConnectionClosed) as exc:
            assert session.process is not None
            detail = await session.process.exit_description(wait=0.5)
            await self._stop_session()
            if self._closed:
                raise TurnAborted(ErrorCode.DRIVER_CLOSED, "the driver was closed") from None
            raise TurnAborted(
                ErrorCode.STARTUP_FAILED, f"initialize failed ({describe(exc)}); {detail}"
            ) from None
        return session

    async def _open_thread(self, session: Session, turn: TurnInput, settings: CodexSettings) -> str:
        overrides: dict[str, Any] = {
            "cwd": turn.cwd,
            "approvalPolicy": settings.approval_policy,
            "sandbox": settings.sandbox,
        }
        if settings.model is not None:
            overrides["model"] = settings.model
        if turn.system:
            # Standing rules ride as developer instructions, beside Codex's own.
            overrides["developerInstructions"] = turn.system
        ref = turn.session_ref
        if ref is not None and ref == session.thread_id:
            self._model = settings.model or self._model
            return ref  # already loaded in this process
        if ref is not None:
            try:
                result = await self._request(
                    session, "thread/resume", {"threadId": ref, **overrides}
                )
            except JsonRpcError as exc:
                if settings.resume_fallback != "fresh":
                    raise TurnAborted(
                        ErrorCode.RESUME_FAILED, f"thread {ref} could not be resumed: {exc.message}"
                    ) from None
                logger.warning(
                    "thread %s could not be resumed (%s); starting a fresh one", ref, exc.message
                )
            else:
                return await self._adopt_thread(session, result, "thread/resume")
        try:
            result = await self._request(session, "thread/start", overrides)
        except JsonRpcError as exc:
            raise TurnAborted(ErrorCode.THREAD_START_FAILED, exc.message) from None
        return await self._adopt_thread(session, result, "thread/start")

    async def _adopt_thread(self, session: Session, result: Any, method: str) -> str:
        thread_id = dig(result, "thread", "id")
        if not isinstance(thread_id, str):
            raise TurnAborted(ErrorCode.THREAD_START_FAILED, f"{method} returned no thread id")
        session.thread_id = thread_id
        self._thread_id = thread_id
        model = result.get("model") if isinstance(result, Mapping) else None
        self._model = model if isinstance(model, str) else self._settings.model
        if self._context.report_session is not None:
            # Durable at the runner before the turn starts: a lost turn resumes this thread.
            await self._context.report_session(thread_id)
        return thread_id

    async def _start_turn(
        self, session: Session, thread_id: str, turn: TurnInput, settings: CodexSettings
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
        turn_id = dig(result, "turn", "id")
        if not isinstance(turn_id, str):
            raise TurnAborted(ErrorCode.TURN_START_FAILED, "turn/start returned no turn id")
        self._turn_id = turn_id
        self._turn_known.set()
        if self._interrupt_pending:
            await self._send_interrupt()
        return turn_id

    async def _await_completion(
        self,
        session: Session,
        pump: asyncio.Task[tuple[str, Any]],
        stop: Stop,
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
                return failed(
                    thread_id,
                    ErrorCode.TURN_TIMEOUT,
                    f"turn {turn_id} did not end within {settings.turn_timeout_seconds:g}s, "
                    "nor after an interrupt",
                )
            if how == "completed":
                return failed(
                    thread_id,
                    ErrorCode.TURN_TIMEOUT,
                    f"turn {turn_id} exceeded {settings.turn_timeout_seconds:g}s and was interrupted",
                )
        if how == "completed":
            return turn_result(thread_id, detail, self._answer)
        raise await self._exited(session, ConnectionClosed(str(detail)))

    async def _pump(self, session: Session, emit: EventSink, stop: Stop) -> tuple[str, Any]:
        """Emit provider messages in order until this turn's ``turn/completed`` (or the end)."""
        while True:
            item = await session.channel.get()
            if item is stop:
                return ("stopped", None)
            if isinstance(item, Stop):
                continue  # left over from an earlier turn's early end
            if isinstance(item, Ended):
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
            if method == "item/completed" and dig(payload, "item", "type") == "agentMessage":
                text = dig(payload, "item", "text")
                if isinstance(text, str) and text.strip():
                    self._answer = text  # the last one is the turn's final prose
            if method == USAGE and self._is_this_turn(payload.get("turnId")):
                # Only this turn's: a resumed thread replays an earlier turn's usage.
                await self._usage.send(turn_usage(payload, self._model))
            elif method == "model/rerouted" and self._is_this_turn(payload.get("turnId")):
                self._model = str(payload.get("toModel") or self._model)
            elif method == "turn/completed" and "id" not in item:
                if self._is_this_turn(dig(payload, "turn", "id")):
                    return ("completed", payload)

    def _is_this_turn(self, turn_id: Any) -> bool:
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
        return isinstance(turn_id, str) and turn_id == dig(future.result(), "turn", "id")

    async def _finish_pump(
        self, session: Session, pump: asyncio.Task[tuple[str, Any]], stop: Stop
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

    async def _request(self, session: Session, method: str, params: Any) -> Any:
        assert session.process is not None
        try:
            future = await session.process.connection.send_request(method, params)
        except ConnectionClosed as exc:
            raise await self._exited(session, exc) from None
        return await self._await_response(session, future, method)

    async def _await_response(
        self, session: Session, future: asyncio.Future[Any], method: str
    ) -> Any:
        try:
            return await asyncio.wait_for(future, self._settings.request_timeout_seconds)
        except ConnectionClosed as exc:
            raise await self._exited(session, exc) from None
        except TimeoutError:
            # An app-server that stops answering is not trusted with the next turn.
            if self._session is session:
                await self._stop_session()
            raise TurnAborted(
                ErrorCode.REQUEST_TIMEOUT,
                f"{method} got no answer within {self._settings.request_timeout_seconds:g}s",
            ) from None
        except JsonRpcError as exc:
            if method == "turn/start":
                raise TurnAborted(ErrorCode.TURN_START_FAILED, exc.message) from None
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
            logger.info("turn/interrupt for %s failed: %s", turn_id, describe(exc))

    async def _answer_server_request(self, method: str, params: Any) -> Any:
        """Answer Codex's requests to the client without a person: by policy, and at once."""
        return answer_server_request(
            method, params, approve=self._settings.approvals == "approve", own_server=self._mcp_name
        )

    # Process lifecycle

    async def _exited(self, session: Session, exc: Exception) -> TurnAborted:
        """The failure for a provider that went away; the process is reaped."""
        if self._closed:
            return TurnAborted(ErrorCode.DRIVER_CLOSED, "the driver was closed during the turn")
        detail = (
            await session.process.exit_description() if session.process is not None else str(exc)
        )
        if self._session is session:
            await self._stop_session()
        return TurnAborted(ErrorCode.PROVIDER_EXITED, detail)

    async def _stop_session(self) -> None:
        session, self._session = self._session, None
        if session is not None and session.process is not None:
            await session.process.terminate(self._settings.close_timeout_seconds)
