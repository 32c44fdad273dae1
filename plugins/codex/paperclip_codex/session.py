"""One ``codex app-server`` process as a driver holds it: how it was launched, and its start."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperclip_hookspecs.providers import TurnInput
from paperclip_provider_kit.errors import ErrorCode, TurnAborted

from paperclip_codex import __version__
from paperclip_codex.channel import EventChannel
from paperclip_codex.config import (
    MCP_TOKEN_ENV_VAR,
    CodexSettings,
    flatten,
    mcp_overrides,
    override_args,
    write_config,
)
from paperclip_codex.jsonrpc import RequestHandler
from paperclip_codex.probe import install_hint
from paperclip_codex.process import AppServerProcess, SpawnError, reap_leftover, remember

logger = logging.getLogger(__name__)

EVENT_BUFFER = 1024
"""Provider messages buffered ahead of the event sink; beyond it the provider is made to wait."""
CLIENT_INFO = {"name": "paperclip", "title": "Paperclip", "version": __version__}
HIDDEN_ENV_PREFIX = "PAPERCLIP_"
"""The runner's own settings and secrets (its credential among them) never reach the
provider process, whose model can read its environment through the shell."""


@dataclass(frozen=True, slots=True)
class Launch:
    """What a provider process was started with; a turn that needs another one restarts it."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    codex_home: str

    @classmethod
    def for_turn(
        cls,
        command: Sequence[str],
        state_dir: str,
        env: Mapping[str, str],
        turn: TurnInput,
        settings: CodexSettings,
    ) -> Launch:
        """The launch ``turn`` needs: the runner's command, our overrides, ``CODEX_HOME``."""
        home = os.path.join(state_dir, "codex-home")
        pairs = list(settings.config_overrides)
        launch_env = {**env, "CODEX_HOME": home}
        if turn.mcp is not None:
            mcp = mcp_overrides(turn.mcp, settings.mcp_tool_timeout_seconds, settings.tool_approval)
            pairs = mcp + pairs
            launch_env[MCP_TOKEN_ENV_VAR] = turn.mcp.bearer_token
        argv = (*command, *override_args(pairs))
        return cls(argv=argv, env=tuple(sorted(launch_env.items())), codex_home=home)


class Session:
    """A running provider process with its event channel and what it has loaded."""

    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        self.channel = EventChannel(EVENT_BUFFER)
        self.process: AppServerProcess | None = None
        self.thread_id: str | None = None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.connection.closed_reason is None

    async def initialize(self, wait_seconds: float) -> None:
        """The app-server's handshake: ``initialize``, then ``initialized``."""
        assert self.process is not None
        connection = self.process.connection
        await connection.request(
            "initialize",
            {"clientInfo": CLIENT_INFO, "capabilities": {"experimentalApi": False}},
            wait_seconds=wait_seconds,
        )
        await connection.notify("initialized")


async def spawn(
    launch: Launch,
    settings: CodexSettings,
    *,
    command: Sequence[str],
    state_dir: str,
    cwd: str,
    on_request: RequestHandler,
    base_env: Mapping[str, str] | None = None,
    user: Any = None,
) -> Session:
    """Write ``CODEX_HOME``'s config and start the app-server, not yet initialized.

    ``base_env`` is the runner's environment for the process (``DriverContext.process_env``,
    hook API 1.9; None: this process's, without ``PAPERCLIP_*``); ``user``, the
    ``DriverContext.user`` it runs as, who then owns ``CODEX_HOME``. Raises
    :class:`TurnAborted` (``spawn_failed``) when it cannot start. A process an earlier
    runner left running in ``state_dir`` is stopped first.
    """
    home = Path(launch.codex_home)
    argv = launch.argv
    try:
        if not write_config(home, settings.config_document()):
            # Someone else's config.toml: ours rides on the command line, which wins.
            argv = (
                *command,
                *override_args(flatten(settings.config_document())),
                *argv[len(command) :],
            )
        if user is not None:
            user.give(str(home))
    except OSError as exc:
        raise TurnAborted(
            ErrorCode.SPAWN_FAILED, f"cannot prepare CODEX_HOME {home}: {exc}"
        ) from None
    session = Session(launch)
    if base_env is None:
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(HIDDEN_ENV_PREFIX)}
    env = {**base_env, **dict(launch.env)}
    if (left := reap_leftover(state_dir)) is not None:
        logger.warning("stopped the app-server an earlier runner left running (group %s)", left)
    try:
        session.process = await AppServerProcess.spawn(
            argv,
            env=env,
            cwd=cwd,
            on_message=session.channel.put,
            on_request=on_request,
            on_close=session.channel.end,
            user=user,
        )
    except SpawnError as exc:
        message = str(exc)
        if exc.missing:
            message += f". {install_hint(argv[0])}"
        raise TurnAborted(ErrorCode.SPAWN_FAILED, message) from None
    remember(state_dir, session.process.pid)
    return session
