"""The board's files and the run event stream, over HTTP (no browser): headers, bounds, resume."""

from __future__ import annotations

import json
import uuid

import pytest

from paperclip.models import Run, RunEvent


async def make_run(client, container, status: str, events: int) -> tuple[str, str]:
    company = (
        await client.post("/api/companies", json={"name": f"S{uuid.uuid4().hex[:6]}"})
    ).json()
    cid = company["id"]
    agent = (
        await client.post(f"/api/companies/{cid}/agents", json={"name": "a", "provider": "fixture"})
    ).json()
    issue = (await client.post(f"/api/companies/{cid}/issues", json={"title": "t"})).json()
    async with container.sessions().begin() as session:
        run = Run(
            id=uuid.uuid4(),
            company_id=uuid.UUID(cid),
            agent_id=uuid.UUID(agent["id"]),
            issue_id=uuid.UUID(issue["id"]),
            provider="fixture",
            status=status,
        )
        session.add(run)
        await session.flush()
        for seq in range(1, events + 1):
            session.add(
                RunEvent(
                    company_id=run.company_id,
                    run_id=run.id,
                    seq=seq,
                    type="item/completed",
                    payload={"n": seq},
                    source_instance="test",
                    source_seq=seq,
                )
            )
    return cid, str(run.id)


def parse_sse(text: str) -> list[dict]:
    """The stream's messages: each a dict of its fields (data decoded as JSON)."""
    messages = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
        if "data" in fields:
            fields["data"] = json.loads(fields["data"])
            messages.append(fields)
    return messages


async def test_the_page_and_its_files_carry_a_strict_policy(paperclip_client):
    page = await paperclip_client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    # Every asset the page names is served by the server itself: nothing from elsewhere.
    assert "http" not in page.text.replace("http-equiv", "")
    script = await paperclip_client.get("/board/js/app.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith(
        "text/javascript"
    )
    assert script.headers["content-security-policy"] == policy
    css = await paperclip_client.get("/board/board.css")
    assert css.headers["content-type"].startswith("text/css")


VENDORED = {
    "/board/vendor/marked/marked.esm.js": ("marked v18.2.1", "vendor/marked/LICENSE"),
    "/board/vendor/dompurify/purify.es.mjs": ("DOMPurify 3.4.18", "vendor/dompurify/LICENSE"),
    "/board/vendor/highlight/highlight.min.js": (
        "Highlight.js v11.12.0",
        "vendor/highlight/LICENSE",
    ),
}


@pytest.mark.parametrize("path", sorted(VENDORED))
async def test_the_vendored_libraries_are_served_as_scripts_with_their_licence(
    paperclip_client, path
):
    """The board's libraries come from the server (no CDN), as JavaScript, each with its
    licence header kept and its licence file shipped beside it."""
    header, licence = VENDORED[path]
    r = await paperclip_client.get(path)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/javascript")
    assert header in r.text[:600]
    from paperclip.api.board import BOARD_DIR

    assert (BOARD_DIR / licence).is_file()


@pytest.mark.parametrize(
    "path",
    [
        "/board/../api/board.py",
        "/board/%2e%2e/%2e%2e/app.py",
        "/board/js",
        "/board/nope.js",
        "/board/x.py",
    ],
)
async def test_only_the_board_own_files_are_served(paperclip_client, path):
    r = await paperclip_client.get(path)
    assert r.status_code == 404, (path, r.text[:200])
    assert r.json()["code"] == "not_found"


async def test_a_finished_run_streams_its_log_then_ends(paperclip_client, paperclip_container):
    cid, rid = await make_run(paperclip_client, paperclip_container, "succeeded", 3)
    r = await paperclip_client.get(f"/api/companies/{cid}/runs/{rid}/events/stream")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    messages = parse_sse(r.text)
    assert [(m["event"], m.get("id")) for m in messages] == [
        ("run_event", "1"),
        ("run_event", "2"),
        ("run_event", "3"),
        ("end", None),
    ]
    assert messages[1]["data"]["seq"] == 2 and messages[1]["data"]["payload"] == {"n": 2}
    assert messages[-1]["data"] == {"status": "succeeded", "last_seq": 3}
    assert "retry: 1000" in r.text


async def test_a_reconnecting_client_gets_only_what_it_missed(
    paperclip_client, paperclip_container
):
    cid, rid = await make_run(paperclip_client, paperclip_container, "succeeded", 5)
    url = f"/api/companies/{cid}/runs/{rid}/events/stream"
    resumed = parse_sse((await paperclip_client.get(url, headers={"Last-Event-ID": "3"})).text)
    assert [m.get("id") for m in resumed] == ["4", "5", None]
    # A reconnecting client keeps its first URL and adds Last-Event-ID: the later one counts.
    both = parse_sse(
        (
            await paperclip_client.get(url, params={"after_seq": 1}, headers={"Last-Event-ID": "4"})
        ).text
    )
    assert [m.get("id") for m in both] == ["5", None]
    query = parse_sse((await paperclip_client.get(url, params={"after_seq": 4})).text)
    assert [m.get("id") for m in query] == ["5", None]


async def test_a_live_run_stream_is_bounded_by_wait(paperclip_client, paperclip_container):
    cid, rid = await make_run(paperclip_client, paperclip_container, "running", 2)
    r = await paperclip_client.get(
        f"/api/companies/{cid}/runs/{rid}/events/stream", params={"wait": 0}
    )
    # No end event: the run goes on, and the client reconnects from seq 2.
    assert [(m["event"], m.get("id")) for m in parse_sse(r.text)] == [
        ("run_event", "1"),
        ("run_event", "2"),
    ]


async def test_stream_refusals_are_answered_before_streaming(paperclip_client, paperclip_container):
    cid, rid = await make_run(paperclip_client, paperclip_container, "running", 1)
    other, _ = await make_run(paperclip_client, paperclip_container, "running", 1)
    foreign = await paperclip_client.get(f"/api/companies/{other}/runs/{rid}/events/stream")
    assert foreign.status_code == 404 and foreign.json()["code"] == "run_not_found"
    bad = await paperclip_client.get(
        f"/api/companies/{cid}/runs/{rid}/events/stream", headers={"Last-Event-ID": "x"}
    )
    assert bad.status_code == 400 and bad.json()["code"] == "validation_error"
    too_long = await paperclip_client.get(
        f"/api/companies/{cid}/runs/{rid}/events/stream", params={"wait": 301}
    )
    assert too_long.status_code == 400
