"""The Pi provider driver: one ``pi --mode rpc`` per run, one ``prompt`` per turn.

A turn sends ``prompt`` and passes Pi's events to the sink until
``agent_end``; the answer is the last assistant message's text. The run's
tools reach the model through the bundled extension (``-e``), which reads the
MCP endpoint from the environment; the standing rules are appended to Pi's own
system prompt (``--append-system-prompt <file>``). ``steer`` is Pi's
``steer``: delivered after the running step's tool calls, before the model's
next call, in the same turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paperclip_hookspecs.providers import ProviderEvent, TurnResult
from paperclip_provider_kit.config import write_atomic
from paperclip_provider_kit.errors import ErrorCode, TurnAborted
from paperclip_provider_kit.turns import TurnGate, failed

from paperclip_pi.config import (
    DEFAULT_COMMAND,
    EXTENSION,
    FIXED_FLAGS,
    MCP_TOKEN_ENV_VAR,
    MCP_URL_ENV_VAR,
    OFFLINE_ENV,
    ConfigError,
    PiSettings,
)
from paperclip_pi.probe import install_hint
from paperclip_pi.rpc import CommandFailed, RpcProcess, SpawnError
from paperclip_pi.usage import UsageReports, message_usage

if TYPE_CHECKING:
    from paperclip_hookspecs.providers import DriverContext, EventSink, TurnInput

logger = logging.getLogger(__name__)

HIDDEN_ENV_PREFIX = "PAPERCLIP_"
"""The runner's own settings and secrets never reach Pi, whose model has a shell."""


@dataclass(frozen=True, slots=True)
class _Launch:
    """What a process was started with; a turn that needs another one restarts it."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    files: tuple[tuple[str, str], ...]
    """Pi's configuration files (path, content) as this launch wrote them."""


class PiDriver:
    """Drives ``pi --mode rpc`` for one run (see :class:`ProviderDriver`)."""

    def __init__(self, context: DriverContext) -> None:
        self._context = context
        self._process: RpcProcess | None = None
        self._launch: _Launch | None = None
        self._session: str | None = None
        self._settings = PiSettings()
        self._usage = UsageReports(context)
        self._gate = TurnGate()
        self._aborted = False

    @property
    def command(self) -> tuple[str, ...]:
        """The runner's launch profile; never a command from the agent's config."""
        return tuple(self._context.command) or DEFAULT_COMMAND

    # ProviderDriver

    async def run_turn(self, turn: TurnInput, emit: EventSink) -> TurnResult:
        """Run one prompt to ``agent_end``; Pi's events go to ``emit`` in order."""
        return await self._gate.run(
            turn.session_ref, lambda: self._run_turn(turn, emit), lambda: self._session
        )

    async def steer(self, message_id: str, text: str) -> bool:
        """Pi's ``steer``: read by the model before its next call in this turn."""
        process = self._process
        if not self._gate.running or process is None:
            return False
        try:
            await process.command("steer", self._settings.request_timeout_seconds, message=text)
        except CommandFailed as exc:
            logger.info("steer %s was not accepted: %s", message_id, exc)
            return False
        return True

    async def interrupt(self) -> None:
        """Pi's ``abort``; the turn then ends ``interrupted``."""
        process = self._process
        if self._gate.running and process is not None:
            self._aborted = True
            with contextlib.suppress(CommandFailed):
                await process.command("abort", self._settings.request_timeout_seconds)

    async def close(self) -> None:
        """Stop Pi (SIGTERM, then SIGKILL). Idempotent."""
        self._gate.closed = True
        await self._stop()

    # The turn

    async def _run_turn(self, turn: TurnInput, emit: EventSink) -> TurnResult:
        self._aborted = False
        try:
            settings = PiSettings.from_config(turn.config)
        except ConfigError as exc:
            raise TurnAborted(ErrorCode.INVALID_CONFIG, str(exc)) from None
        self._settings = settings
        process = await self._ensure_process(turn, settings)
        try:
            await process.command("prompt", settings.request_timeout_seconds, message=turn.prompt)
        except CommandFailed as exc:
            raise TurnAborted(ErrorCode.PROMPT_FAILED, str(exc)) from None
        # Hook API 1.3 and later: durable at the runner while the turn runs, so a lost
        # turn resumes this session file. Under 1.2 it is known when the turn ends.
        report_session = getattr(self._context, "report_session", None)
        if self._session is not None and report_session is not None:
            await report_session(self._session)
        last = await self._follow(process, emit, settings)
        session = self._session
        with contextlib.suppress(CommandFailed):
            state = await process.command("get_state", settings.request_timeout_seconds)
            session = _session_id(state) or session
        self._session = session
        reason = last.get("stopReason") if last else None
        if self._aborted or reason == "aborted":
            return TurnResult("interrupted", session_ref=session)
        if reason == "error":
            message = str(last.get("errorMessage") or "the model call failed") if last else ""
            return failed(session, ErrorCode.TURN_FAILED, message)
        return TurnResult("completed", session_ref=session, answer=_answer(last))

    async def _follow(
        self, process: RpcProcess, emit: EventSink, settings: PiSettings
    ) -> Mapping[str, Any] | None:
        """Emit events until ``agent_end``; the last assistant message."""
        limit = settings.turn_timeout_seconds
        deadline = None if limit is None else time.monotonic() + limit
        timed_out = False
        last: Mapping[str, Any] | None = None
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                event = await asyncio.wait_for(process.events.get(), wait)
            except TimeoutError:
                if timed_out:
                    await self._stop()  # wedged: a fresh process next turn
                    raise TurnAborted(
                        ErrorCode.TURN_TIMEOUT,
                        f"the turn did not end within {limit:g}s, nor after an abort",
                    ) from None
                timed_out = True
                with contextlib.suppress(CommandFailed):
                    await process.command("abort", settings.request_timeout_seconds)
                deadline = time.monotonic() + settings.request_timeout_seconds
                continue
            if event is None:
                detail = await process.exit_description()
                await self._stop()
                raise TurnAborted(ErrorCode.PROVIDER_EXITED, detail)
            kind = str(event.get("type"))
            await emit(ProviderEvent(kind, _slim(event)))
            message = event.get("message")
            if (
                kind == "message_end"
                and isinstance(message, Mapping)
                and message.get("role") == "assistant"
            ):
                last = message
                await self._usage.send(message_usage(message))
            if kind == "agent_end":
                if timed_out:
                    raise TurnAborted(
                        ErrorCode.TURN_TIMEOUT, f"the turn exceeded {limit:g}s and was aborted"
                    )
                return last

    # The process

    def _launch_for(self, turn: TurnInput, settings: PiSettings) -> _Launch:
        root = Path(self._context.state_dir) / "pi"
        agent_dir = root / "agent"
        argv = [*self.command, *FIXED_FLAGS, "--session-dir", str(root / "sessions")]
        env = {**self._context.env, **OFFLINE_ENV, "PI_CODING_AGENT_DIR": str(agent_dir)}
        files = [
            (str(agent_dir / "models.json"), settings.models_document()),
            (str(agent_dir / "settings.json"), settings.settings_document()),
        ]
        if turn.mcp is not None:
            argv += ["-e", str(EXTENSION)]
            env[MCP_URL_ENV_VAR] = turn.mcp.url
            env[MCP_TOKEN_ENV_VAR] = turn.mcp.bearer_token
        if turn.system:
            # Appended to Pi's own prompt (its tools and conventions stay); a file,
            # so the rules never show in the process list.
            system = root / "system.md"
            argv += ["--append-system-prompt", str(system)]
            files.append((str(system), turn.system))
        if turn.session_ref is not None:
            argv += ["--session", turn.session_ref]
        return _Launch(
            argv=tuple(argv),
            env=tuple(sorted(env.items())),
            files=tuple((path, _text(doc)) for path, doc in files),
        )

    async def _ensure_process(self, turn: TurnInput, settings: PiSettings) -> RpcProcess:
        launch = self._launch_for(turn, settings)
        if self._process is not None and self._process.alive:
            same_session = turn.session_ref in (None, self._session)
            if (
                same_session
                and self._launch is not None
                and _same_but_session(self._launch, launch)
            ):
                return self._process
        await self._stop()
        if self._gate.closed:
            raise TurnAborted(ErrorCode.DRIVER_CLOSED, "the driver was closed")
        try:
            for path, content in launch.files:
                _write(Path(path), content)
        except OSError as exc:
            raise TurnAborted(
                ErrorCode.SPAWN_FAILED, f"cannot write Pi's configuration: {exc}"
            ) from None
        # The runner's allowlisted environment (hook API 1.9), or ours without its secrets.
        base = getattr(self._context, "process_env", None)
        if base is None:
            base = {k: v for k, v in os.environ.items() if not k.startswith(HIDDEN_ENV_PREFIX)}
        user = getattr(self._context, "user", None)
        try:
            if user is not None:
                _give_pi_folder(Path(self._context.state_dir) / "pi", user)
            process = await RpcProcess.spawn(
                launch.argv, env={**base, **dict(launch.env)}, cwd=turn.cwd, user=user
            )
        except OSError as exc:
            raise TurnAborted(ErrorCode.SPAWN_FAILED, f"cannot give Pi its folder: {exc}") from None
        except SpawnError as exc:
            message = str(exc) + (f". {install_hint(launch.argv[0])}" if exc.missing else "")
            raise TurnAborted(ErrorCode.SPAWN_FAILED, message) from None
        self._process, self._launch = process, launch
        try:
            state = await process.command("get_state", settings.request_timeout_seconds)
        except CommandFailed as exc:
            detail = await process.exit_description()
            await self._stop()
            code = ErrorCode.RESUME_FAILED if turn.session_ref else ErrorCode.STARTUP_FAILED
            if turn.session_ref and settings.resume_fallback == "fresh":
                logger.warning(
                    "session %s could not be resumed (%s); starting afresh", turn.session_ref, exc
                )
                return await self._ensure_process(_without_session(turn), settings)
            raise TurnAborted(code, f"{exc}; {detail}") from None
        self._session = _session_id(state)
        if turn.session_ref and self._session != turn.session_ref:
            if settings.resume_fallback != "fresh":
                await self._stop()
                raise TurnAborted(
                    ErrorCode.RESUME_FAILED, f"session {turn.session_ref} could not be resumed"
                )
            logger.warning("session %s was not resumed; a fresh one is used", turn.session_ref)
        return process

    async def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            await process.terminate(self._settings.close_timeout_seconds)


def _slim(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """The event as stored: a streaming update keeps its delta, not the whole message
    repeated (Pi sends the partial message with every token)."""
    if event.get("type") != "message_update":
        return event
    slim = {k: v for k, v in event.items() if k != "message"}
    update = event.get("assistantMessageEvent")
    if isinstance(update, Mapping):
        slim["assistantMessageEvent"] = {k: v for k, v in update.items() if k != "partial"}
    return slim


def _answer(message: Mapping[str, Any] | None) -> str | None:
    if message is None:
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content.strip() or None
    texts = [
        str(part.get("text", ""))
        for part in content or []
        if isinstance(part, Mapping) and part.get("type") == "text"
    ]
    return "".join(texts).strip() or None


def _session_id(response: Mapping[str, Any]) -> str | None:
    data = response.get("data")
    value = data.get("sessionId") if isinstance(data, Mapping) else None
    return value if isinstance(value, str) else None


def _same_but_session(old: _Launch, new: _Launch) -> bool:
    """The same process serves a turn that differs only in asking for its own session."""
    strip = _argv_without_session
    return (strip(old.argv), old.env, old.files) == (strip(new.argv), new.env, new.files)


def _argv_without_session(argv: tuple[str, ...]) -> tuple[str, ...]:
    if "--session" in argv:
        index = argv.index("--session")
        return argv[:index] + argv[index + 2 :]
    return argv


def _without_session(turn: TurnInput) -> TurnInput:
    return replace(turn, session_ref=None)


def _text(doc: Any) -> str:
    return doc if isinstance(doc, str) else json.dumps(doc, indent=1)


def _give_pi_folder(root: Path, user: Any) -> None:
    """Pi's folders (its agent folder, its sessions) and the files we wrote for it are its
    user's; ``root`` stays ours, so no folder we write into again can be swapped for a link."""
    for name in ("agent", "sessions"):
        (root / name).mkdir(parents=True, exist_ok=True)
        user.give(str(root / name))
    for entry in root.iterdir():
        if entry.is_file() and not entry.is_symlink():
            os.chown(entry, user.uid, user.gid, follow_symlinks=False)


def _write(path: Path, content: str) -> None:
    # A fresh name (O_EXCL), never one the provider's user could have put a link at.
    write_atomic(path, content)
