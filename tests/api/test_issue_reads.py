"""The issue page's reads (plain SQL) and the per-request key check answer as the ORM path did.

Both were rewritten for throughput (``paperclip.domain.issues.issue_reads``,
``ApiKeyService.authenticate`` and its ``KeyCache``); these pin what they must
keep: company scoping, 404s, paging order and cursors, deleted comments,
revocation at the next request (within a moment when revoked elsewhere), and a
key's use recorded without a write per request.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import text

from paperclip.app import create_app
from paperclip.common.actor import Actor
from paperclip.db.driver import plain_connection
from paperclip.domain.issues.issue_reads import COMMENT_COLUMNS
from paperclip.domain.issues.schemas import CommentOut
from paperclip.domain.keys.api_keys import hash_key
from paperclip.domain.keys.key_cache import CHANNEL, KeyCache
from paperclip.settings import DeploymentMode
from paperclip.testing import running_lifespan


async def comment(client, company_id, issue_id, body):
    r = await client.post(
        f"/api/companies/{company_id}/issues/{issue_id}/comments", json={"body": body}
    )
    assert r.status_code == 201, r.text
    return r.json()


async def test_an_issue_reads_as_it_was_written(paperclip_client, company):
    created = (
        await paperclip_client.post(
            f"/api/companies/{company['id']}/issues",
            json={"title": "Read me", "description": "words", "priority": "high"},
        )
    ).json()
    r = await paperclip_client.get(f"/api/companies/{company['id']}/issues/{created['id']}")
    assert r.status_code == 200 and r.json() == created


async def test_comment_pages_walk_every_comment_once_in_order(
    paperclip_client, company, paperclip_container
):
    issue = (
        await paperclip_client.post(f"/api/companies/{company['id']}/issues", json={"title": "t"})
    ).json()
    url = f"/api/companies/{company['id']}/issues/{issue['id']}/comments"
    assert (await paperclip_client.get(url)).json() == {"items": [], "next_cursor": None}
    written = [
        await comment(paperclip_client, company["id"], issue["id"], f"c{i}") for i in range(5)
    ]
    # Two comments at the same instant: the id breaks the tie, and no page skips one.
    async with paperclip_container.sessions().begin() as session:
        await session.execute(
            text("UPDATE comments SET created_at = :at WHERE id = ANY(:ids)"),
            {
                "at": datetime.fromisoformat(written[2]["created_at"]),
                "ids": [uuid.UUID(written[3]["id"]), uuid.UUID(written[2]["id"])],
            },
        )
    seen, cursor, pages = [], None, 0
    while True:
        page = (
            await paperclip_client.get(
                url, params={"limit": 2} | ({"cursor": cursor} if cursor else {})
            )
        ).json()
        seen += page["items"]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3
    ids = [c["id"] for c in seen]
    assert sorted(ids) == sorted(c["id"] for c in written) and len(set(ids)) == 5
    keys = [(c["created_at"], c["id"]) for c in seen]
    assert keys == sorted(keys, key=lambda k: (datetime.fromisoformat(k[0]), k[1]))
    assert seen[0] == written[0]  # every field, as the write answered it


async def test_a_deleted_comment_is_listed_without_its_body(paperclip_client, company):
    issue = (
        await paperclip_client.post(f"/api/companies/{company['id']}/issues", json={"title": "t"})
    ).json()
    gone = await comment(paperclip_client, company["id"], issue["id"], "regret")
    url = f"/api/companies/{company['id']}/issues/{issue['id']}/comments"
    assert (await paperclip_client.delete(f"{url}/{gone['id']}")).status_code == 200
    (listed,) = (await paperclip_client.get(url)).json()["items"]
    assert listed["id"] == gone["id"] and listed["body"] == "" and listed["deleted_at"]


async def test_another_company_issue_reads_as_missing(paperclip_client, company):
    other = (await paperclip_client.post("/api/companies", json={"name": "Other"})).json()
    theirs = (
        await paperclip_client.post(f"/api/companies/{other['id']}/issues", json={"title": "t"})
    ).json()
    await comment(paperclip_client, other["id"], theirs["id"], "secret")
    for path in (f"/issues/{theirs['id']}", f"/issues/{theirs['id']}/comments"):
        for issue_path in (path, path.replace(theirs["id"], str(uuid.uuid4()))):
            r = await paperclip_client.get(f"/api/companies/{company['id']}{issue_path}")
            assert r.status_code == 404 and r.json()["code"] == "issue_not_found", issue_path
            assert "secret" not in r.text


@pytest.fixture
async def keyed(paperclip_settings, paperclip_container, paperclip_plugin_host):
    """An authenticated app, a company, and a viewer key of it (secret and id)."""
    app = create_app(
        paperclip_settings.model_copy(update={"deployment_mode": DeploymentMode.AUTHENTICATED}),
        paperclip_plugin_host,
        container=paperclip_container,
    )
    _, root = await paperclip_container.api_keys().create(f"root {uuid.uuid4()}")
    async with running_lifespan(app):
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://127.0.0.1",
            headers={"authorization": f"Bearer {root}"},
        ) as client:
            company = (await client.post("/api/companies", json={"name": "Keyed"})).json()
            keys = f"/api/companies/{company['id']}/api-keys"
            made = (await client.post(keys, json={"name": "v", "role": "viewer"})).json()
            yield client, company, made["key"], made["api_key"]["id"]


async def last_used(paperclip_container, key_id):
    async with paperclip_container.sessions()() as session:
        return (
            await session.execute(
                text("SELECT last_used_at FROM api_keys WHERE id = :id"), {"id": uuid.UUID(key_id)}
            )
        ).scalar_one()


async def test_a_key_is_marked_used_at_most_once_a_minute(keyed, paperclip_container):
    client, company, secret, key_id = keyed
    as_viewer = {"authorization": f"Bearer {secret}"}
    assert await last_used(paperclip_container, key_id) is None
    assert (await client.get(f"/api/companies/{company['id']}", headers=as_viewer)).is_success
    first = await last_used(paperclip_container, key_id)
    assert first is not None
    assert (await client.get(f"/api/companies/{company['id']}", headers=as_viewer)).is_success
    assert await last_used(paperclip_container, key_id) == first  # no write per request
    paperclip_container.api_keys().cache.forget()  # as when its entry lapses: read again
    stale = datetime.now(UTC) - timedelta(minutes=2)
    async with paperclip_container.sessions().begin() as session:
        await session.execute(
            text("UPDATE api_keys SET last_used_at = :at WHERE id = :id"),
            {"at": stale, "id": uuid.UUID(key_id)},
        )
    assert (await client.get(f"/api/companies/{company['id']}", headers=as_viewer)).is_success
    assert await last_used(paperclip_container, key_id) > stale + timedelta(minutes=1)


async def test_a_key_revoked_after_use_is_refused_at_its_next_request(keyed):
    client, company, secret, key_id = keyed
    as_viewer = {"authorization": f"Bearer {secret}"}
    url = f"/api/companies/{company['id']}/issues"
    assert (await client.get(url, headers=as_viewer)).status_code == 200
    revoke = f"/api/companies/{company['id']}/api-keys/{key_id}/revoke"
    assert (await client.post(revoke)).status_code == 200
    r = await client.get(url, headers=as_viewer)
    assert r.status_code == 401 and r.json()["code"] == "invalid_api_key"


async def test_a_viewer_key_reads_the_issue_page_but_not_another_company(keyed):
    client, company, secret, _ = keyed
    other = (await client.post("/api/companies", json={"name": "Elsewhere"})).json()
    mine = (
        await client.post(f"/api/companies/{company['id']}/issues", json={"title": "mine"})
    ).json()
    theirs = (
        await client.post(f"/api/companies/{other['id']}/issues", json={"title": "theirs"})
    ).json()
    as_viewer = {"authorization": f"Bearer {secret}"}
    base = f"/api/companies/{company['id']}/issues/{mine['id']}"
    assert (await client.get(base, headers=as_viewer)).json()["title"] == "mine"
    assert (await client.get(f"{base}/comments", headers=as_viewer)).status_code == 200
    for path in (f"/issues/{theirs['id']}", f"/issues/{theirs['id']}/comments"):
        r = await client.get(f"/api/companies/{other['id']}{path}", headers=as_viewer)
        assert r.status_code == 404 and r.json()["code"] == "company_not_found"
    r = await client.get(base, headers={"authorization": "Bearer pck_not-a-key"})
    assert r.status_code == 401 and r.json()["code"] == "invalid_api_key"


async def until(condition, seconds: float = 5.0) -> float:
    """Wait until ``condition()`` holds; how long it took."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < seconds, "timed out"
        await asyncio.sleep(0.01)
    return time.monotonic() - started


async def test_a_key_revoked_elsewhere_is_refused_within_a_moment(keyed, paperclip_container):
    """Another process (the CLI, another replica) revokes: the trigger's NOTIFY makes this one forget."""
    client, company, secret, key_id = keyed
    cache = paperclip_container.api_keys().cache
    await until(lambda: cache.listening)
    as_viewer = {"authorization": f"Bearer {secret}"}
    url = f"/api/companies/{company['id']}"
    assert (await client.get(url, headers=as_viewer)).is_success
    assert cache.get(hash_key(secret)) is not None  # remembered: the next request reads no key
    async with plain_connection(paperclip_container.engine()) as elsewhere:
        await elsewhere.execute(
            "UPDATE api_keys SET revoked_at = now() WHERE id = $1", uuid.UUID(key_id)
        )
    await until(lambda: cache.get(hash_key(secret)) is None, seconds=2.0)
    r = await client.get(url, headers=as_viewer)
    assert r.status_code == 401 and r.json()["code"] == "invalid_api_key"


async def test_nothing_is_remembered_while_the_replica_cannot_hear_of_changes(
    keyed, paperclip_container
):
    client, company, secret, _ = keyed
    cache = paperclip_container.api_keys().cache
    await until(lambda: cache.listening)
    async with plain_connection(paperclip_container.engine()) as admin:
        killed = await admin.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND query LIKE $1",
            f"%LISTEN%{CHANNEL}%",
        )
    assert killed >= 1
    await until(lambda: not cache.listening)
    url = f"/api/companies/{company['id']}"
    assert (await client.get(url, headers={"authorization": f"Bearer {secret}"})).is_success
    assert cache.get(hash_key(secret)) is None  # read, not remembered
    await until(lambda: cache.listening)  # the listener comes back by itself


async def test_the_local_mode_listens_for_no_key(paperclip_client, paperclip_container):
    """It checks no API key, so it holds no connection listening for changes to them."""
    assert (await paperclip_client.get("/api/health")).is_success  # started
    await asyncio.sleep(0.5)  # an authenticated app listens within milliseconds
    assert not paperclip_container.api_keys().cache.listening


async def test_only_a_change_to_a_key_notifies(keyed, paperclip_container):
    _, _, _, key_id = keyed
    heard: asyncio.Queue[str] = asyncio.Queue()

    def on_notify(_connection, _pid, channel, _payload):
        heard.put_nowait(channel)

    async with plain_connection(paperclip_container.engine()) as listener:
        await listener.add_listener(CHANNEL, on_notify)
        try:
            async with plain_connection(paperclip_container.engine()) as writer:
                mark = "UPDATE api_keys SET last_used_at = now() WHERE id = $1"
                await writer.execute(mark, uuid.UUID(key_id))
                with pytest.raises(TimeoutError):  # a request's use mark: nothing to forget
                    await asyncio.wait_for(heard.get(), 0.3)
                revoke = "UPDATE api_keys SET revoked_at = now() WHERE id = $1"
                await writer.execute(revoke, uuid.UUID(key_id))
                assert await asyncio.wait_for(heard.get(), 5) == CHANNEL
        finally:
            await listener.remove_listener(CHANNEL, on_notify)


def test_a_comment_row_is_in_the_order_of_the_answer_fields():
    """``CommentOut.of_columns`` takes the row by position."""
    assert COMMENT_COLUMNS.split(", ") == list(CommentOut.__struct_fields__)


def test_a_read_begun_before_a_change_is_not_remembered():
    cache = KeyCache(keep_seconds=60)
    actor = Actor(type="api_key", id="k", company_id=uuid.uuid4())
    cache.remember("h", actor, cache.generation)
    assert cache.get("h") is None  # not listening: nothing is remembered
    cache.listening = True
    began = cache.generation
    cache.forget()  # a key changed while the read was under way
    cache.remember("h", actor, began)
    assert cache.get("h") is None
    cache.remember("h", actor, cache.generation)
    assert cache.get("h") is actor
    lapsing = KeyCache(keep_seconds=0)
    lapsing.listening = True
    lapsing.remember("h", actor, lapsing.generation)
    assert lapsing.get("h") is None  # lapsed: read again
