"""The runner protocol, version 1: what the control plane and a runner say over the WebSocket.

Every data message carries the sender's ``seq`` (1, 2, 3, ... per sender
stream) and is kept in the sender's outbox until the peer acknowledges it.
Acknowledgements are cumulative (``{"type": "ack", "upto": n}`` means every
message up to ``n`` was processed durably). After a reconnect each side
replays its outbox from the peer's last acknowledgement, and the receiver
drops any ``seq`` it already processed. See docs/runner-protocol.md.
"""

from __future__ import annotations

import json
from typing import Any

PROTOCOL = "paperclip.runner.v1"
PATH = "/api/runner/v1/connect"

# runner -> control plane
HELLO = "hello"
EVENT = "event"
TOOL_CALL = "tool_call"
TURN_FINISHED = "turn_finished"
STEER_RESULT = "steer_result"

# control plane -> runner
WELCOME = "welcome"
START_TURN = "start_turn"
TOOL_RESULT = "tool_result"
STEER = "steer"
INTERRUPT = "interrupt"
CLOSE = "close"

# both ways
ACK = "ack"
ERROR = "error"

UNSEQUENCED = {HELLO, WELCOME, ACK, ERROR}
"""Control messages: not kept in outboxes, not acknowledged."""

# WebSocket close codes (4000-4999 are the application's)
CLOSE_UNAUTHORIZED = 4401
CLOSE_PROTOCOL_ERROR = 4400
CLOSE_REPLACED = 4409
"""Another connection of the same runner took over."""

MAX_MESSAGE_BYTES = 4 * 1024 * 1024


class ProtocolError(Exception):
    """A message that does not follow the protocol."""


def encode(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"), default=str)


def decode(raw: str | bytes) -> dict[str, Any]:
    if len(raw) > MAX_MESSAGE_BYTES:
        raise ProtocolError("message too large")
    try:
        message = json.loads(raw)
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {exc}") from exc
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError("a message is a JSON object with a string 'type'")
    if message["type"] not in UNSEQUENCED and not isinstance(message.get("seq"), int):
        raise ProtocolError(f"a {message['type']!r} message needs an integer 'seq'")
    return message
