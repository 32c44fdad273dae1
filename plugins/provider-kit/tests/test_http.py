"""The kit's HTTP server on uvicorn: JSON, raw and event-stream answers, over real sockets."""

from __future__ import annotations

import asyncio
import logging
import signal

import httpx
from paperclip_provider_kit.http import MAX_BODY, Request, Response, serve


async def handler(request: Request) -> Response:
    if request.path == "/json":
        return Response(
            201, {"method": request.method, "query": request.query, "body": request.json()}
        )
    if request.path == "/raw":
        return Response(200, raw=b"<ok/>", headers={"Content-Type": "text/xml", "X-Seen": "1"})
    if request.path == "/auth":
        return Response(200, {"user": request.basic_auth()})
    if request.path == "/events":
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        for chunk in (b"data: one\n\n", b"data: two\n\n", None):
            queue.put_nowait(chunk)
        return Response(stream=queue)
    return Response(404, {"error": "not found"})


async def test_answers_json_raw_and_a_stream_then_closes() -> None:
    server = await serve(handler, "127.0.0.1", 0)
    base = f"http://127.0.0.1:{server.port}"
    try:
        async with httpx.AsyncClient(base_url=base) as client:
            posted = await client.post("/json?a=1", json={"x": 1})
            raw = await client.get("/raw")
            auth = await client.get("/auth", auth=("opencode", "secret"))
            missing = await client.get("/nowhere")
            async with client.stream("GET", "/events") as response:
                streamed = [line async for line in response.aiter_lines() if line]
            too_big = await client.post("/json", content=b"x" * (MAX_BODY + 1))
    finally:
        await server.close()

    assert (posted.status_code, posted.json()) == (
        201,
        {"method": "POST", "query": "a=1", "body": {"x": 1}},
    )
    assert posted.headers["content-type"] == "application/json"
    assert (raw.content, raw.headers["content-type"], raw.headers["x-seen"]) == (
        b"<ok/>",
        "text/xml",
        "1",
    )
    assert auth.json() == {"user": ["opencode", "secret"]}
    assert missing.status_code == 404
    assert streamed == ["data: one", "data: two"]
    assert too_big.status_code == 413
    async with httpx.AsyncClient() as client:
        try:
            await client.get(f"{base}/json")
        except httpx.ConnectError:
            closed = True
        else:
            closed = False
    assert closed


async def test_the_server_leaves_the_process_signals_and_logging_alone() -> None:
    before = signal.getsignal(signal.SIGTERM)
    handlers = {name: list(logging.getLogger(name).handlers) for name in ("", "uvicorn")}
    server = await serve(handler, "127.0.0.1", 0)
    try:
        async with httpx.AsyncClient() as client:
            await client.get(f"http://127.0.0.1:{server.port}/raw")
        assert signal.getsignal(signal.SIGTERM) is before
        assert {name: logging.getLogger(name).handlers for name in handlers} == handlers
    finally:
        await server.close()
