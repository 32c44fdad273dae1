"""The gateway provider driver: a run is one ``agent`` request to a remote gateway.

There is no local process: the run id is the request's idempotency key, so a
connection lost mid-turn (or a driver that asks again after a restart) gets
the same gateway run, never a second one. A turn: connect (challenge, signed
``connect``), send ``agent {message, idempotencyKey, sessionKey,
extraSystemPrompt}``, pass the run's ``agent`` events to the sink, and end
with the request's final answer, or ``agent.wait``'s when the request was one the
gateway already had (after a reconnect, or from the driver of a lost runner). The
run's tools reach the remote agent through the relay
(:mod:`paperclip_gateway.relay`), which the run holds for its whole turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from paperclip_hookspecs.providers import ProviderEvent, TurnResult
from paperclip_provider_kit.errors import ErrorCode, TurnAborted
from paperclip_provider_kit.turns import TurnGate, failed
from paperclip_provider_kit.values import dig

from paperclip_gateway import relay
from paperclip_gateway.config import ConfigError, GatewaySettings
from paperclip_gateway.device import DeviceIdentity
from paperclip_gateway.profile import DEFAULT_PROFILE, GatewayProfile, ProfileError
from paperclip_gateway.protocol import Credentials, GatewayConnection, GatewayError
from paperclip_gateway.usage import UsageReports, run_usage

if TYPE_CHECKING:
    from paperclip_hookspecs.providers import DriverContext, EventSink, TurnInput

logger = logging.getLogger(__name__)

WAIT_SLICE_MS = 30_000
"""``agent.wait`` is asked in slices, so a lost connection is noticed."""
RETRY_PAUSE_SECONDS = 1.0
TAKEN_PAUSE = 15.0
"""The longest pause between tries of a request whose session other work holds."""


class GatewayDriver:
    """Drives one run's turns on a gateway (see :class:`ProviderDriver`)."""

    def __init__(self, context: DriverContext) -> None:
        self._context = context
        self._connection: GatewayConnection | None = None
        self._identity: DeviceIdentity | None = None
        self._settings = GatewaySettings()
        self._session_key: str | None = None
        self._run_id: str | None = None
        self._follow_ups: list[str] = []
        """Gateway runs queued by steers during this turn, in order."""
        self._answers: dict[str, tuple[GatewayConnection, asyncio.Queue[Mapping[str, Any]]]] = {}
        """Each follow-up's ``agent`` request: its final answer carries its usage."""
        self._usage = UsageReports(context)
        self._gate = TurnGate()
        self._aborted = False

    # ProviderDriver

    async def run_turn(self, turn: TurnInput, emit: EventSink) -> TurnResult:
        """Run one ``agent`` request (and its follow-ups) to the end of the run."""
        return await self._gate.run(
            turn.session_ref, lambda: self._run_turn(turn, emit), lambda: self._session_key
        )

    async def steer(self, message_id: str, text: str) -> bool:
        """A follow-up: another ``agent`` request on the same session, which the gateway runs
        after the current one; the turn ends when both have. Its idempotency key comes
        from the run and the message, so asking again never runs it twice."""
        connection, key = self._connection, self._session_key
        if not self._gate.running or connection is None or key is None or self._run_id is None:
            return False
        follow_up = f"{self._run_id}:follow-up:{message_id}"
        params = {"message": text, "idempotencyKey": follow_up, "sessionKey": key}
        if self._settings.agent_id is not None:
            params["agentId"] = self._settings.agent_id
        try:
            answers = await connection.send("agent", params)
            await connection.next_answer(answers, self._settings.request_timeout_seconds)
        except GatewayError as exc:
            logger.info("follow-up %s was not accepted: %s", message_id, exc)
            return False
        if follow_up not in self._follow_ups:
            self._follow_ups.append(follow_up)
            self._answers[follow_up] = (connection, answers)
        return True

    async def interrupt(self) -> None:
        """``sessions.abort`` for this run; the turn then ends ``interrupted``."""
        connection = self._connection
        if self._gate.running and connection is not None and self._run_id is not None:
            self._aborted = True
            with contextlib.suppress(GatewayError):
                await connection.request(
                    "sessions.abort",
                    {"key": self._session_key, "runId": self._run_id},
                    self._settings.request_timeout_seconds,
                )

    async def close(self) -> None:
        """Close the connection; the gateway's run is not touched. Idempotent."""
        self._gate.closed = True
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    # The turn

    async def _run_turn(self, turn: TurnInput, emit: EventSink) -> TurnResult:
        self._aborted = False
        self._follow_ups, self._answers = [], {}
        try:
            settings = GatewaySettings.from_config(turn.config)
            profile = GatewayProfile.parse(tuple(self._context.command) or DEFAULT_PROFILE)
        except (ConfigError, ProfileError) as exc:
            raise TurnAborted(ErrorCode.INVALID_CONFIG, str(exc)) from None
        self._settings = settings
        self._run_id = request_id(turn)
        # A session to resume is the conversation of an earlier turn: its session key.
        self._session_key = turn.session_ref or settings.session_key_for(turn.run_id, turn.issue_id)
        params: dict[str, Any] = {
            "message": turn.prompt,
            "idempotencyKey": self._run_id,
            "sessionKey": self._session_key,
        }
        if turn.system:
            params["extraSystemPrompt"] = turn.system
        if settings.agent_id is not None:
            params["agentId"] = settings.agent_id
        async with self._tools(profile, turn):
            limit = asyncio.timeout(settings.turn_timeout_seconds)
            try:
                async with limit:
                    final = await self._until_final(profile, params, emit, settings)
                    await self._usage.send(run_usage(final, self._run_id))
                    final = await self._follow_ups_done(final, emit, settings)
            except TimeoutError:
                if not limit.expired():
                    raise
                await self._abort_runs()
                raise TurnAborted(
                    ErrorCode.TURN_TIMEOUT,
                    f"the turn took longer than {settings.turn_timeout_seconds:g}s and was aborted",
                ) from None
        return self._result(final)

    async def _abort_runs(self) -> None:
        """``sessions.abort`` for each gateway run of this turn still going (a timed-out turn)."""
        connection = self._connection
        if connection is None or connection.closed.is_set():
            return
        for run_id in sorted(self._run_ids()):
            with contextlib.suppress(GatewayError):
                await connection.request(
                    "sessions.abort",
                    {"key": self._session_key, "runId": run_id},
                    self._settings.request_timeout_seconds,
                )

    async def _follow_ups_done(
        self, final: Mapping[str, Any], emit: EventSink, settings: GatewaySettings
    ) -> Mapping[str, Any]:
        """Wait for the follow-ups queued during the turn; the last one's end is the turn's."""
        done = 0
        while done < len(self._follow_ups) and final.get("status") == "ok" and not self._aborted:
            run_id = self._follow_ups[done]
            final = await self._await_run(run_id, emit, settings)
            await self._usage.send(run_usage(final, run_id))
            done += 1
        return final

    async def _await_run(
        self, run_id: str, emit: EventSink, settings: GatewaySettings
    ) -> Mapping[str, Any]:
        """One gateway run of this turn's end, its events emitted meanwhile: its request's
        final answer, or ``agent.wait``'s if the connection it was asked on is gone."""
        connection, answers = self._answers.get(run_id, (None, None))
        if connection is not None and answers is not None and connection is self._connection:
            try:
                final = await self._follow(connection, answers, emit, False)
            except GatewayError as exc:
                raise TurnAborted(ErrorCode.AGENT_FAILED, f"follow-up {run_id}: {exc}") from None
            if final is not None:
                return final
        while True:
            connection = self._connection
            if connection is None or connection.closed.is_set():
                raise TurnAborted(ErrorCode.CONNECT_FAILED, "the gateway connection was lost")
            waiter = asyncio.ensure_future(
                connection.request(
                    "agent.wait",
                    {"runId": run_id, "timeoutMs": WAIT_SLICE_MS},
                    WAIT_SLICE_MS / 1000 + settings.request_timeout_seconds,
                )
            )
            try:
                while not waiter.done():
                    getter = asyncio.ensure_future(connection.events.get())
                    await asyncio.wait({getter, waiter}, return_when=asyncio.FIRST_COMPLETED)
                    if not getter.done():
                        getter.cancel()
                        continue
                    frame = getter.result()
                    event = _event_of(frame, self._run_ids()) if frame is not None else None
                    if event is not None:
                        await emit(event)
                waited = waiter.result()
            except GatewayError as exc:
                raise TurnAborted(ErrorCode.AGENT_FAILED, f"follow-up {run_id}: {exc}") from None
            finally:
                waiter.cancel()
            if waited.get("status") in ("ok", "error"):
                return waited
            await _pause_if_queued(waited)

    async def _report_session(self) -> None:
        """The session key, durable once the gateway accepted the turn's request: a turn
        lost with its runner goes on in the same session."""
        if self._context.report_session is not None and self._session_key is not None:
            await self._context.report_session(self._session_key)

    def _run_ids(self) -> set[str]:
        return {r for r in (self._run_id, *self._follow_ups) if r is not None}

    @asynccontextmanager
    async def _tools(self, profile: GatewayProfile, turn: TurnInput) -> AsyncIterator[None]:
        if turn.mcp is None or profile.tools_listen is None:
            yield
            return
        secret = profile.secret(profile.tools_token_env)
        if secret is None:
            raise TurnAborted(
                ErrorCode.INVALID_CONFIG,
                f"the runner's {profile.tools_token_env} is not set: the gateway cannot reach the run's tools",
            )
        try:
            async with relay.seat(profile.tools_listen, secret, turn.mcp):
                yield
        except OSError as exc:
            raise TurnAborted(
                ErrorCode.TOOLS_UNAVAILABLE, f"cannot serve the run's tools: {exc}"
            ) from None

    async def _until_final(
        self,
        profile: GatewayProfile,
        params: Mapping[str, Any],
        emit: EventSink,
        settings: GatewaySettings,
    ) -> Mapping[str, Any]:
        """The agent run's final answer; a lost connection is reconnected and the request
        sent again with the same idempotency key (the gateway answers with the same run).
        A request refused because other work took the session as it started is sent again
        under a key of its own (see :func:`_session_taken`) while the turn may go on."""
        reconnected = False
        key, retries = params["idempotencyKey"], 0
        while True:
            connection = await self._connect(profile, settings)
            try:
                answers = await connection.send("agent", params)
                first = await connection.next_answer(answers, settings.request_timeout_seconds)
                await self._report_session()
                if _is_final(first):
                    return first
                # A key the gateway already has (sent before a reconnect, or by the driver of
                # a lost runner) is answered ``in_flight`` once and never again: ask its end.
                waits = reconnected or first.get("status") == "in_flight"
                if first.get("status") == "in_flight":
                    logger.info(
                        "gateway run %s is already going: asking for its end", first.get("runId")
                    )
                final = await self._follow(connection, answers, emit, waits)
                if final is not None:
                    return final
            except GatewayError as exc:
                if _session_taken(exc):
                    # Nothing of this request ran, and the gateway keeps its key's refusal:
                    # the same request again needs a key of its own. What took the session
                    # (OpenClaw's own recovery run) may work for minutes: the turn's timeout
                    # bounds the tries, paced so that a long one costs few.
                    retries += 1
                    self._run_id = f"{key}:retry:{retries}"
                    params = {**params, "idempotencyKey": self._run_id}
                    logger.info("the gateway's session was taken as run %s started: %s", key, exc)
                    reconnected = False
                    await asyncio.sleep(min(RETRY_PAUSE_SECONDS * 2 ** (retries - 1), TAKEN_PAUSE))
                    continue
                if not exc.retryable:
                    raise TurnAborted(ErrorCode.AGENT_REFUSED, str(exc)) from None
                logger.info(
                    "gateway connection lost during run %s: %s", params["idempotencyKey"], exc
                )
            reconnected = True
            await self._drop()

    async def _follow(
        self,
        connection: GatewayConnection,
        answers: asyncio.Queue[Mapping[str, Any]],
        emit: EventSink,
        reconnected: bool,
    ) -> Mapping[str, Any] | None:
        """Emit this run's events until its final answer; None if the connection was lost."""
        waiter = asyncio.ensure_future(self._wait(connection, answers, reconnected))
        getter: asyncio.Future[Mapping[str, Any] | None] | None = None
        try:
            while True:
                getter = asyncio.ensure_future(connection.events.get())
                done, _ = await asyncio.wait({getter, waiter}, return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:
                    getter.cancel()
                else:
                    frame = getter.result()
                    if frame is None:
                        return None
                    event = _event_of(frame, self._run_ids())
                    if event is not None:
                        await emit(event)
                if waiter in done:
                    # Events that came before the answer on the wire are already queued.
                    while not connection.events.empty():
                        frame = connection.events.get_nowait()
                        event = _event_of(frame, self._run_ids()) if frame is not None else None
                        if event is not None:
                            await emit(event)
                    return waiter.result()
        finally:
            if getter is not None:
                getter.cancel()  # a turn ended by its timeout must not leave a reader behind
            waiter.cancel()
            with contextlib.suppress(asyncio.CancelledError, GatewayError):
                await waiter

    async def _wait(
        self,
        connection: GatewayConnection,
        answers: asyncio.Queue[Mapping[str, Any]],
        reconnected: bool,
    ) -> Mapping[str, Any] | None:
        if not reconnected:
            try:
                return await connection.next_answer(answers, None)
            except GatewayError as exc:
                if exc.retryable:
                    return None
                raise
        # A request sent again after a reconnect: its first answer may be the last one.
        while True:
            try:
                waited = await connection.request(
                    "agent.wait",
                    {"runId": self._run_id, "timeoutMs": WAIT_SLICE_MS},
                    WAIT_SLICE_MS / 1000 + self._settings.request_timeout_seconds,
                )
            except GatewayError as exc:
                if exc.retryable:
                    return None
                raise
            if waited.get("status") in ("ok", "error"):
                return waited
            await _pause_if_queued(waited)

    async def _connect(
        self, profile: GatewayProfile, settings: GatewaySettings
    ) -> GatewayConnection:
        if self._connection is not None and not self._connection.closed.is_set():
            return self._connection
        credentials = Credentials(
            token=profile.secret(profile.token_env), password=profile.secret(profile.password_env)
        )
        give_up = time.monotonic() + settings.reconnect_seconds
        while True:
            if self._gate.closed:
                raise TurnAborted(ErrorCode.DRIVER_CLOSED, "the driver was closed")
            try:
                self._connection = await GatewayConnection.open(
                    profile.url,
                    credentials,
                    self._device(profile),
                    wait_seconds=settings.request_timeout_seconds,
                )
                return self._connection
            except GatewayError as exc:
                if not exc.retryable or time.monotonic() > give_up:
                    raise TurnAborted(ErrorCode.CONNECT_FAILED, f"{profile.url}: {exc}") from None
                await asyncio.sleep(RETRY_PAUSE_SECONDS)

    def _device(self, profile: GatewayProfile) -> DeviceIdentity:
        if self._identity is None:
            self._identity = (
                DeviceIdentity.from_file(profile.device_key)
                if profile.device_key is not None
                else DeviceIdentity.ephemeral()
            )
        return self._identity

    async def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    def _result(self, final: Mapping[str, Any]) -> TurnResult:
        status = final.get("status")
        session = self._session_key
        if self._aborted or dig(final, "result", "meta", "aborted") is True:
            return TurnResult("interrupted", session_ref=session)
        if status == "ok":
            return TurnResult("completed", session_ref=session, answer=_answer(final))
        message = final.get("error") or final.get("summary") or f"the agent run ended {status!r}"
        if isinstance(message, Mapping):
            message = message.get("message") or str(message)
        return failed(session, ErrorCode.AGENT_FAILED, str(message))


def _event_of(frame: Mapping[str, Any], run_ids: set[str]) -> ProviderEvent | None:
    """This turn's ``agent`` events (``agent.<stream>``) and final ``chat``; nothing else."""
    payload = frame.get("payload")
    if not isinstance(payload, Mapping) or payload.get("runId") not in run_ids:
        return None
    if frame.get("event") == "agent":
        return ProviderEvent(f"agent.{payload.get('stream')}", payload)
    if frame.get("event") == "chat" and payload.get("state") in ("final", "error", "aborted"):
        return ProviderEvent(f"chat.{payload.get('state')}", payload)
    return None


async def _pause_if_queued(waited: Mapping[str, Any]) -> None:
    """OpenClaw answers ``agent.wait`` for a run queued behind another at once (``pending``):
    a pause before asking again, rather than asking in a tight loop."""
    if waited.get("status") == "pending":
        await asyncio.sleep(RETRY_PAUSE_SECONDS)


SESSION_TAKEN = "SESSION_WORK_START_CHANGED"
"""OpenClaw's refusal of a request whose session other work took as it was starting ("changed
while starting work. Retry."). After a restart OpenClaw resumes a session it had running by
itself (its main-session restart recovery), which races the restart continuation's request."""


def _session_taken(exc: GatewayError) -> bool:
    # OpenClaw says it with code UNAVAILABLE, the reason's code appended to the message.
    return SESSION_TAKEN in exc.code or SESSION_TAKEN in exc.message


def _is_final(answer: Mapping[str, Any]) -> bool:
    return answer.get("status") not in (None, "accepted", "started", "in_flight")


def _answer(final: Mapping[str, Any]) -> str | None:
    payloads = dig(final, "result", "payloads")
    if isinstance(payloads, list):
        texts = [str(p.get("text")) for p in payloads if isinstance(p, Mapping) and p.get("text")]
        if texts:
            return texts[-1].strip() or None
    reply = dig(final, "terminalReply", "text")
    return reply.strip() or None if isinstance(reply, str) else None


def request_id(turn: TurnInput) -> str:
    """The ``agent`` request's idempotency key: the run id for a turn that starts a session;
    a turn that goes on in one (a restart continuation) gets its own, from its prompt. The
    same key again is the same gateway run: OpenClaw answers a continuation sent with the
    lost turn's key with that turn's run (``in_flight``), and its prompt never runs."""
    if turn.session_ref is None:
        return turn.run_id
    digest = hashlib.sha256(turn.prompt.encode()).hexdigest()[:16]
    return f"{turn.run_id}:turn:{digest}"
