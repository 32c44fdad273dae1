"""Run a command in a network namespace that has only a loopback interface, where root allows.

    python -m tests.support.loopback_only pytest tests/providers/codex

Inside, nothing but 127.0.0.1 is reachable: a test (or a CLI it drives) that
tries to reach the internet fails fast instead of sending a packet. Without
root or ``unshare``/``ip``, the command runs as it is, after a note saying so;
the CLIs' own offline switches (docs/providers/codex.md) still apply.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys


def namespace_prefix() -> list[str] | None:
    """The argv prefix that enters a fresh loopback-only namespace, or None if unavailable."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if os.geteuid() != 0 or unshare is None or ip is None:
        return None
    probe = subprocess.run([unshare, "-n", ip, "link", "set", "lo", "up"], capture_output=True)
    if probe.returncode != 0:
        return None
    # `sh -c` brings lo up inside the namespace, then becomes the command.
    return [unshare, "-n", "--", "sh", "-c", f'{ip} link set lo up && exec "$@"', "sh"]


def main() -> None:
    command = sys.argv[1:]
    if not command:
        sys.exit("usage: python -m tests.support.loopback_only COMMAND [ARG ...]")
    prefix = namespace_prefix()
    if prefix is None:
        print(
            "loopback_only: no network namespace here (needs root, unshare and ip); "
            "running without one",
            file=sys.stderr,
            flush=True,
        )
        os.execvp(command[0], command)
    print(
        "loopback_only: running in a loopback-only network namespace", file=sys.stderr, flush=True
    )
    os.execv(prefix[0], [*prefix, *command])


if __name__ == "__main__":
    main()
