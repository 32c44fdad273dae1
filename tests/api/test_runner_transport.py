"""The runner route's transport after it closed: a send is ``TransportClosed``, never reaching the server.

Under faults a link's sender (the scheduler delivering a start, say) could
send on a socket the control plane had just closed; the ASGI server refused
it (``Unexpected ASGI message 'websocket.send', after sending
'websocket.close'``) and the sender's whole pass failed with a traceback. Likewise when the runner's
side left first: uvicorn raises ``ClientDisconnected`` for the send.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
import uvicorn
import websockets
from litestar import Litestar, WebSocket, websocket
from litestar.exceptions import WebSocketDisconnect
from litestar.testing import TestClient

from paperclip.api.runner_ws import WebSocketTransport
from paperclip.engine.links.transport import TransportClosed

seen: list[str] = []


@websocket("/t")
async def closes_then_sends(socket: WebSocket[Any, Any, Any]) -> None:
    await socket.accept()
    transport = WebSocketTransport(socket)
    await transport.close(1013, "going")
    await transport.close(1013, "again")  # a second close is a no-op
    try:
        await transport.send("late")
    except TransportClosed:
        seen.append("transport_closed")


def test_a_send_after_this_side_closed_is_transport_closed():
    seen.clear()
    with TestClient(Litestar([closes_then_sends])) as client, client.websocket_connect("/t") as ws:
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_text()
        assert closed.value.code == 1013
    assert seen == ["transport_closed"]


@websocket("/late")
async def sends_after_the_client_left(socket: WebSocket[Any, Any, Any]) -> None:
    await socket.accept()
    transport = WebSocketTransport(socket)
    await left.wait()
    await asyncio.sleep(0.2)  # the server has seen the client's close by now
    try:
        await transport.send("late")
    except TransportClosed:
        seen.append("transport_closed")
    finally:
        done.set()


left = asyncio.Event()
done = asyncio.Event()


async def test_a_send_after_the_client_left_is_transport_closed_under_uvicorn():
    """uvicorn (its websockets implementation) raises ``ClientDisconnected``, an
    ``OSError``, for a send after the client closed: the sender must see a closed
    transport, not fail with a traceback."""
    seen.clear()
    left.clear()
    done.clear()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    config = uvicorn.Config(
        Litestar([sends_after_the_client_left]),
        ws="websockets",
        log_level="warning",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    port = sock.getsockname()[1]
    try:
        async with websockets.connect(f"ws://127.0.0.1:{port}/late"):
            pass  # connect, then close at once
        left.set()
        await asyncio.wait_for(done.wait(), 10)
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 10)
        sock.close()
    assert seen == ["transport_closed"]
