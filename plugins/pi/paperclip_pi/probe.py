"""Is the Pi CLI installed here, and which version? (``paperclip doctor``.)"""

from __future__ import annotations

from paperclip_provider_kit.probe import CliProbe

from paperclip_pi.config import SUPPORTED_CLI

CLI = CliProbe(
    plugin="pi",
    title="Pi",
    npm_package="@mariozechner/pi-coding-agent",
    supported=SUPPORTED_CLI,
    # A throwaway agent folder, offline: ``--version`` writes nothing and reaches nobody.
    home_env=lambda home: {"PI_CODING_AGENT_DIR": home, "PI_OFFLINE": "1"},
    runtime=" (Node 20 or newer)",
)
probe = CLI.probe
install_hint = CLI.install_hint
