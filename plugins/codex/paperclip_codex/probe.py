"""Is the Codex CLI installed here, and which version? (``paperclip doctor``, first-run help.)"""

from __future__ import annotations

from paperclip_provider_kit.probe import CliProbe, version_command

from paperclip_codex.config import SUPPORTED_CLI

CLI = CliProbe(
    plugin="codex",
    title="the Codex CLI",
    npm_package="@openai/codex",
    supported=SUPPORTED_CLI,
    # A throwaway CODEX_HOME: ``--version`` writes nothing to the user's.
    home_env=lambda home: {"CODEX_HOME": home},
    runtime=" (Node 20 or newer)",
    tested_as="codex-cli",
)
probe = CLI.probe
install_hint = CLI.install_hint

__all__ = ["CLI", "install_hint", "probe", "version_command"]
