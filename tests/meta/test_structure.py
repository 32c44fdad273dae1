"""The shape of the code, kept true: imports point down, no cycles, no file that grew too big.

See docs/architecture.md for the parts and which may import which.
"""

from __future__ import annotations

import pytest

from tests.meta.imports import (
    PACKAGE,
    ROOT,
    cycles,
    graph,
    imports_of,
    package_graph,
    source_files,
)

MAX_LINES = 500

FORBIDDEN = {
    # The engine knows no web framework and no runner internals: it speaks the wire.
    "paperclip.engine": ("paperclip.runner", "paperclip.api", "paperclip.app", "litestar"),
    # The wire contract is a leaf: the control plane, the runner and the benchmarks import it.
    "paperclip.wire": ("paperclip.", "litestar", "sqlalchemy"),
    # Services own rules and transactions; they know neither HTTP nor the engine.
    "paperclip.services": ("paperclip.api", "paperclip.engine", "litestar"),
    # The runner process never reaches into the control plane.
    "paperclip.runner": (
        "paperclip.engine",
        "paperclip.api",
        "paperclip.services",
        "paperclip.models",
        "litestar",
    ),
    # Prompt assembly is pure: no database, no plugin host (it is handed the hooks).
    "paperclip.prompts": ("paperclip.plugin_host", "paperclip.models", "sqlalchemy"),
    # The chaos harness reaches the product from outside only: processes, HTTP, SQL.
    "paperclip.chaos": (
        "paperclip.engine",
        "paperclip.api",
        "paperclip.services",
        "paperclip.runner",
        "paperclip.models",
        "litestar",
    ),
}


def forbidden_imports(forbidden: dict[str, tuple[str, ...]]) -> list[str]:
    found = []
    for path in source_files():
        for item in imports_of(path):
            for area, banned in forbidden.items():
                if item.source != area and not item.source.startswith(area + "."):
                    continue
                for prefix in banned:
                    if item.target == prefix.rstrip(".") or item.target.startswith(
                        prefix if prefix.endswith(".") else prefix + "."
                    ):
                        if not item.target.startswith(area):
                            where = path.relative_to(ROOT)
                            found.append(f"{where}:{item.line} imports {item.target}")
    return found


def test_parts_import_only_what_they_may():
    assert forbidden_imports(FORBIDDEN) == []


def test_no_import_cycle_between_modules():
    assert cycles(graph()) == []


def test_no_import_cycle_between_packages():
    assert cycles(package_graph(graph())) == []


def test_no_file_is_over_the_limit():
    """Every Python file of the repository: the core, the plugin contract, every plugin and
    its tests, the core's tests, the benchmarks and the migrations."""
    packages = [
        PACKAGE,
        ROOT / "hookspecs",
        ROOT / "tests",
        ROOT / "bench",
        ROOT / "migrations",
        *(ROOT / "plugins").glob("*/paperclip_*"),
        *(ROOT / "plugins").glob("*/tests"),
    ]
    big = {
        str(path.relative_to(ROOT)): lines
        for package in packages
        for path in source_files(package)
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert big == {}


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, [["a", "b", "c"]]),
    ],
)
def test_the_cycle_finder_finds_cycles(edges, expected):
    assert cycles(edges) == expected


def test_the_import_check_sees_a_forbidden_import():
    found = forbidden_imports({"paperclip.app": ("litestar",)})
    assert any("paperclip/app.py" in line and "litestar" in line for line in found)
