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
    package_of,
    source_files,
)

MAX_LINES = 500

FORBIDDEN = {
    # The engine knows no web framework and no runner internals: it speaks the wire. It
    # stands on the domains' services, never on their routes (tests/meta/test_domains.py).
    "paperclip.engine": (
        "paperclip.runner",
        "paperclip.api",
        "paperclip.http",
        "paperclip.app",
        "litestar",
    ),
    # The wire contract is a leaf: the control plane, the runner and the benchmarks import it.
    "paperclip.wire": ("paperclip.", "litestar", "sqlalchemy"),
    # What every domain stands on knows no domain, no HTTP and no engine.
    "paperclip.common": (
        "paperclip.domain",
        "paperclip.http",
        "paperclip.api",
        "paperclip.engine",
        "paperclip.container",
        "paperclip.app",
        "litestar",
    ),
    # The HTTP kit serves every domain's routes: it knows none of them, nor the app.
    "paperclip.http": (
        "paperclip.domain",
        "paperclip.api",
        "paperclip.engine",
        "paperclip.container",
        "paperclip.app",
    ),
    # The command line's kit talks to the control plane over HTTP: it knows nothing of the
    # server but its settings (and the hosts that count as this machine).
    "paperclip.cli_kit": (
        "paperclip.domain",
        "paperclip.cli",
        "paperclip.api",
        "paperclip.engine",
        "paperclip.common",
        "paperclip.models",
        "paperclip.db",
        "paperclip.container",
        "paperclip.app",
        "litestar",
    ),
    # The domains stand below the engine and the app: their routes are handed what the
    # engine does through ports (a domain's services also know no HTTP: test_domains.py).
    "paperclip.domain": (
        "paperclip.engine",
        "paperclip.api",
        "paperclip.container",
        "paperclip.app",
        "paperclip.cli",
        "paperclip.runner",
    ),
    # The runner process never reaches into the control plane.
    "paperclip.runner": (
        "paperclip.engine",
        "paperclip.api",
        "paperclip.http",
        "paperclip.domain",
        "paperclip.common",
        "paperclip.models",
        "litestar",
    ),
    # Prompt assembly is pure: no database, no plugin host (it is handed the hooks).
    "paperclip.prompts": ("paperclip.plugin_host", "paperclip.models", "sqlalchemy"),
    # The chaos harness reaches the product from outside only: processes, HTTP, SQL.
    "paperclip.chaos": (
        "paperclip.engine",
        "paperclip.api",
        "paperclip.http",
        "paperclip.domain",
        "paperclip.common",
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


def test_each_domain_is_a_package_of_its_own():
    """The package cycle check sees each domain apart: a cycle between two domains fails it."""
    assert package_of("paperclip.domain.issues.comments") == "paperclip.domain.issues"
    assert package_of("paperclip.engine.calls.pipeline") == "paperclip.engine"
    edges = {
        "paperclip.domain.a.x": {"paperclip.domain.b.y"},
        "paperclip.domain.b.y": {"paperclip.domain.a.z"},
    }
    assert cycles(package_graph(edges)) == [["paperclip.domain.a", "paperclip.domain.b"]]


def test_the_import_check_sees_a_forbidden_import():
    found = forbidden_imports({"paperclip.app": ("litestar",)})
    assert any("paperclip/app.py" in line and "litestar" in line for line in found)
