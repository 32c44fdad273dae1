"""Is the OpenCode CLI installed here, and which version? (``paperclip doctor``.)"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence

from paperclip_hookspecs.providers import ProviderProbe

from paperclip_opencode.config import SUPPORTED_CLI

PROBE_TIMEOUT_SECONDS = 15.0
_VERSION = re.compile(r"(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?)")

MODEL_HINT = (
    'Point the agent at a model: provider_config {"base_url": "http://127.0.0.1:8000/v1", '
    '"model": "<model name>", "env_key": "OPENAI_API_KEY"} with the key in that variable '
    "of the runner's environment (see docs/providers/opencode.md)."
)


def install_hint(executable: str = "opencode") -> str:
    """What to do when OpenCode is missing: install it, then give the agent a model."""
    return (
        f"OpenCode ({executable!r}) is not installed on this runner. Install it with "
        f"`npm install -g opencode-ai@{SUPPORTED_CLI}`, or point the runner's launch "
        "profile at it (PAPERCLIP_RUNNER_LAUNCH). " + MODEL_HINT
    )


def version_command(command: Sequence[str]) -> list[str]:
    """``opencode --version``, or for a Python module (``python -m pkg.mod ...``) its ``--version``."""
    argv = list(command)
    if len(argv) >= 3 and argv[1] == "-m":
        return [*argv[:3], "--version"]
    return [argv[0], "--version"]


def probe(command: Sequence[str]) -> ProviderProbe:
    """Whether the launch command's executable is installed, where, and its version.

    Runs ``<cmd> --version`` (bounded, with throwaway XDG folders) and never
    starts a server.
    """
    if not command:
        return ProviderProbe(found=False, hint="the launch profile has no command")
    path = shutil.which(command[0])
    if path is None:
        return ProviderProbe(found=False, hint=install_hint(command[0]))
    argv = [path, *version_command(command)[1:]]
    try:
        with tempfile.TemporaryDirectory(prefix="paperclip-opencode-probe-") as home:
            env = {**os.environ, "XDG_CONFIG_HOME": home, "XDG_DATA_HOME": home}
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT_SECONDS,
                env=env,
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
    hint = MODEL_HINT
    if "fake" not in done.stdout and version != SUPPORTED_CLI:
        hint = (
            f"paperclip-opencode is tested with OpenCode {SUPPORTED_CLI}; this is {version}. "
            f"`npm install -g opencode-ai@{SUPPORTED_CLI}` installs the tested one. "
        ) + MODEL_HINT
    return ProviderProbe(found=True, version=version, path=path, hint=hint)
