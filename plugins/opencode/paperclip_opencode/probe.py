"""Is the OpenCode CLI installed here, and which version? (``paperclip doctor``.)"""

from __future__ import annotations

from paperclip_provider_kit.probe import CliProbe

from paperclip_opencode.config import SUPPORTED_CLI

CLI = CliProbe(
    plugin="opencode",
    title="OpenCode",
    npm_package="opencode-ai",
    supported=SUPPORTED_CLI,
    # Throwaway XDG folders: ``--version`` writes nothing to the user's.
    home_env=lambda home: {"XDG_CONFIG_HOME": home, "XDG_DATA_HOME": home},
)
probe = CLI.probe
install_hint = CLI.install_hint
