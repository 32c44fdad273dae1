"""Page cursors are signed and bound to their list: altered or moved, they are refused."""

from __future__ import annotations


async def walk(client, url, **params):
    seen, cursor = [], None
    while True:
        page = (
            await client.get(
                url, params={"limit": 2, **params} | ({"cursor": cursor} if cursor else {})
            )
        ).json()
        seen += [item["id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            return seen


async def first_cursor(client, url):
    return (await client.get(url, params={"limit": 1})).json()["next_cursor"]


async def test_a_cursor_works_only_on_its_own_list(paperclip_client, company):
    other = (await paperclip_client.post("/api/companies", json={"name": "Other"})).json()
    for cid in (company["id"], other["id"]):
        for i in range(3):
            await paperclip_client.post(f"/api/companies/{cid}/issues", json={"title": f"t{i}"})
    issues = f"/api/companies/{company['id']}/issues"
    assert len(await walk(paperclip_client, issues)) == 3

    cursor = await first_cursor(paperclip_client, issues)
    for elsewhere in (
        f"/api/companies/{other['id']}/issues",  # the same list of another company
        f"/api/companies/{company['id']}/agents",  # another list
        "/api/companies",
    ):
        r = await paperclip_client.get(elsewhere, params={"cursor": cursor})
        assert r.status_code == 422 and r.json()["code"] == "invalid_cursor", elsewhere
        assert r.json()["details"] == [
            {"source": "query", "field": "cursor", "message": r.json()["message"]}
        ]


async def test_an_altered_cursor_is_refused(paperclip_client, company):
    for i in range(2):
        await paperclip_client.post("/api/companies", json={"name": f"Co {i}"})
    cursor = await first_cursor(paperclip_client, "/api/companies")
    payload, mac = cursor.split(".")
    for forged in (
        f"{payload[:-2]}AA.{mac}",
        f"{payload}.{mac[:-2]}AA",
        payload,
        "garbage!",
        "",
    ):
        r = await paperclip_client.get("/api/companies", params={"cursor": forged, "limit": 1})
        if forged == "":
            assert r.status_code == 200  # no cursor: the first page
            continue
        assert r.status_code == 422 and r.json()["code"] == "invalid_cursor", forged
