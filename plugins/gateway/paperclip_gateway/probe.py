"""Is the gateway of a profile reachable from this runner? (``paperclip doctor``.)

Opens a TCP connection to the gateway's host and port and closes it: no
handshake, no session.
"""

from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Sequence

from paperclip_hookspecs.providers import ProviderProbe

from paperclip_gateway.config import SUPPORTED_GATEWAY
from paperclip_gateway.profile import GatewayProfile, ProfileError

PROBE_TIMEOUT_SECONDS = 3.0
START_COMMAND = "openclaw gateway run"
SETUP_HINT = (
    "Install OpenClaw {version} (npm, on Node 24), write its ~/.openclaw/openclaw.json "
    '(gateway.mode "local" and token auth, your model provider, mcp.servers.paperclip at this '
    "runner's tool relay, the heartbeat and cron off), start it with `" + START_COMMAND + "`, "
    "and give the runner the variables its profile names: docs/providers/gateway.md, "
    '"Setting it up, step by step".'
)


def probe(command: Sequence[str]) -> ProviderProbe:
    try:
        profile = GatewayProfile.parse(command)
    except ProfileError as exc:
        return ProviderProbe(found=False, hint=str(exc))
    parsed = urllib.parse.urlsplit(profile.url)
    host = parsed.hostname or ""
    port = parsed.port or (443 if parsed.scheme == "wss" else 80)
    hint = SETUP_HINT.format(version=SUPPORTED_GATEWAY)
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_SECONDS):
            pass
    except OSError as exc:
        return ProviderProbe(
            found=False, path=profile.url, hint=f"{profile.url} is not reachable ({exc}). {hint}"
        )
    missing = [
        v for v in (profile.token_env, profile.tools_token_env) if v and not profile.secret(v)
    ]
    if missing:
        hint = f"the runner's {', '.join(missing)} is not set. {hint}"
    return ProviderProbe(found=True, path=profile.url, hint=hint)
