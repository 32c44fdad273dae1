"""The OpenCode provider driver: one ``opencode serve`` per run, one prompt per turn.

A turn: subscribe to ``GET /event``, create the session (or find the one to
resume), send the prompt with the standing rules as its ``system`` text, then
pass this session's events to the sink until the session is idle with every
prompt answered (:mod:`paperclip_opencode.turn_state`). A steer is sent as
another prompt: OpenCode queues it after the running step (a follow-up),
still in this turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paperclip_hookspecs.providers import ProviderEvent, TurnResult
from paperclip_provider_kit.errors import ErrorCode, TurnAborted
from paperclip_provider_kit.turns import TurnGate, failed

from paperclip_opencode.api import PASSWORD_ENV_VAR, ApiError, OpenCodeApi
from paperclip_opencode.config import (
    DEFAULT_COMMAND,
    MCP_TOKEN_ENV_VAR,
    OFFLINE_ENV,
    ConfigError,
    OpenCodeSettings,
    write_config,
)
from paperclip_opencode.probe import install_hint
from paperclip_opencode.server import ServerProcess, SpawnError
from paperclip_opencode.turn_state import TurnTracker, session_of
from paperclip_opencode.usage import UsageReports, message_usage

if TYPE_CHECKING:
    from paperclip_hookspecs.providers import DriverContext, EventSink, TurnInput

logger = logging.getLogger(__name__)

HIDDEN_ENV_PREFIX = "PAPERCLIP_"
"""The runner's own settings and secrets never reach OpenCode, whose model has a shell."""
EVENT_BUFFER = 4096


@dataclass(frozen=True, slots=True)
class _Launch:
    """What a server was started with; a turn that needs another one restarts it."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    config: str


class _Server:
    """A running server, its API client and the events read from it."""

    def __init__(self, launch: _Launch, process: ServerProcess, api: OpenCodeApi) -> None:
        self.launch = launch
        self.process = process
        self.api = api
        self.events: asyncio.Queue[Mapping[str, Any] | None] = asyncio.Queue(EVENT_BUFFER)
        self.subscribed = asyncio.Event()
        self.reader: asyncio.Task[None] | None = None

    async def read_events(self) -> None:
        try:
            async for event in self.api.events():
                if event.get("type") == "server.connected":
                    self.subscribed.set()
                await self.events.put(event)
        except ApiError as exc:
            logger.info("opencode event stream ended: %s", exc)
        finally:
            await self.events.put(None)  # the stream ended: the server went away

    async def stop(self, grace: float) -> None:
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.reader
        await self.api.aclose()
        await self.process.terminate(grace)


class OpenCodeDriver:
    """Drives ``opencode serve`` for one run (see :class:`ProviderDriver`)."""

    def __init__(self, context: DriverContext) -> None:
        self._context = context
        self._server: _Server | None = None
        self._settings = OpenCodeSettings()
        self._tracker: TurnTracker | None = None
        self._usage = UsageReports(context)
        self._gate = TurnGate()

    @property
    def command(self) -> tuple[str, ...]:
        """The runner's launch profile; never a command from the agent's config."""
        return tuple(self._context.command) or DEFAULT_COMMAND

    # ProviderDriver

    async def run_turn(self, turn: TurnInput, emit: EventSink) -> TurnResult:
        """Run one prompt to its end; this session's events go to ``emit`` in order."""
        try:
            return await self._gate.run(
                turn.session_ref,
                lambda: self._run_turn(turn, emit),
                lambda: self._tracker.session_id if self._tracker else None,
            )
        finally:
            self._tracker = None

    async def steer(self, message_id: str, text: str) -> bool:
        """Queue ``text`` after the running step (OpenCode's follow-up); True once accepted."""
        server, tracker = self._server, self._tracker
        if not self._gate.running or server is None or tracker is None:
            return False
        tracker.prompts_sent += 1
        try:
            await server.api.prompt(tracker.session_id, text, model=self._settings.model_ref)
        except ApiError as exc:
            tracker.prompts_sent -= 1
            logger.info("steer %s was not accepted: %s", message_id, exc)
            return False
        return True

    async def interrupt(self) -> None:
        """Abort the running prompt; the turn then ends ``interrupted``."""
        server, tracker = self._server, self._tracker
        if server is not None and tracker is not None:
            tracker.aborted = True
            with contextlib.suppress(ApiError):
                await server.api.abort(tracker.session_id)

    async def close(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL). Idempotent."""
        self._gate.closed = True
        server, self._server = self._server, None
        if server is not None:
            await server.stop(self._settings.close_timeout_seconds)

    # The turn

    async def _run_turn(self, turn: TurnInput, emit: EventSink) -> TurnResult:
        try:
            settings = OpenCodeSettings.from_config(turn.config)
        except ConfigError as exc:
            raise TurnAborted(ErrorCode.INVALID_CONFIG, str(exc)) from None
        self._settings = settings
        server = await self._ensure_server(turn, settings)
        session_id = await self._open_session(server, turn, settings)
        tracker = TurnTracker(session_id, since_ms=time.time() * 1000 - 1000)
        self._tracker = tracker
        try:
            await server.api.prompt(
                session_id, turn.prompt, system=turn.system, model=settings.model_ref
            )
        except ApiError as exc:
            raise TurnAborted(ErrorCode.PROMPT_FAILED, str(exc)) from None
        # Hook API 1.3 and later: durable at the runner while the turn runs, so a lost
        # turn resumes this session. Under 1.2 the session is known when the turn ends.
        report_session = getattr(self._context, "report_session", None)
        if report_session is not None:
            await report_session(session_id)
        outcome = await self._follow(server, tracker, emit, settings)
        if outcome == "completed":
            return TurnResult("completed", session_ref=session_id, answer=tracker.answer)
        if outcome == "interrupted":
            return TurnResult("interrupted", session_ref=session_id)
        return failed(session_id, ErrorCode.TURN_FAILED, tracker.error or "the turn failed")

    async def _follow(
        self, server: _Server, tracker: TurnTracker, emit: EventSink, settings: OpenCodeSettings
    ) -> str:
        limit = settings.turn_timeout_seconds
        deadline = None if limit is None else time.monotonic() + limit
        timed_out = False
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                event = await asyncio.wait_for(server.events.get(), wait)
            except TimeoutError:
                if timed_out:  # not even the abort ended it: a fresh server next time
                    self._server = None
                    await server.stop(settings.close_timeout_seconds)
                    raise TurnAborted(
                        ErrorCode.TURN_TIMEOUT,
                        f"the turn did not end within {limit:g}s, nor after an abort",
                    ) from None
                timed_out = True
                await self.interrupt()
                deadline = time.monotonic() + settings.request_timeout_seconds
                continue
            if event is None:
                raise TurnAborted(
                    ErrorCode.PROVIDER_EXITED, await server.process.exit_description()
                )
            if session_of(event) != tracker.session_id:
                continue
            props = event.get("properties")
            await emit(
                ProviderEvent(str(event["type"]), props if isinstance(props, Mapping) else {})
            )
            outcome = tracker.feed(event)
            if event.get("type") == "message.updated":
                await self._report_usage(tracker, props)
            if outcome is not None:
                if timed_out:
                    raise TurnAborted(
                        ErrorCode.TURN_TIMEOUT, f"the turn exceeded {limit:g}s and was aborted"
                    )
                return outcome

    async def _report_usage(self, tracker: TurnTracker, props: Any) -> None:
        """A completed answer of this turn's prompts reports its usage (once per message)."""
        info = props.get("info") if isinstance(props, Mapping) else None
        # An older message of the session (updated again) was counted by its own turn.
        if isinstance(info, Mapping) and info.get("parentID") in tracker.users:
            await self._usage.send(message_usage(info))

    async def _open_session(
        self, server: _Server, turn: TurnInput, settings: OpenCodeSettings
    ) -> str:
        ref = turn.session_ref
        try:
            if ref is not None:
                if await server.api.get_session(ref) is not None:
                    await _drop_carried_follow_ups(server.api, ref, turn.prompt)
                    return ref
                if settings.resume_fallback != "fresh":
                    raise TurnAborted(
                        ErrorCode.RESUME_FAILED, f"session {ref} could not be resumed"
                    )
                logger.warning("session %s could not be resumed; starting a fresh one", ref)
            created = await server.api.create_session(f"Paperclip run {turn.run_id}")
        except ApiError as exc:
            raise TurnAborted(ErrorCode.SESSION_FAILED, str(exc)) from None
        session_id = created.get("id")
        if not isinstance(session_id, str):
            raise TurnAborted(ErrorCode.SESSION_FAILED, "POST /session returned no id")
        return session_id

    # The server

    def _launch_for(self, turn: TurnInput, settings: OpenCodeSettings) -> _Launch:
        root = Path(self._context.state_dir) / "opencode"
        env = {
            **self._context.env,
            **OFFLINE_ENV,
            "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_DATA_HOME": str(root / "data"),
            "XDG_CACHE_HOME": str(root / "cache"),
            "XDG_STATE_HOME": str(root / "state"),
        }
        if turn.mcp is not None:
            env[MCP_TOKEN_ENV_VAR] = turn.mcp.bearer_token
        config = json.dumps(settings.config_document(turn.mcp), sort_keys=True)
        return _Launch(argv=self.command, env=tuple(sorted(env.items())), config=config)

    async def _ensure_server(self, turn: TurnInput, settings: OpenCodeSettings) -> _Server:
        launch = self._launch_for(turn, settings)
        current = self._server
        if current is not None and current.process.alive and current.launch == launch:
            return current
        if current is not None:
            self._server = None
            await current.stop(settings.close_timeout_seconds)
        env = dict(launch.env)
        try:
            write_config(Path(env["XDG_CONFIG_HOME"]) / "opencode", json.loads(launch.config))
        except OSError as exc:
            raise TurnAborted(
                ErrorCode.SPAWN_FAILED, f"cannot write opencode.json: {exc}"
            ) from None
        password = secrets.token_urlsafe(24)
        # The runner's allowlisted environment (hook API 1.9), or ours without its secrets.
        base = getattr(self._context, "process_env", None)
        if base is None:
            base = {k: v for k, v in os.environ.items() if not k.startswith(HIDDEN_ENV_PREFIX)}
        full_env = {**base, **env, PASSWORD_ENV_VAR: password}
        user = getattr(self._context, "user", None)
        try:
            if user is not None:
                _give_opencode_folders(env, user)
            process = await ServerProcess.start(
                launch.argv,
                env=full_env,
                cwd=turn.cwd,
                startup_timeout=settings.startup_timeout_seconds,
                user=user,
            )
        except OSError as exc:
            raise TurnAborted(
                ErrorCode.SPAWN_FAILED, f"cannot give OpenCode its folders: {exc}"
            ) from None
        except SpawnError as exc:
            message = str(exc) + (f". {install_hint(launch.argv[0])}" if exc.missing else "")
            raise TurnAborted(ErrorCode.SPAWN_FAILED, message) from None
        server = _Server(
            launch, process, OpenCodeApi(process.url, password, settings.request_timeout_seconds)
        )
        self._server = server
        server.reader = asyncio.create_task(server.read_events(), name="opencode-events")
        try:
            await asyncio.wait_for(server.subscribed.wait(), settings.request_timeout_seconds)
        except TimeoutError:
            detail = await process.exit_description()
            self._server = None
            await server.stop(settings.close_timeout_seconds)
            raise TurnAborted(ErrorCode.STARTUP_FAILED, f"no event stream: {detail}") from None
        if self._gate.closed:
            await server.stop(settings.close_timeout_seconds)
            raise TurnAborted(ErrorCode.DRIVER_CLOSED, "the driver was closed")
        return server


async def _drop_carried_follow_ups(api: OpenCodeApi, session_id: str, prompt: str) -> None:
    """Remove the follow-ups a lost turn queued but never answered that ``prompt`` carries.

    OpenCode stores a queued follow-up as soon as it is accepted, and the steer ledger
    counts it unread until answered, so the continuation's prompt carries it again:
    left in the session, the model would be given it twice.
    """
    try:
        messages = await api.messages(session_id)
        answered = {
            (m.get("info") or {}).get("parentID")
            for m in messages
            if (m.get("info") or {}).get("role") == "assistant"
        }
        for message in messages:
            info = message.get("info") or {}
            if info.get("role") != "user" or info.get("id") in answered:
                continue
            text = "".join(
                str(p.get("text", ""))
                for p in message.get("parts") or []
                if isinstance(p, Mapping) and p.get("type") == "text"
            ).strip()
            if text and text in prompt:
                await api.delete_message(session_id, str(info["id"]))
    except ApiError as exc:
        # Kept: the model may read it twice, which is better than losing the turn.
        logger.warning("queued follow-ups of session %s not checked: %s", session_id, exc)


def _give_opencode_folders(env: Mapping[str, str], user: Any) -> None:
    """OpenCode's data, cache and state folders are its user's. Its configuration folder,
    which we write again at each start, stays ours (no link can be swapped in), its file
    given to it."""
    for name in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        Path(env[name]).mkdir(parents=True, exist_ok=True)
        user.give(env[name])
    config = Path(env["XDG_CONFIG_HOME"])
    for folder in (config.parent, config, config / "opencode"):
        os.chmod(folder, 0o755)
    os.chown(config / "opencode" / "opencode.json", user.uid, user.gid, follow_symlinks=False)
