"""Each domain imports only the domains its docstring names, and its services know no HTTP.

Each package of ``paperclip/domain`` ends its docstring with ``Imports: a, b`` (the
domains below it) or ``Imports: none``. A module of a domain that imports another
domain not named there fails here, and so does a named domain it no longer imports.
A domain's routes, its bodies and the dependencies of its routes are its web modules
(``WEB``); its command group and what it prints are its command-line modules
(``COMMAND``), which talk to the API over HTTP like any client; the rest are its
services, which import neither Litestar, the HTTP kit nor the command line, and which
the engine may import: the web modules it may not.
"""

from __future__ import annotations

import re

from tests.meta.imports import (
    PACKAGE,
    ROOT,
    cycles,
    declared_imports,
    graph,
    imports_of,
    part_graph,
    part_of,
    pictured_imports,
    source_files,
    stale,
    undeclared,
    unknown,
)

DOMAIN = PACKAGE / "domain"
PREFIX = "paperclip.domain."
WEB = re.compile(r"^(routes|\w+_routes|schemas|issue_refs|openapi_providers)$")
"""A domain's web modules: its routes (``routes``, ``*_routes``), its request and response
bodies (``schemas``), the dependencies of its routes (``issue_refs``) and what it adds
to the OpenAPI document (``openapi_providers``)."""
COMMAND = re.compile(r"^(cli|transcript|provider_events)$")
"""A domain's command-line modules: its command group (``cli``) and what it prints a run's
events with (``transcript``, ``provider_events``)."""


def is_web(module: str) -> bool:
    return part_of(module, PREFIX) is not None and bool(WEB.match(module.rpartition(".")[2]))


def is_command(module: str) -> bool:
    return part_of(module, PREFIX) is not None and bool(COMMAND.match(module.rpartition(".")[2]))


def test_every_domain_names_what_it_may_import():
    declared = declared_imports(DOMAIN)
    assert [name for name, allowed in declared.items() if allowed is None] == []
    assert unknown(declared) == {}


def test_domains_import_only_what_their_docstrings_allow():
    assert undeclared(graph(), declared_imports(DOMAIN), PREFIX, "domain") == []


def test_every_allowed_domain_is_imported():
    """A stale allowance would let the picture in the docstrings drift from the code."""
    assert stale(graph(), declared_imports(DOMAIN), PREFIX) == {}


def test_no_import_cycle_between_domains():
    assert cycles(part_graph(graph(), PREFIX)) == []


def test_the_architecture_picture_matches_the_docstrings():
    text = (ROOT / "docs" / "architecture.md").read_text()
    pictured = pictured_imports(text, "holds every module to:", "imports no other domain")
    assert pictured == declared_imports(DOMAIN)


def test_services_know_no_http():
    """A domain's services own rules and transactions: no Litestar, no HTTP kit, no web or
    command-line module (not even their own domain's), no HTTP client."""
    found = []
    for path in source_files(DOMAIN):
        for item in imports_of(path):
            if is_web(item.source) or is_command(item.source):
                continue
            if (
                item.target.split(".")[0] in {"litestar", "click", "httpx"}
                or item.target.startswith(("paperclip.http.", "paperclip.cli_kit."))
                or any(
                    test(name)
                    for test in (is_web, is_command)
                    for name in (item.target, item.target.rpartition(".")[0])
                )
            ):
                found.append(f"{path.relative_to(ROOT)}:{item.line} imports {item.target}")
    assert found == []


def test_the_command_line_talks_http():
    """A domain's command group reaches the control plane over HTTP only: of Paperclip it
    imports the command-line kit and its domain's other command-line modules."""
    found = []
    for path in source_files(DOMAIN):
        for item in imports_of(path):
            if not is_command(item.source) or not item.target.startswith("paperclip."):
                continue
            target = item.target.rpartition(".")[0]
            allowed = item.target.startswith("paperclip.cli_kit.") or (
                is_command(target) and part_of(target, PREFIX) == part_of(item.source, PREFIX)
            )
            if not allowed:
                found.append(f"{path.relative_to(ROOT)}:{item.line} imports {item.target}")
    assert found == []


def test_the_engine_imports_no_web_module():
    """The engine stands on the domains' services; their routes are the app's."""
    found = [
        f"{source} imports {target}"
        for source, targets in graph().items()
        if source.startswith("paperclip.engine")
        for target in targets
        if is_web(target)
    ]
    assert found == []
