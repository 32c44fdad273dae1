"""``notify_webhook`` alone, against a real HTTP receiver on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

import pytest
from paperclip_hookspecs.plugin_tools import PluginTool, ToolCall, ToolOutcomeUnknown
from paperclip_hookspecs.receipts import ReceiptStatus
from paperclip_webhook import plugin
from paperclip_webhook.tool import URL_ENV, WebhookHandler


class Receiver:
    def __init__(self) -> None:
        self.posts: list[tuple[dict, str]] = []
        self.receipts: dict[str, dict] = {}
        self.lookup_status: int | None = None  # force an answer to lookups
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.posts.append((body, self.headers["Idempotency-Key"]))
                receiver.receipts[body["command_id"]] = {"revision": "r1"}
                self._answer(200, {"ok": True})

            def do_GET(self) -> None:
                command = unquote(self.path.rsplit("/", 1)[1])
                if receiver.lookup_status is not None:
                    self._answer(receiver.lookup_status, {"error": "forced"})
                elif command in receiver.receipts:
                    self._answer(200, receiver.receipts[command])
                else:
                    self._answer(404, {"error": "unknown"})

            def _answer(self, status: int, body: dict) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    found = Receiver()
    monkeypatch.setenv(URL_ENV, found.url)
    yield found
    found.server.shutdown()
    found.server.server_close()


def call(command_id: str = "run-1:call-1") -> ToolCall:
    return ToolCall(
        run_id="run-1",
        company_id="co",
        agent_id="ag",
        issue_id="is",
        call_id="call-1",
        command_id=command_id,
        arguments={"event": "deploy", "message": "ship it"},
    )


def test_the_plugin_registers_notify_webhook():
    [tool] = plugin.paperclip_tools()
    assert isinstance(tool, PluginTool) and tool.name == "notify_webhook"
    assert tool.open_world and not tool.read_only
    assert tool.input_schema["additionalProperties"] is False


async def test_a_call_posts_once_with_its_command_id(receiver: Receiver):
    answer = await WebhookHandler().call(call())
    assert not answer.is_error and answer.result["delivered"] is True
    [(body, key)] = receiver.posts
    assert key == body["command_id"] == "run-1:call-1"
    assert body["event"] == "deploy" and body["message"] == "ship it"


async def test_the_receipt_lookup_finds_a_delivery_or_none(receiver: Receiver):
    handler = WebhookHandler()
    assert await handler.find_receipt("run-1:call-1") is None
    await handler.call(call())
    receipt = await handler.find_receipt("run-1:call-1")
    assert receipt is not None and receipt.status is ReceiptStatus.APPLIED
    assert receipt.command_id == "run-1:call-1" and receipt.state_revision == "r1"


async def test_a_lookup_nobody_can_answer_is_an_unknown_outcome(receiver: Receiver):
    receiver.lookup_status = 503
    with pytest.raises(ToolOutcomeUnknown):
        await WebhookHandler().find_receipt("run-1:call-1")


async def test_without_a_url_the_call_is_refused_and_the_outcome_unknown(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.delenv(URL_ENV, raising=False)
    answer = await WebhookHandler().call(call())
    assert answer.is_error and answer.result["error"]["code"] == "webhook_not_configured"
    with pytest.raises(ToolOutcomeUnknown):
        await WebhookHandler().find_receipt("run-1:call-1")


async def test_a_receiver_that_is_down_answers_webhook_unreachable(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv(URL_ENV, "http://127.0.0.1:9/hook")  # discard port: nothing listens
    answer = await WebhookHandler().call(call())
    assert answer.is_error and answer.result["error"]["code"] == "webhook_unreachable"
