"""The ``notify_webhook`` tool: POST an event to the webhook, and look up its receipts there.

The effect is the receiver's: Paperclip cannot commit it with the saved
result. So every delivery carries the call's command id (``Idempotency-Key``
header and ``command_id`` field), and the receiver is the authority on what
it received: ``GET <url>/receipts/<command id>`` answers 200 with the
receipt, 404 when it never applied that command, anything else (or no
answer) means nobody can tell (``semantic_tool_outcome_unknown``).

Settings (environment of the control plane): ``PAPERCLIP_WEBHOOK_URL``, and
``PAPERCLIP_WEBHOOK_TIMEOUT_SECONDS`` (default 30) for one request.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from paperclip_hookspecs.plugin_tools import ToolAnswer, ToolCall, ToolOutcomeUnknown
from paperclip_hookspecs.receipts import ReceiptStatus, ToolReceipt

NAME = "notify_webhook"
URL_ENV = "PAPERCLIP_WEBHOOK_URL"
TIMEOUT_ENV = "PAPERCLIP_WEBHOOK_TIMEOUT_SECONDS"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "minLength": 1, "maxLength": 100},
        "message": {"type": "string", "minLength": 1, "maxLength": 10_000},
        "command_id": {"type": "string", "minLength": 1, "maxLength": 100},
    },
    "required": ["event", "message"],
    "additionalProperties": False,
}
DESCRIPTION = (
    "Notify the team's webhook of an event (e.g. a deploy request). It acts outside the task: "
    "call it once per event. If a result says the outcome is unknown, check with the team "
    "before you send it again."
)


def _error(code: str, message: str) -> ToolAnswer:
    return ToolAnswer({"error": {"code": code, "message": message}}, is_error=True)


@dataclass(frozen=True, slots=True)
class WebhookHandler:
    """Reads its settings on each call, so a test or an operator can change them."""

    def _url(self) -> str | None:
        return os.environ.get(URL_ENV) or None

    def _timeout(self) -> float:
        return float(os.environ.get(TIMEOUT_ENV, "30"))

    async def call(self, call: ToolCall) -> ToolAnswer:
        url = self._url()
        if url is None:
            return _error("webhook_not_configured", f"{URL_ENV} is not set on the control plane")
        body = json.dumps(
            {
                "command_id": call.command_id,
                "run_id": call.run_id,
                "issue_id": call.issue_id,
                "event": call.arguments["event"],
                "message": call.arguments["message"],
            }
        ).encode()
        request = urllib.request.Request(
            url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Idempotency-Key": call.command_id},
        )
        status, answer = await asyncio.to_thread(self._send, request)
        if status is None:
            return _error("webhook_unreachable", f"the webhook did not answer: {answer}")
        if not 200 <= status < 300:
            return _error("webhook_refused", f"the webhook answered HTTP {status}")
        return ToolAnswer({"delivered": True, "status": status, "response": answer})

    async def find_receipt(self, command_id: str) -> ToolReceipt | None:
        url = self._url()
        if url is None:
            raise ToolOutcomeUnknown(f"{URL_ENV} is not set: the receiver cannot be asked")
        lookup = urllib.request.Request(f"{url.rstrip('/')}/receipts/{quote(command_id, safe='')}")
        status, answer = await asyncio.to_thread(self._send, lookup)
        if status == 404:
            return None
        if status != 200 or not isinstance(answer, dict):
            raise ToolOutcomeUnknown(f"the receipt lookup answered {status}: {answer}")
        return ToolReceipt(
            command_id=command_id,
            status=ReceiptStatus.APPLIED,
            result={"delivered": True, "status": 200, "response": answer},
            state_revision=answer.get("revision"),
        )

    def _send(self, request: urllib.request.Request) -> tuple[int | None, Any]:
        try:
            with urllib.request.urlopen(request, timeout=self._timeout()) as response:
                return response.status, _json(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, _json(exc.read())
        except (OSError, ValueError) as exc:
            return None, str(exc)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw[:200].decode(errors="replace")
