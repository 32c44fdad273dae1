"""Every hook of the contract is called on the real path, through the plugin facade.

A hook is reached through a method of ``PluginHost`` that names it; that
method must be called somewhere under ``paperclip/`` outside the plugin
package itself, from a function that is itself reached: named (called or
passed on) by code that is reached, transitively, from an entry point (module
level code, a decorated handler, a dunder method, a console script, a method
the plugin contract declares, which plugins call). A
function nothing on that path names (one only tests call) does not count. A
hook nobody calls is a promise to plugin authors that the core does not keep;
a deprecated hook (``warn_on_impl``) promises nothing and is left out.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path

from paperclip.plugin_host import SPEC_MODULES
from tests.meta.imports import PACKAGE, ROOT, source_files
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


def entry_points(pyproject: Path = ROOT / "pyproject.toml") -> set[str]:
    """The function names of the console scripts (``paperclip.cli.main:main`` -> ``main``)."""
    scripts = tomllib.loads(pyproject.read_text()).get("project", {}).get("scripts", {})
    return {target.rpartition(":")[2] for target in scripts.values()}


def contract_methods(contract: Path = ROOT / "hookspecs" / "paperclip_hookspecs") -> set[str]:
    """The methods the plugin contract declares (``RecoveryPort.resume_run``, a driver's
    ``start_turn``): plugins outside ``paperclip/`` call the core's implementations of them."""
    return {
        node.name
        for path in source_files(contract)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("paperclip_")
    }


def _names(nodes: Iterable[ast.AST]) -> set[str]:
    """Every name a piece of code uses (``f``, ``x.f``): called, or passed on as a callback."""
    found = set()
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Name):
                found.add(node.id)
            elif isinstance(node, ast.Attribute):
                found.add(node.attr)
    return found


def reached_functions(
    trees: list[ast.Module], roots: Iterable[str] = ()
) -> set[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The function nodes of ``trees`` reached from an entry point.

    By name, so it errs on the side of reached: a function counts once any reached
    code names it. Entry points: module-level code, decorated functions (handlers,
    commands, hook implementations), dunder methods, and the ``roots`` names.
    """
    functions = [
        node
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    # Module and class bodies run on import: what they name is reached.
    named = set(roots) | _names(n for tree in trees for n in _top_level(tree.body))
    reached: set[ast.FunctionDef | ast.AsyncFunctionDef] = set()
    grew = True
    while grew:
        grew = False
        for function in functions:
            if function in reached:
                continue
            entry = bool(function.decorator_list) or function.name.startswith("__")
            if entry or function.name in named:
                reached.add(function)
                named |= _names(function.body)
                grew = True
    return reached


def _top_level(body: list[ast.stmt]) -> Iterator[ast.AST]:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from node.decorator_list
        elif isinstance(node, ast.ClassDef):
            yield from node.decorator_list
            yield from node.bases
            yield from _top_level(node.body)
        elif not isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def called_methods(files: list[Path], roots: Iterable[str] = ()) -> set[str]:
    """Names called as attributes (``x.check_completion(...)``) in ``files``, by reached code."""
    trees = [ast.parse(path.read_text()) for path in files]
    code: list[ast.AST] = list(reached_functions(trees, roots))
    code += [node for tree in trees for node in _top_level(tree.body)]
    return {
        node.func.attr
        for top in code
        for node in ast.walk(top)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }


def uncalled_hooks(
    specs: list[str], host: Path, files: list[Path], roots: Iterable[str] = ()
) -> list[str]:
    methods = facade_methods(host)
    called = called_methods(files, roots)
    return sorted(spec for spec in specs if not (methods.get(spec, set()) & called))


def core_files() -> list[Path]:
    return [p for p in source_files() if (PACKAGE / "plugin_host") not in p.parents]


def deprecated(module: object, spec: str) -> bool:
    return bool(getattr(module, spec).paperclip_spec.get("warn_on_impl"))


ALL_SPECS = sorted(
    spec for module in SPEC_MODULES for spec in specs_of(module) if not deprecated(module, spec)
)


def test_every_hook_is_called_on_the_real_path():
    found = uncalled_hooks(ALL_SPECS, HOST, core_files(), entry_points() | contract_methods())
    assert found == sorted(NOT_CALLED_YET)


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
    assert uncalled_hooks(specs, host, [caller], {"f"}) == ["paperclip_brand_new"]


def test_the_check_fails_for_a_facade_call_only_an_unreached_function_makes(tmp_path):
    host = tmp_path / "host.py"
    host.write_text(
        "class PluginHost:\n"
        "    def check_completion(self):\n"
        "        return self._optional('paperclip_check_completion')\n"
        "    def render_recovery(self):\n"
        "        return self._optional('paperclip_render_recovery')\n"
    )
    caller = tmp_path / "caller.py"
    caller.write_text(
        # Reached: the entry point calls ``finish``, which calls the facade.
        "def main(plugins):\n    return finish(plugins)\n\n"
        "def finish(plugins):\n    return plugins.check_completion()\n\n"
        # Not reached: only ``orphan`` names ``recover``, and nothing names ``orphan``.
        "def recover(plugins):\n    return plugins.render_recovery()\n\n"
        "def orphan(plugins):\n    return recover(plugins)\n"
    )
    specs = ["paperclip_check_completion", "paperclip_render_recovery"]
    assert uncalled_hooks(specs, host, [caller], {"main"}) == ["paperclip_render_recovery"]
    assert uncalled_hooks(specs, host, [caller], {"main", "orphan"}) == []
    assert uncalled_hooks(specs, host, [caller]) == specs  # no entry point: nothing is reached
