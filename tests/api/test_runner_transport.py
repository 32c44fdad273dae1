"""The runner route's transport after it closed: a send is ``TransportClosed``, never reaching the server.

Under faults a link's sender (the scheduler delivering a start, say) could
send on a socket the control plane had just closed; the ASGI server refused
it (``Unexpected ASGI message 'websocket.send', after sending
'websocket.close'``) and the sender's whole pass failed with a traceback.
"""

from __future__ import annotations

from typing import Any

import pytest
from litestar import Litestar, WebSocket, websocket
from litestar.exceptions import WebSocketDisconnect
from litestar.testing import TestClient

from paperclip.api.runner_ws import WebSocketTransport
from paperclip.engine.transport import TransportClosed

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
