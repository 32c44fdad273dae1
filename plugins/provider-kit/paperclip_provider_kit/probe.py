"""Is a provider's CLI installed on this runner, and which version? (``paperclip doctor``.)

Each provider names its CLI, the npm package and version it is tested with,
and the variables that point the CLI at a throwaway home; :meth:`CliProbe.probe`
runs ``<cmd> --version`` (bounded, never a session or a server) and says what
to do when the CLI is missing or another version.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from paperclip_hookspecs.providers import ProviderProbe

PROBE_TIMEOUT_SECONDS = 15.0
_VERSION = re.compile(r"(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?)")


def model_hint(plugin: str) -> str:
    """How to give an agent of ``plugin``'s kind a model (the same for every CLI provider)."""
    return (
        'Point the agent at a model: provider_config {"base_url": "http://127.0.0.1:8000/v1", '
        '"model": "<model name>", "env_key": "OPENAI_API_KEY"} with the key in that variable '
        f"of the runner's environment (see docs/providers/{plugin}.md)."
    )


def version_command(command: Sequence[str]) -> list[str]:
    """``<cli> --version``, or for a Python module (``python -m pkg.mod ...``) its ``--version``."""
    argv = list(command)
    if len(argv) >= 3 and argv[1] == "-m":
        return [*argv[:3], "--version"]
    return [argv[0], "--version"]


@dataclass(frozen=True, slots=True)
class CliProbe:
    """What ``paperclip doctor`` says about one provider's CLI."""

    plugin: str
    """The plugin's name: ``paperclip-<plugin>``, ``docs/providers/<plugin>.md``."""
    title: str
    """The CLI as a person calls it (``"OpenCode"``, ``"the Codex CLI"``)."""
    npm_package: str
    supported: str
    """The CLI version the plugin is tested with."""
    home_env: Callable[[str], Mapping[str, str]]
    """The variables that keep ``--version`` inside a throwaway folder (its path given)."""
    runtime: str = ""
    """What the CLI needs besides itself, e.g. ``" (Node 20 or newer)"``."""
    tested_as: str = ""
    """The CLI's name in "tested with X <version>" (default: ``title``)."""

    def install_hint(self, executable: str) -> str:
        """What to do when the CLI is missing: install it, then give the agent a model."""
        title = self.title[0].upper() + self.title[1:]
        return (
            f"{title} ({executable!r}) is not installed on this runner. Install it with "
            f"`npm install -g {self.npm_package}@{self.supported}`{self.runtime}, or point the "
            "runner's launch profile at it (PAPERCLIP_RUNNER_LAUNCH). " + model_hint(self.plugin)
        )

    def probe(self, command: Sequence[str]) -> ProviderProbe:
        """Whether the launch command's executable is installed, where, and its version."""
        if not command:
            return ProviderProbe(found=False, hint="the launch profile has no command")
        path = shutil.which(command[0])
        if path is None:
            return ProviderProbe(found=False, hint=self.install_hint(command[0]))
        argv = [path, *version_command(command)[1:]]
        try:
            with tempfile.TemporaryDirectory(prefix=f"paperclip-{self.plugin}-probe-") as home:
                done = subprocess.run(
                    argv,
                    capture_output=True,
                    text=True,
                    timeout=PROBE_TIMEOUT_SECONDS,
                    env={**os.environ, **self.home_env(home)},
                    stdin=subprocess.DEVNULL,
                )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return ProviderProbe(
                found=True, path=path, hint=f"`{' '.join(argv)}` did not answer: {exc}"
            )
        match = _VERSION.search(done.stdout) or _VERSION.search(done.stderr)
        if done.returncode != 0 or match is None:
            output = (done.stdout + done.stderr).strip()[:200]
            return ProviderProbe(
                found=True,
                path=path,
                hint=f"`{' '.join(argv)}` exited with status {done.returncode}: {output}",
            )
        version = match.group(1)
        hint = model_hint(self.plugin)
        if "fake" not in done.stdout and version != self.supported:
            hint = (
                f"paperclip-{self.plugin} is tested with {self.tested_as or self.title} "
                f"{self.supported}; this is {version}. `npm install -g "
                f"{self.npm_package}@{self.supported}` installs the tested one. "
            ) + hint
        return ProviderProbe(found=True, version=version, path=path, hint=hint)
