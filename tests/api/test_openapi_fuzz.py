"""The whole /api surface, fuzzed from its own OpenAPI schema against a real server process.

Checks: no 5xx, every response conforms to the schema of its status, and
content types are the declared ones. Half the cases target a real company so
bodies reach the services instead of stopping at a 404.
"""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from tests.support.processes import ServerProcess

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def server(database_url, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    env = {
        "PAPERCLIP_DATABASE_URL": database_url,
        "PAPERCLIP_DATA_DIR": str(tmp / "data"),
        "PAPERCLIP_PORT": "0",
    }
    proc = ServerProcess(env, tmp / "serve.log").start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def seeded(server):
    company = httpx.post(f"{server.url}/api/companies", json={"name": "Fuzz"}).json()
    agent = httpx.post(
        f"{server.url}/api/companies/{company['id']}/agents",
        json={"name": "a", "provider": "codex"},
    ).json()
    issue = httpx.post(
        f"{server.url}/api/companies/{company['id']}/issues", json={"title": "t"}
    ).json()
    comment = httpx.post(
        f"{server.url}/api/companies/{company['id']}/issues/{issue['id']}/comments",
        json={"body": "b"},
    ).json()
    return {
        "company_id": company["id"],
        "agent_id": agent["id"],
        "issue_id": issue["id"],
        "comment_id": comment["id"],
    }


def load_schema():
    from paperclip.app import create_app
    from paperclip.settings import Settings

    # Building the app reads no database: the URL is only stored.
    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused"))
    return schemathesis.openapi.from_dict(app.openapi_schema.to_schema())


schema = load_schema()


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_fuzz(case, seeded, server):
    if case.path_parameters and hash(repr(case.body)) % 2 == 0:
        for name in case.path_parameters:
            if name in seeded:
                case.path_parameters[name] = seeded[name]
    if (
        case.operation.method.upper() == "DELETE"
        and case.operation.path == "/api/companies/{company_id}"
    ):
        if case.path_parameters.get("company_id") == seeded["company_id"]:
            return  # keep the seeded company for the other cases
    response = case.call(base_url=server.url)
    case.validate_response(
        response, checks=[not_a_server_error, response_schema_conformance, content_type_conformance]
    )
