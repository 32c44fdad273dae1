"""The engine's parts import only the parts their docstrings name, and the docs list every file.

Each package of ``paperclip/engine`` (and each module directly in it) ends its
docstring with ``Imports: a, b`` or ``Imports: none``. The line is the part's
contract: a module of the part that imports another engine part not named
there fails here, and so does a named part it no longer imports.
"""

from __future__ import annotations

import ast

from tests.meta.imports import PACKAGE, ROOT, cycles, declared_imports, graph, source_files

ENGINE = PACKAGE / "engine"
PREFIX = "paperclip.engine."


def part_of(module: str) -> str | None:
    """``paperclip.engine.calls.pipeline`` -> ``calls``; None outside the engine's parts."""
    if not module.startswith(PREFIX):
        return None
    return module.removeprefix(PREFIX).split(".")[0]


def part_edges(edges: dict[str, set[str]]) -> dict[str, set[tuple[str, str]]]:
    """Part -> (importing module, imported part) for every import across two engine parts."""
    found: dict[str, set[tuple[str, str]]] = {}
    for source, targets in edges.items():
        here = part_of(source)
        if here is None:
            continue
        found.setdefault(here, set())
        for target in targets:
            there = part_of(target)
            if there is not None and there != here:
                found[here].add((source, there))
    return found


def undeclared(edges: dict[str, set[str]], declared: dict[str, set[str] | None]) -> list[str]:
    """Imports of an engine part that its docstring does not allow."""
    return sorted(
        f"{source} imports the part {there}, not in {here}'s 'Imports:' line"
        for here, pairs in part_edges(edges).items()
        for source, there in pairs
        if there not in (declared.get(here) or set())
    )


def test_every_part_names_what_it_may_import():
    declared = declared_imports(ENGINE)
    assert [name for name, allowed in declared.items() if allowed is None] == []
    unknown = {
        name: sorted(allowed - set(declared))
        for name, allowed in declared.items()
        if allowed and allowed - set(declared)
    }
    assert unknown == {}


def test_parts_import_only_what_their_docstrings_allow():
    assert undeclared(graph(), declared_imports(ENGINE)) == []


def test_every_allowed_part_is_imported():
    """A stale allowance would let the picture in the docstrings drift from the code."""
    used = {here: {there for _, there in pairs} for here, pairs in part_edges(graph()).items()}
    stale = {
        name: sorted(allowed - used.get(name, set()))
        for name, allowed in declared_imports(ENGINE).items()
        if allowed and allowed - used.get(name, set())
    }
    assert stale == {}


def test_no_import_cycle_between_parts():
    edges = {here: {there for _, there in pairs} for here, pairs in part_edges(graph()).items()}
    assert cycles(edges) == []


def test_the_check_sees_an_import_the_docstring_does_not_allow():
    edges = {"paperclip.engine.logs.events": {"paperclip.engine.calls.pipeline"}}
    assert undeclared(edges, {"logs": set(), "calls": set()}) == [
        "paperclip.engine.logs.events imports the part calls, not in logs's 'Imports:' line"
    ]
    assert undeclared(edges, {"logs": {"calls"}, "calls": set()}) == []


def test_architecture_lists_every_engine_file():
    text = (ROOT / "docs" / "architecture.md").read_text()
    files = sorted(
        str(path.relative_to(ENGINE))
        for path in ENGINE.rglob("*.py")
        if "__pycache__" not in path.parts and path.name != "__init__.py"
    )
    assert [name for name in files if f"`{name}`" not in text] == []


def epoch_moves(source: str) -> list[int]:
    """Lines of ``source`` that move a run's epoch: ``controller_epoch += 1`` or ``... + 1``."""

    def is_epoch(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "controller_epoch"

    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if (isinstance(node, ast.AugAssign) and is_epoch(node.target))
        or (isinstance(node, ast.BinOp) and (is_epoch(node.left) or is_epoch(node.right)))
    )


def test_only_adoption_moves_the_epoch():
    """Taking over a run has one owner (``ownership.leases.adopt``); nowhere else moves the fence."""
    owner = ENGINE / "ownership" / "leases.py"
    assert len(epoch_moves(owner.read_text())) == 1
    elsewhere = {
        str(path.relative_to(ROOT)): lines
        for path in source_files()
        if path != owner and (lines := epoch_moves(path.read_text()))
    }
    assert elsewhere == {}


def test_the_epoch_check_sees_a_takeover_by_hand():
    source = "run.controller_epoch += 1\nq = values(controller_epoch=Run.controller_epoch + 1)\n"
    assert epoch_moves(source) == [1, 2]
    assert epoch_moves("Run(controller_epoch=1)\n") == []


def pictured_imports(text: str) -> dict[str, set[str]]:
    """The parts in docs/architecture.md's picture of the engine, each with what it imports."""
    block = text.split("on the lines above it:\n\n```\n", 1)[1].split("```", 1)[0]
    pictured: dict[str, set[str]] = {}
    for line in block.splitlines():
        names, _, rest = line.partition("   ")
        rest = rest.strip()
        allowed = set() if rest == "import no other part" else {n.strip() for n in rest.split(",")}
        for name in names.split(","):
            pictured[name.strip().removesuffix("/").removesuffix(".py")] = allowed
    pictured.pop("engine")  # the root: it imports what it wires
    return pictured


def test_the_architecture_picture_matches_the_docstrings():
    declared = declared_imports(ENGINE)
    declared.pop("engine")
    assert pictured_imports((ROOT / "docs" / "architecture.md").read_text()) == declared
