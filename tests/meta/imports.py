"""The import graph of the ``paperclip`` package, read from the source (nothing is imported)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "paperclip"


@dataclass(frozen=True, slots=True)
class Import:
    source: str
    """The importing module (``paperclip.engine.calls.pipeline``)."""
    target: str
    """The imported module or name (``paperclip.wire.messages``, ``litestar``)."""
    line: int
    lazy: bool
    """Inside a function (or under ``TYPE_CHECKING``), not at module level."""


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files(package: Path = PACKAGE) -> list[Path]:
    return sorted(p for p in package.rglob("*.py") if "__pycache__" not in p.parts)


def imports_of(path: Path, root: Path = ROOT) -> Iterator[Import]:
    source = module_name(path, root)
    package = source if path.name == "__init__.py" else source.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    top_level = {id(node) for node in tree.body}
    typing_only = {
        id(inner)
        for node in tree.body
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    for node in ast.walk(tree):
        lazy = id(node) not in top_level or id(node) in typing_only
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(source, alias.name, node.lineno, lazy)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield Import(source, f"{base}.{alias.name}", node.lineno, lazy)


def resolve(target: str, modules: set[str]) -> str | None:
    """The module of ours that ``target`` names (a module, or a name inside one), or None."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def graph(package: Path = PACKAGE, root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (lazy imports too)."""
    files = source_files(package)
    modules = {module_name(p, root) for p in files}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for path in files:
        for item in imports_of(path, root):
            target = resolve(item.target, modules)
            if target is not None and target != item.source:
                # A package's face (__init__) hands names on: importing a name through it
                # is an edge to the package, not to each submodule.
                edges[item.source].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(edges.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def package_of(module: str, depth: int = 2) -> str:
    """``paperclip.engine.calls.pipeline`` -> ``paperclip.engine``; a top-level module is its own
    package; each domain is one (``paperclip.domain.issues.comments`` -> ``paperclip.domain.issues``)."""
    if module.startswith("paperclip.domain."):
        depth += 1
    return ".".join(module.split(".")[:depth])


def package_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for source, targets in edges.items():
        here = package_of(source)
        packages.setdefault(here, set())
        for target in targets:
            if package_of(target) != here:
                packages[here].add(package_of(target))
    return packages


def declared_imports(package: Path) -> dict[str, set[str] | None]:
    """Each part of ``package`` (a sub-package, or a module directly in it) -> the parts its
    docstring allows it to import, from its ``Imports: a, b`` (or ``Imports: none``) paragraph;
    None where the docstring has no such line."""
    parts: dict[str, set[str] | None] = {}
    for path in sorted(package.iterdir()):
        if path.is_dir() and (path / "__init__.py").exists():
            name, face = path.name, path / "__init__.py"
        elif path.suffix == ".py" and path.name != "__init__.py":
            name, face = path.stem, path
        else:
            continue
        doc = ast.get_docstring(ast.parse(face.read_text())) or ""
        found = re.search(r"^Imports:(.*?)(?:\n\s*\n|\Z)", doc, re.MULTILINE | re.DOTALL)
        if found is None:
            parts[name] = None
            continue
        names = {item.strip() for item in found.group(1).replace("\n", " ").split(",")}
        parts[name] = set() if names == {"none"} else names - {""}
    return parts


def part_of(module: str, prefix: str) -> str | None:
    """The part of ``prefix`` a module is in (``paperclip.engine.calls.pipeline`` under
    ``paperclip.engine.``: ``calls``); None outside."""
    if not module.startswith(prefix):
        return None
    return module.removeprefix(prefix).split(".")[0]


def part_edges(edges: dict[str, set[str]], prefix: str) -> dict[str, set[tuple[str, str]]]:
    """Part -> (importing module, imported part) for every import across two parts of ``prefix``."""
    found: dict[str, set[tuple[str, str]]] = {}
    for source, targets in edges.items():
        here = part_of(source, prefix)
        if here is None:
            continue
        found.setdefault(here, set())
        for target in targets:
            there = part_of(target, prefix)
            if there is not None and there != here:
                found[here].add((source, there))
    return found


def part_graph(edges: dict[str, set[str]], prefix: str) -> dict[str, set[str]]:
    """Part -> the parts of ``prefix`` it imports."""
    return {
        here: {there for _, there in pairs} for here, pairs in part_edges(edges, prefix).items()
    }


def undeclared(
    edges: dict[str, set[str]], declared: dict[str, set[str] | None], prefix: str, kind: str
) -> list[str]:
    """Imports of a part (a ``kind``) of ``prefix`` that its docstring does not allow."""
    return sorted(
        f"{source} imports the {kind} {there}, not in {here}'s 'Imports:' line"
        for here, pairs in part_edges(edges, prefix).items()
        for source, there in pairs
        if there not in (declared.get(here) or set())
    )


def stale(
    edges: dict[str, set[str]], declared: dict[str, set[str] | None], prefix: str
) -> dict[str, list[str]]:
    """Each part's allowances that none of its modules uses."""
    used = part_graph(edges, prefix)
    return {
        name: sorted(allowed - used.get(name, set()))
        for name, allowed in declared.items()
        if allowed and allowed - used.get(name, set())
    }


def unknown(declared: dict[str, set[str] | None]) -> dict[str, list[str]]:
    """Allowances that name no part."""
    return {
        name: sorted(allowed - set(declared))
        for name, allowed in declared.items()
        if allowed and allowed - set(declared)
    }


def pictured_imports(text: str, marker: str, nothing: str) -> dict[str, set[str]]:
    """The parts in the first code block after ``marker`` (a picture in docs/architecture.md),
    each with what it imports (``nothing``: the words of a part that imports none)."""
    block = text.split(f"{marker}\n\n```\n", 1)[1].split("```", 1)[0]
    pictured: dict[str, set[str]] = {}
    for line in block.splitlines():
        names, _, rest = line.partition("   ")
        rest = rest.strip()
        allowed = set() if rest == nothing else {n.strip() for n in rest.split(",")}
        for name in names.split(","):
            pictured[name.strip().removesuffix("/").removesuffix(".py")] = allowed
    return pictured
