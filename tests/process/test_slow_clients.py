"""A client that dribbles its request is answered 408 and closed; slow answers are not cut.

uvicorn closes only idle kept-alive connections: the trust review held
connections for 60 s and more by sending nothing, or a header a byte at a
time, or a body that never ended.
"""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from tests.support.processes import ServerProcess
from tests.support.served import make_key, running_run, serve

pytestmark = [pytest.mark.process, pytest.mark.timeout(300)]

HEADERS, BODY = 1.0, 2.0
"""The deadlines the server under test is given (seconds)."""
PATIENCE = 15.0
"""How long a test waits for the server to close (the deadlines and a wide margin)."""


@pytest.fixture(scope="module")
def server(paperclip_database_url, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("slow")
    served, env = serve(
        paperclip_database_url,
        tmp,
        PAPERCLIP_HEADER_TIMEOUT_SECONDS=str(HEADERS),
        PAPERCLIP_BODY_TIMEOUT_SECONDS=str(BODY),
    )
    try:
        yield served, make_key(env, tmp)
    finally:
        served.stop()


async def dribble(server: ServerProcess, parts: list[bytes], gap: float) -> tuple[bytes, float]:
    """Send ``parts`` ``gap`` seconds apart (while the server listens); everything it
    answered until it closed, and after how long."""
    host, port = server.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    started = time.monotonic()

    async def send() -> None:
        for part in parts:
            if writer.is_closing():
                return
            writer.write(part)
            await asyncio.sleep(gap)  # the client under test is slow on purpose

    sending = asyncio.create_task(send())
    try:
        answer = await asyncio.wait_for(reader.read(), PATIENCE)  # until the server closes
    finally:
        sending.cancel()
        writer.close()
    return answer, time.monotonic() - started


def refused_408(answer: bytes) -> str:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"connection: close" in head.lower()
    return json.loads(body)["code"]


def test_a_connection_that_sends_nothing_is_closed(server):
    answer, took = asyncio.run(dribble(server[0], [], 0))
    assert refused_408(answer) == "request_timeout"
    assert took < HEADERS + 5


def test_headers_sent_a_byte_at_a_time_are_cut_off(server):
    request = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n"
    answer, took = asyncio.run(dribble(server[0], [bytes([b]) for b in request], 0.1))
    assert refused_408(answer) == "request_timeout"
    assert took < HEADERS + 5


def test_a_body_that_never_ends_is_cut_off(server):
    served, key = server
    head = (
        b"POST /api/companies HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + key.encode() + b"\r\nContent-Length: 1000\r\n\r\n"
    )
    answer, took = asyncio.run(dribble(served, [head, *([b" "] * 100)], 0.2))
    assert refused_408(answer) == "request_timeout"
    assert BODY <= took < BODY + 5
    # No one is left to answer: nothing is logged as an error either.
    assert "Traceback" not in served.tail(400) and "ERROR" not in served.tail(400)


def test_an_upload_past_the_deadline_reads_its_408_rather_than_a_reset(server):
    """Like most clients, an upload reads its answer when it has sent its body. The
    close after a 408 lingers for it: closed with the client's bytes unread, the
    connection would be reset, and the reset takes the 408 with it."""
    served, key = server
    head = (
        b"POST /api/companies HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + key.encode() + b"\r\nContent-Length: 100000\r\n\r\n"
    )

    async def upload() -> bytes:
        host, port = served.url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(head)
        until = time.monotonic() + BODY + 1  # past the deadline, inside the linger
        try:
            while time.monotonic() < until:
                writer.write(b" ")
                await asyncio.sleep(0.01)  # the client under test is slow on purpose
            return await asyncio.wait_for(reader.read(), PATIENCE)
        finally:
            writer.close()

    async def uploads() -> list[bytes]:
        return await asyncio.gather(*(upload() for _ in range(4)))

    for answer in asyncio.run(uploads()):
        assert refused_408(answer) == "request_timeout"


def test_a_kept_alive_connection_s_next_request_has_the_same_deadline(server):
    first = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    slow = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # headers never finished
    answer, _ = asyncio.run(dribble(server[0], [first, *[bytes([b]) for b in slow]], 0.2))
    assert answer.startswith(b"HTTP/1.1 200")
    assert answer.count(b"HTTP/1.1 408") == 1


def test_prompt_requests_and_a_long_stream_are_not_cut(server, paperclip_database_url):
    served, key = server
    auth = {"Authorization": f"Bearer {key}"}
    paths = asyncio.run(running_run(paperclip_database_url, served.url, key))
    with httpx.Client(base_url=served.url, headers=auth, timeout=30) as client:
        made = client.post("/api/companies", json={"name": "On time"})
        assert made.status_code == 201
        started = time.monotonic()
        # A stream lasts its `wait`, well past both deadlines.
        with client.stream("GET", paths["run"].replace("wait=300", "wait=4")) as stream:
            assert stream.status_code == 200
            body = b"".join(stream.iter_bytes())
        assert time.monotonic() - started >= 4
        assert b"paperclip run events" in body
