"""A webhook receiver on 127.0.0.1 for the ``notify_webhook`` tool: it counts deliveries.

``hold`` makes it keep each delivery's connection open without answering (the
effect happened here; its sender cannot know), until the receiver stops.
``GET /receipts/<command id>`` answers 200 for a delivery it answered,
404 for one it never answered.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote


class WebhookReceiver:
    def __init__(self, *, hold: bool = False) -> None:
        self.hold = hold
        self.deliveries: list[dict] = []
        self.receipts: dict[str, dict] = {}
        self.lookups: list[str] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with receiver._lock:
                    receiver.deliveries.append(body)
                if receiver.hold:
                    receiver.stopping.wait(120)
                    return
                answer = {
                    "accepted": body["command_id"],
                    "revision": f"r{len(receiver.deliveries)}",
                }
                with receiver._lock:
                    receiver.receipts[body["command_id"]] = answer
                self._json(200, answer)

            def do_GET(self):
                command = unquote(self.path.removeprefix("/hook/receipts/"))
                with receiver._lock:
                    receiver.lookups.append(command)
                    found = receiver.receipts.get(command)
                self._json(200, found) if found else self._json(404, {"error": "unknown"})

            def _json(self, status, body):
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.deliveries)

    def __enter__(self) -> WebhookReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
