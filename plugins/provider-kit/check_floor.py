"""Is the installed paperclip-provider-kit the lowest version each provider given declares?

    python plugins/provider-kit/check_floor.py plugins/opencode plugins/pi

Exits non-zero, saying which, unless every folder's ``pyproject.toml`` declares
``paperclip-provider-kit>=X`` with X the installed version: then the providers'
tests, run next in the same environment, test them against that floor. (tox
runs it before the tests of ``plugins-hookspecs-1.2``, ``-1.3`` and
``plugin-gateway``.)
"""

from __future__ import annotations

import re
import sys
from importlib.metadata import version
from pathlib import Path

FLOOR = re.compile(r"paperclip-provider-kit(?:\[[a-z,]*\])?>=([0-9.]+)")


def _release(text: str) -> tuple[int, ...]:
    parts = tuple(int(p) for p in text.split("."))
    return parts + (0,) * (3 - len(parts))


def main(folders: list[str]) -> int:
    installed = version("paperclip-provider-kit")
    wrong = {}
    for folder in folders:
        match = FLOOR.search((Path(folder) / "pyproject.toml").read_text())
        floor = match.group(1) if match else "(none)"
        if match is None or _release(floor) != _release(installed):
            wrong[folder] = floor
    for folder, floor in wrong.items():
        print(f"{folder} declares paperclip-provider-kit>={floor}; {installed} is installed")
    return 1 if wrong or not folders else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
