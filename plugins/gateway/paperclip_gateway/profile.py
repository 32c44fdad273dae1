"""A gateway launch profile: which gateway this runner reaches, and with which credentials.

There is no process to start: a profile is the gateway's URL followed by
options, all decided by the runner host (``PAPERCLIP_RUNNER_LAUNCH``), never by
an agent's config::

    ws://127.0.0.1:18789 --token-env OPENCLAW_GATEWAY_TOKEN
        --tools-listen 127.0.0.1:18790 --tools-token-env OPENCLAW_TOOLS_TOKEN
        [--password-env VAR] [--device-key PATH]

- ``--token-env`` / ``--password-env``: the runner's variable holding the
  gateway's shared token or password (``connect.params.auth``).
- ``--tools-listen HOST:PORT``: where the runner serves the run's tools to the
  gateway (the gateway's ``mcp.servers.paperclip.url`` points there, ``/mcp``).
- ``--tools-token-env``: the runner's variable holding the secret the gateway
  presents there (``Authorization: Bearer``).
- ``--device-key PATH``: keep the device identity in this file (a remote
  gateway pairs a device once); without it each connection has a new one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PROFILE: tuple[str, ...] = (
    "ws://127.0.0.1:18789",
    "--token-env",
    "OPENCLAW_GATEWAY_TOKEN",
    "--tools-listen",
    "127.0.0.1:18790",
    "--tools-token-env",
    "OPENCLAW_TOOLS_TOKEN",
)
_URL = re.compile(r"^wss?://[^\s/]+(/\S*)?$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_LISTEN = re.compile(r"^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$")
_OPTIONS = {"--token-env", "--password-env", "--tools-listen", "--tools-token-env", "--device-key"}


class ProfileError(ValueError):
    """The launch profile is not a gateway profile; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class GatewayProfile:
    url: str
    token_env: str | None = None
    password_env: str | None = None
    tools_listen: tuple[str, int] | None = None
    tools_token_env: str | None = None
    device_key: Path | None = None

    @classmethod
    def parse(cls, argv: Sequence[str]) -> GatewayProfile:
        if not argv or not _URL.match(argv[0]):
            raise ProfileError(
                "a gateway launch profile starts with the gateway's ws:// or wss:// URL"
            )
        options: dict[str, str] = {}
        rest = list(argv[1:])
        while rest:
            flag = rest.pop(0)
            if flag not in _OPTIONS or not rest:
                raise ProfileError(f"unknown or incomplete gateway profile option {flag!r}")
            options[flag] = rest.pop(0)
        for flag in ("--token-env", "--password-env", "--tools-token-env"):
            if flag in options and not _ENV.match(options[flag]):
                raise ProfileError(f"{flag} names an environment variable: {options[flag]!r}")
        listen = None
        if "--tools-listen" in options:
            match = _LISTEN.match(options["--tools-listen"])
            if match is None or not 0 < int(match.group(2)) < 65536:
                raise ProfileError("--tools-listen is HOST:PORT, e.g. 127.0.0.1:18790")
            listen = (match.group(1).strip("[]"), int(match.group(2)))
        if listen is not None and "--tools-token-env" not in options:
            raise ProfileError(
                "--tools-listen needs --tools-token-env (the gateway's secret there)"
            )
        return cls(
            url=argv[0],
            token_env=options.get("--token-env"),
            password_env=options.get("--password-env"),
            tools_listen=listen,
            tools_token_env=options.get("--tools-token-env"),
            device_key=Path(options["--device-key"]) if "--device-key" in options else None,
        )

    def secret(self, variable: str | None, env: Mapping[str, str] | None = None) -> str | None:
        """The value of one of the profile's variables, in the runner's environment."""
        if variable is None:
            return None
        return (env if env is not None else os.environ).get(variable) or None
