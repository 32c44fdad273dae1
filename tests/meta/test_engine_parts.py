"""The engine's parts import only the parts their docstrings name, and the docs list every file.

Each package of ``paperclip/engine`` (and each module directly in it) ends its
docstring with ``Imports: a, b`` or ``Imports: none``. The line is the part's
contract: a module of the part that imports another engine part not named
there fails here, and so does a named part it no longer imports.
"""

from __future__ import annotations

import ast

from tests.meta.imports import (
    PACKAGE,
    ROOT,
    cycles,
    declared_imports,
    graph,
    part_graph,
    pictured_imports,
    source_files,
    stale,
    undeclared,
    unknown,
)

ENGINE = PACKAGE / "engine"
PREFIX = "paperclip.engine."


def test_every_part_names_what_it_may_import():
    declared = declared_imports(ENGINE)
    assert [name for name, allowed in declared.items() if allowed is None] == []
    assert unknown(declared) == {}


def test_parts_import_only_what_their_docstrings_allow():
    assert undeclared(graph(), declared_imports(ENGINE), PREFIX, "part") == []


def test_every_allowed_part_is_imported():
    """A stale allowance would let the picture in the docstrings drift from the code."""
    assert stale(graph(), declared_imports(ENGINE), PREFIX) == {}


def test_no_import_cycle_between_parts():
    assert cycles(part_graph(graph(), PREFIX)) == []


def test_the_check_sees_an_import_the_docstring_does_not_allow():
    edges = {"paperclip.engine.logs.events": {"paperclip.engine.calls.pipeline"}}
    assert undeclared(edges, {"logs": set(), "calls": set()}, PREFIX, "part") == [
        "paperclip.engine.logs.events imports the part calls, not in logs's 'Imports:' line"
    ]
    assert undeclared(edges, {"logs": {"calls"}, "calls": set()}, PREFIX, "part") == []


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


def test_the_architecture_picture_matches_the_docstrings():
    declared = declared_imports(ENGINE)
    declared.pop("engine")
    text = (ROOT / "docs" / "architecture.md").read_text()
    pictured = pictured_imports(text, "on the lines above it:", "import no other part")
    pictured.pop("engine")  # the root: it imports what it wires
    assert pictured == declared
