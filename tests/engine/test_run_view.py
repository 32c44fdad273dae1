"""What a run did, for the hooks (``RunView``) and over HTTP (the tool-call journal).

Calls go through the engine's own pipeline (admitted, executed, settled) on a
runner link in memory; a completion guard registered on the test's plugin host
is asked by the real ``finish``, and the journal is read back over the API.
"""

from __future__ import annotations

import uuid
from types import MappingProxyType

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.completion import (
    CompletionCheck,
    CompletionCorrection,
    CompletionRefusal,
    CompletionStage,
)
from paperclip_hookspecs.runs import RunView, ToolCallStatus
from sqlalchemy import select

from paperclip.db.driver import driver_connection
from paperclip.engine.logs import journal
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.models import Run, ToolCall
from tests.engine.controlled import controlled_runs, pipeline_with_link

INSTANCE = "replica-view"

pytestmark = pytest.mark.usefixtures("fixture_kind")


class PassingTestsGuard:
    """Refuses ``finish`` until the run posted a comment saying "tests pass"; keeps what it saw."""

    def __init__(self) -> None:
        self.seen: list[CompletionCheck] = []

    @hookimpl
    def paperclip_check_completion(self, check: CompletionCheck) -> CompletionRefusal | None:
        self.seen.append(check)
        assert check.run is not None
        if any("tests pass" in c.body.lower() for c in check.run.comments):
            return None
        return CompletionRefusal(
            code="tests_not_reported",
            reason="tests",
            message="Run the tests and post a comment saying 'tests pass' first.",
            correction=CompletionCorrection(instruction="post_comment", message="Post it."),
        )


@pytest.fixture
def guard(paperclip_register_plugin):
    plugin = PassingTestsGuard()
    paperclip_register_plugin(plugin, name="tests-pass")
    return plugin


@pytest.fixture
async def run_id(paperclip_client, paperclip_container, guard):
    [run] = await controlled_runs(
        paperclip_client, paperclip_container, [uuid.uuid4()], instance=INSTANCE, epoch=1
    )
    return run


@pytest.fixture
async def calls(paperclip_container, paperclip_plugin_host, run_id):
    """``await calls((tool, arguments), ...)``: admit and dispatch one batch through the engine."""
    ownership = RunOwnership()
    ownership.own(run_id, 1)
    sessions = paperclip_container.sessions()
    pipeline, link, _ = await pipeline_with_link(
        paperclip_container, paperclip_plugin_host, ownership, instance=INSTANCE
    )

    async def dispatch(*asked: tuple[str, dict]) -> list[ToolCall]:
        requests = [
            journal.Request(run_id, 1, uuid.uuid4().hex, tool, arguments)
            for tool, arguments in asked
        ]
        async with sessions() as session:
            admitted = await journal.admit_many(
                await driver_connection(session), requests, instance=INSTANCE
            )
        ids = [call_id for call_id, _ in admitted.values()]
        await pipeline.execute_batch(link.runner_id, [(run_id, i, None) for i in ids])
        async with sessions() as session:
            rows = await session.execute(
                select(ToolCall).where(ToolCall.id.in_(ids)).order_by(ToolCall.id)
            )
            return list(rows.scalars())

    return dispatch


FINISH = ("finish", {"outcome": "done", "summary": "Fixed."})


async def test_paperclip_check_completion_a_guard_sees_the_runs_comments_and_calls(
    calls, guard, run_id, paperclip_container
):
    [refused] = await calls(FINISH)
    assert refused.is_error and refused.result["error"]["code"] == "tests_not_reported"
    assert refused.result["error"]["correction"]["instruction"] == "post_comment"

    await calls(
        ("post_comment", {"body": "Ran them: TESTS PASS."}), ("report_progress", {"summary": "ok"})
    )
    [accepted] = await calls(FINISH)
    assert not accepted.is_error and accepted.result["accepted"] is True

    first, last = guard.seen
    assert first.stage is CompletionStage.FEEDBACK
    assert isinstance(first.run, RunView)
    assert first.run.binding.run_id == str(run_id) and first.run.comments == ()
    # The finish being checked is journaled already, still pending.
    [asking] = first.run.tool_calls
    assert (asking.tool, asking.status, asking.result) == ("finish", ToolCallStatus.PENDING, None)

    view = last.run
    assert view is not None and (view.comments_omitted, view.tool_calls_omitted) == (0, 0)
    [comment] = view.comments
    assert comment.body == "Ran them: TESTS PASS." and not comment.edited
    assert [(c.tool, c.status, c.is_error) for c in view.tool_calls] == [
        ("finish", ToolCallStatus.SETTLED, True),
        ("post_comment", ToolCallStatus.SETTLED, False),
        ("report_progress", ToolCallStatus.SETTLED, False),
        ("finish", ToolCallStatus.PENDING, False),
    ]
    earlier = view.calls_of("finish")[0]
    assert earlier.error_code == "tests_not_reported"
    posted = view.calls_of("post_comment")[0]
    assert posted.result is not None and posted.result["comment_id"] == comment.id
    assert posted.arguments == {"body": "Ran them: TESTS PASS."}
    # Frozen all the way down: a guard cannot change what the next guard sees.
    assert isinstance(posted.result, MappingProxyType)
    with pytest.raises(TypeError):
        posted.result["receipt"]["outcome"] = "forged"  # type: ignore[index]

    async with paperclip_container.sessions()() as session:
        assert (await session.get(Run, run_id)).result["outcome"] == "done"


async def test_the_tool_call_journal_is_read_over_http_in_pages(
    calls, run_id, paperclip_client, paperclip_container
):
    await calls(
        FINISH, ("report_progress", {"summary": "one"}), ("report_progress", {"summary": "two"})
    )
    async with paperclip_container.sessions()() as session:
        company_id = (await session.get(Run, run_id)).company_id
    runs = f"/api/companies/{company_id}/runs"
    url = f"{runs}/{run_id}/tool-calls"

    first = (await paperclip_client.get(url, params={"limit": 2})).json()
    second = (
        await paperclip_client.get(url, params={"limit": 2, "cursor": first["next_cursor"]})
    ).json()
    assert second["next_cursor"] is None
    items = first["items"] + second["items"]
    assert [(i["tool"], i["status"], i["is_error"]) for i in items] == [
        ("finish", "settled", True),
        ("report_progress", "settled", False),
        ("report_progress", "settled", False),
    ]
    assert items[0]["result"]["error"]["code"] == "tests_not_reported"
    assert items[1]["arguments"] == {"summary": "one"}
    assert items[1]["result"]["receipt"]["outcome"] == "applied"
    assert items[1]["admitted_by"] == INSTANCE and items[1]["admitted_epoch"] == 1
    assert items[1]["settled_epoch"] == 1 and items[1]["settled_at"]

    only = (await paperclip_client.get(url, params={"tool": "finish"})).json()
    assert [i["call_id"] for i in only["items"]] == [items[0]["call_id"]]

    forged = await paperclip_client.get(url, params={"cursor": first["next_cursor"][:-3] + "AAA"})
    assert forged.status_code == 422 and forged.json()["code"] == "invalid_cursor"
    elsewhere = await paperclip_client.get(runs, params={"cursor": first["next_cursor"]})
    assert elsewhere.status_code == 422 and elsewhere.json()["code"] == "invalid_cursor"
    missing = await paperclip_client.get(f"{runs}/{uuid.uuid4()}/tool-calls")
    assert missing.status_code == 404 and missing.json()["code"] == "run_not_found"


async def test_the_tool_call_journal_is_in_the_openapi_document(paperclip_client):
    paths = (await paperclip_client.get("/api/docs/openapi.json")).json()["paths"]
    listing = paths["/api/companies/{company_id}/runs/{run_id}/tool-calls"]["get"]
    assert {p["name"] for p in listing["parameters"]} >= {"tool", "cursor", "limit"}
    assert "tool journal" in listing["description"]
    assert set(listing["responses"]) >= {"200", "404"}
