"""Every hook of the contract is called on the real path, through the plugin facade.

A hook is reached through a method of ``PluginHost`` that names it; that
method must be called somewhere under ``paperclip/`` outside the plugin
package itself. A hook nobody calls is a promise to plugin authors that the
core does not keep.
"""

from __future__ import annotations

import ast
from pathlib import Path

from paperclip.plugin_host import SPEC_MODULES
from tests.meta.imports import PACKAGE, source_files
from tests.plugins.test_meta import specs_of

HOST = PACKAGE / "plugin_host" / "host.py"

NOT_CALLED_YET: dict[str, str] = {}
"""Hooks without a call site on the real path, each with the reason. Only ever shrinks."""


def facade_methods(host: Path = HOST) -> dict[str, set[str]]:
    """Hook name -> the names of the facade methods whose body names it."""
    tree = ast.parse(host.read_text())
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "PluginHost":
            for method in node.body:
                if not isinstance(method, ast.FunctionDef) or method.name.startswith("_"):
                    continue
                for inner in ast.walk(method):
                    if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                        if inner.value.startswith("paperclip_"):
                            found.setdefault(inner.value, set()).add(method.name)
    return found


def called_methods(files: list[Path]) -> set[str]:
    """Names called as attributes (``x.check_completion(...)``) in ``files``."""
    called = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                called.add(node.func.attr)
    return called


def uncalled_hooks(specs: list[str], host: Path, files: list[Path]) -> list[str]:
    methods = facade_methods(host)
    called = called_methods(files)
    return sorted(spec for spec in specs if not (methods.get(spec, set()) & called))


def core_files() -> list[Path]:
    return [p for p in source_files() if (PACKAGE / "plugin_host") not in p.parents]


ALL_SPECS = sorted(spec for module in SPEC_MODULES for spec in specs_of(module))


def test_every_hook_is_called_on_the_real_path():
    assert uncalled_hooks(ALL_SPECS, HOST, core_files()) == sorted(NOT_CALLED_YET)


def test_the_check_fails_for_a_hook_nobody_calls(tmp_path):
    host = tmp_path / "host.py"
    host.write_text(
        "class PluginHost:\n"
        "    def check_completion(self):\n"
        "        return self._optional('paperclip_check_completion')\n"
        "    def brand_new(self):\n"
        "        return self._optional('paperclip_brand_new')\n"
    )
    caller = tmp_path / "caller.py"
    caller.write_text("def f(plugins):\n    return plugins.check_completion()\n")
    specs = ["paperclip_brand_new", "paperclip_check_completion"]
    assert uncalled_hooks(specs, host, [caller]) == ["paperclip_brand_new"]
