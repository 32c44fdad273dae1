"""The whole API, fuzzed by schemathesis from its own OpenAPI document, against a real server.

``schemathesis run --checks all`` with a fixed seed and bounded examples, in
both deployment modes, every phase (examples, coverage, fuzzing, stateful).
The test asserts that every operation of the app was exercised (counted from
the app's routes, so a collapse of the document or of the run fails), that
no check failed (``not_a_server_error`` among them: no 5xx), and that the
server logged no error while it ran.

The stateful phase follows the ids that responses return (a company made,
then its agents, issues, comments and keys), so requests reach the services
instead of stopping at a 404; runs, which no request can make, are seeded and
their ids given to the run operations. Missing and foreign ids are the
tenancy tests' subject.

Documented exceptions, configured below and nowhere else:

- ``generation.allow-x00 = false``: the server refuses NUL anywhere in a body
  or query with ``400 invalid_character`` (PostgreSQL cannot store it), which
  a free-form JSON object's schema cannot state. ``test_door.py`` tests it.
- ``negative_data_rejection`` accepts ``413``: a body longer than
  ``max_body_bytes`` is refused by its size before its fields are read.
- ``positive_data_acceptance`` accepts ``422`` on list operations: a page
  cursor is an opaque token the server signs for one list, so any string the
  document allows but the server did not issue is refused (``invalid_cursor``)
  by design. ``test_pages.py`` tests it.
- ``positive_data_acceptance`` accepts ``422`` on operations whose body or
  query refers to other resources by id (an issue's assignee and parent, a
  wake's issue, a hold's issue, a conversation's task and agent, an
  interaction's conversation, an issue's project and an agent's default
  project, the filters of the issue, run and hold lists): an id the document
  allows but no row has is refused as ``<entity>_not_found`` (422: the
  request's own resource exists, its reference does not). ``test_tenancy.py``
  tests it.
- ``positive_data_acceptance`` accepts ``422`` on ``POST`` and ``PATCH`` of a
  project: its source is exactly one of ``repo_path`` and ``repo_url``, a
  folder without ``..`` components or a URL of a known scheme, which the
  document describes but cannot state as a schema (``invalid_project_source``,
  ``invalid_repo_path``, ...). ``test_projects.py`` tests them.
- The stateful phase leaves out an issue's workspace
  (``…/issues/{issue_id}/workspace``, ``…/workspace/diff``): it takes the
  workspace for a part of the issue it just created (``ensure_resource_availability``),
  but a workspace exists only once a run of the issue made one (``404
  workspace_not_found`` before). The other phases test them; ``--checks all``
  outranks a check turned off in the configuration, so the phase is what is
  turned off.
- ``positive_data_acceptance`` accepts ``422`` on ``POST`` and ``PATCH`` of a
  routine: its ``cron`` is five valid fields, its ``timezone`` a known zone,
  its templates' placeholders known ones, which the document describes but
  cannot state as a schema (``invalid_cron``, ``unknown_timezone``,
  ``unknown_placeholder``); and ``401`` on a routine's webhook, whose body
  must be signed with the routine's secret (``invalid_signature``), which no
  generated request knows. ``tests/api/test_routines.py`` tests them.
- ``positive_data_acceptance`` accepts ``422`` on ``PATCH`` of an agent: a new
  ``provider_config`` alone is checked against the agent's own provider, while
  the document offers every installed provider's schema (it cannot know the
  stored provider), so a config that fits another provider is refused
  (``invalid_provider_config``). ``test_agent_configs.py`` tests it.
- ``positive_data_acceptance`` accepts ``409`` on a run's ``retry`` and
  ``dismiss``: the seeded run succeeded, and only a failed run is retried or
  dismissed (``run_not_failed``), which no schema states.
  ``tests/api/test_run_actions.py`` tests both on failed runs.
- ``positive_data_acceptance`` accepts ``422`` on the budget and cost
  operations: a budget's ``scope_id`` and the costs' filters name an agent,
  project, issue or run by id (as above), and ``since`` / ``until`` are ISO
  8601 times, which a string parameter's schema cannot state
  (``invalid_time``). ``test_costs_api.py`` tests them.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx
import pytest

from tests.support import fixture_provider
from tests.support.processes import ServerProcess

SEED = 20261130
MAX_EXAMPLES = int(os.environ.get("PAPERCLIP_FUZZ_EXAMPLES", "4"))
"""Examples per operation: a short fixed-seed run in the suite; set it higher for a long one."""
RUN_LIMIT = max(900, 60 * MAX_EXAMPLES)
"""Seconds schemathesis may take in one mode (8 examples took up to 522 s in one mode on a 2-core machine loaded to 12)."""

pytestmark = [pytest.mark.process, pytest.mark.fuzz, pytest.mark.timeout(RUN_LIMIT + 60)]
LISTS = r"^/api/companies(/\{company_id\}(/agents|/issues|/issues/\{issue_id\}/comments|/runs|/runs/\{run_id\}/tool-calls|/api-keys|/projects|/routines|/routines/\{routine_id\}/executions))?$"


def expected_operations() -> set[str]:
    """Every operation of the API the app serves (docs pages aside), from its routes: ``METHOD /path``."""
    from paperclip.app import create_app
    from paperclip.settings import Settings
    from tests.api.tenancy import http_routes

    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused"))
    found = set()
    for route in http_routes(app):
        if route.path.startswith("/api/docs") or not route.path.startswith("/api/"):
            continue
        found.add(f"{route.method} {route.path}")
        if route.method == "GET":
            found.add(f"HEAD {route.path}")
    return found


@pytest.fixture(scope="module", params=["local_trusted", "authenticated"])
def mode(request):
    return request.param


@pytest.fixture(scope="module")
def served(mode, paperclip_database_url, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"fuzz-{mode}")
    env = {
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_DATA_DIR": str(tmp / "data"),
        "PAPERCLIP_PORT": "0",
        "PAPERCLIP_DEPLOYMENT_MODE": mode,
        **fixture_provider.install(tmp / "site"),
    }
    headers = {}
    if mode == "authenticated":
        out = subprocess.run(
            [sys.executable, "-m", "paperclip", "keys", "create", f"fuzz {uuid.uuid4()}", "--json"],
            env={**ServerProcess(env, tmp / "x.log").env},
            capture_output=True,
            text=True,
            check=True,
        )
        headers["Authorization"] = f"Bearer {json.loads(out.stdout)['key']}"
    server = ServerProcess(env, tmp / "serve.log", "--no-runner").start()
    try:
        yield server, {**headers, **server.headers}, tmp
    finally:
        server.stop()


def seed(url: str, headers: dict[str, str], database_url: str) -> dict[str, str]:
    """A run, which no request can make: the run operations get its ids."""
    api = httpx.Client(base_url=f"{url}/api", headers=headers, timeout=30)

    def made(response: httpx.Response) -> dict:
        assert response.status_code == 201, response.text
        return response.json()

    cid = made(api.post("/companies", json={"name": "Runs"}))["id"]
    agent = made(api.post(f"/companies/{cid}/agents", json={"name": "a", "provider": "fixture"}))
    issue = made(api.post(f"/companies/{cid}/issues", json={"title": "t"}))
    run = asyncio.run(finished_run(database_url, cid, agent["id"], issue["id"]))
    return {"company_id": cid, "run_id": run}


async def finished_run(database_url: str, company_id: str, agent_id: str, issue_id: str) -> str:
    """A run row (runs are made by the engine; none runs here)."""
    from paperclip.db.engine import create_engine, create_session_factory
    from paperclip.models import Run, RunStatus

    engine = create_engine(database_url, pool_size=1)
    try:
        async with create_session_factory(engine).begin() as session:
            run = Run(
                id=uuid.uuid4(),
                company_id=uuid.UUID(company_id),
                agent_id=uuid.UUID(agent_id),
                issue_id=uuid.UUID(issue_id),
                provider="fixture",
                status=RunStatus.SUCCEEDED,
            )
            session.add(run)
        return str(run.id)
    finally:
        await engine.dispose()


def config(ids: dict[str, str]) -> str:
    return "\n".join(
        [
            "[generation]",
            "allow-x00 = false",
            "",
            "[checks.negative_data_rejection]",
            'expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", '
            '"422", "428", "429", "5xx"]',
            "",
            "[[operations]]",
            f"include-path-regex = '{LISTS}'",
            'include-method-regex = "^(GET|HEAD)$"',
            "checks.positive_data_acceptance.expected-statuses = "
            '["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]',
            "",
            "[[operations]]",
            "include-path-regex = '(/agents|/issues|/issues/\\{issue_id\\}|/runs|/wakeup|/holds|/steer|/retry|/dismiss|/conversations|/interactions|/projects|/projects/\\{project_id\\}|/budgets|/costs|/cost-events|/routines|/routines/\\{routine_id\\}|/run|/webhook|/webhook-secret)$'",
            "checks.positive_data_acceptance.expected-statuses = "
            '["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]',
            "",
            "[[operations]]",
            "include-path-regex = '/agents/\\{agent_id\\}$'",
            'include-method-regex = "^PATCH$"',
            "checks.positive_data_acceptance.expected-statuses = "
            '["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]',
            "",
            # An issue's workspace exists once a run made it (docs/workspaces.md): the stateful
            # phase would take it for a part of the issue it just made.
            "[[operations]]",
            "include-path-regex = '/issues/\\{issue_id\\}/workspace'",
            "phases.stateful.enabled = false",
            "",
            # The run operations read the seeded run; the stateful phase, which would give
            # them a company of its own making, leaves them out.
            "[[operations]]",
            "include-path-regex = '/runs/\\{run_id\\}'",
            f'parameters = {{ "path.company_id" = "{ids["company_id"]}", '
            f'"path.run_id" = "{ids["run_id"]}" }}',
            "phases.stateful.enabled = false",
        ]
    )


def test_every_operation_passes_every_check(served, paperclip_database_url):
    server, headers, tmp = served
    ids = seed(server.url, headers, paperclip_database_url)
    config_file = tmp / "schemathesis.toml"
    config_file.write_text(config(ids))
    junit = tmp / "junit.xml"
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file",
        str(config_file),
        "run",
        f"{server.url}/api/docs/openapi.json",
        "--checks",
        "all",
        "--seed",
        str(SEED),
        "--max-examples",
        str(MAX_EXAMPLES),
        "--workers",
        "1",
        "--report",
        "junit",
        "--report-junit-path",
        str(junit),
        "--no-color",
        *(arg for name, value in headers.items() for arg in ("-H", f"{name}: {value}")),
    ]
    # Its own folder: schemathesis keeps a cache in the working directory.
    run = subprocess.run(command, capture_output=True, text=True, timeout=RUN_LIMIT, cwd=tmp)
    output = run.stdout + run.stderr
    (tmp / "schemathesis.log").write_text(output)

    suite = ET.parse(junit).getroot()
    tested = {case.get("name") for case in suite.iter("testcase")} - {"Stateful tests"}
    expected = expected_operations()
    assert tested == expected, output[-3000:]  # every operation, each exercised
    assert len(expected) >= 40  # and the app did not lose its routes either
    assert (suite.get("failures"), suite.get("errors")) == ("0", "0"), output[-6000:]
    assert run.returncode == 0, output[-6000:]
    # No server error, answered or only logged: the whole log, not its tail.
    log = (tmp / "serve.log").read_text()
    assert "Traceback" not in log and " ERROR " not in log, log[-6000:]
