"""Every answer carries ``X-Content-Type-Options: nosniff`` (JSON ones lacked it): a browser
never reads an answer as another type than it says, whoever wrote it (a handler, an error
handler, the door)."""

from __future__ import annotations

import pytest

NOSNIFF = "nosniff"


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        ("GET", "/api/health", {}, 200),
        ("GET", "/api/companies", {}, 200),
        ("POST", "/api/companies", {"json": {"name": "Sniffed"}}, 201),
        ("GET", "/api/companies/00000000-0000-0000-0000-000000000000", {}, 404),
        ("GET", "/api/nothing-here", {}, 404),
        ("POST", "/api/companies", {"json": {"name": 7}}, 400),  # the schema
        (
            "POST",
            "/api/companies",
            {"content": b"{", "headers": {"content-type": "application/json"}},
            400,
        ),
        (
            "POST",
            "/api/companies",
            {"content": b"x", "headers": {"content-type": "text/plain"}},
            415,
        ),
        ("GET", "/api/companies", {"headers": {"host": "evil.example"}}, 400),  # the door
        ("GET", "/api/docs/openapi.json", {}, 200),
        ("HEAD", "/api/health", {}, 200),
    ],
)
async def test_every_answer_says_nosniff(paperclip_client, method, path, kwargs, status):
    r = await paperclip_client.request(method, path, **kwargs)
    assert r.status_code == status, r.text
    assert r.headers.get_list("x-content-type-options") == [NOSNIFF]


async def test_the_board_says_it_once(paperclip_client):
    r = await paperclip_client.get("/")
    assert r.status_code == 200
    assert r.headers.get_list("x-content-type-options") == [NOSNIFF]
