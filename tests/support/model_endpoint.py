"""A scripted OpenAI-compatible model endpoint on 127.0.0.1, for driving real agent CLIs.

The real CLIs (Codex, OpenCode, Pi, OpenClaw) run a full turn against it with a
dummy key: each request of a model's conversation gets that model's next
scripted step (assistant text, shell calls, MCP tool calls, errors, slow or
held responses), so a real CLI drives a real turn, deterministically, offline.
Every request is recorded for the test to inspect, and so is the usage each
response reported (:meth:`ModelEndpoint.usage_sent`), for a test to compare
with what the CLI and the control plane recorded.

Served:

- ``POST /v1/responses`` (streamed; Codex, Pi),
- ``POST /v1/chat/completions`` (streamed; OpenCode, Pi, OpenClaw),
- ``GET /v1/models`` (the scripted model names).

Each model name has its own script and position, so several agents (each with
its own model name) share one endpoint. As a program, for trying a CLI by hand::

    python -m tests.support.model_endpoint --script script.json [--port 8765]

where ``script.json`` maps model names to step lists (see
:func:`tests.support.model_endpoint_script.load_script`). It prints one JSON
line ``{"url": "http://127.0.0.1:PORT/v1", "models": [...]}`` and serves until
interrupted.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.model_endpoint_script import (
    Conversation,
    Step,
    Usage,
    chat_chunks,
    load_script,
    responses_events,
    usage_of,
)

MAX_BODY_BYTES = 16 * 1024 * 1024
HOLD_LIMIT_SECONDS = 120.0
"""A held step that nobody releases fails after this long rather than hang the client."""


@dataclass(frozen=True, slots=True)
class Received:
    """One request as the endpoint received it."""

    path: str
    model: str | None
    body: Mapping[str, Any]
    headers: Mapping[str, str]
    step: int | None
    """Which step of the model's script answered it (None: not a scripted request)."""
    at: float

    def input_items(self) -> list[Mapping[str, Any]]:
        """The conversation as sent: Responses ``input`` items or Chat ``messages``."""
        items = self.body.get("input", self.body.get("messages", []))
        return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []

    def user_texts(self) -> list[str]:
        """Every user-role text of the conversation, in order."""
        texts: list[str] = []
        for item in self.input_items():
            if item.get("role") != "user":
                continue
            content = item.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts += [str(c.get("text", "")) for c in content if isinstance(c, Mapping)]
        return texts

    def tool_outputs(self) -> list[Mapping[str, Any]]:
        """Tool results sent back to the model: ``function_call_output`` items or tool messages."""
        return [
            i
            for i in self.input_items()
            if i.get("type") == "function_call_output" or i.get("role") == "tool"
        ]

    def tool_names(self) -> list[str]:
        """Names of the tools offered, namespaced tools as ``namespace/name``."""
        names: list[str] = []
        for tool in self.body.get("tools") or []:
            if tool.get("type") == "namespace":
                names += [f"{tool['name']}/{t.get('name')}" for t in tool.get("tools") or []]
            else:
                names.append(str(tool.get("name") or (tool.get("function") or {}).get("name")))
        return names


class Gate:
    """A named point a held step stops at, until the test releases it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._reached = threading.Event()
        self._released = threading.Event()

    def wait_reached(self, timeout: float) -> None:
        """Block until a response is held here; TimeoutError after ``timeout`` seconds."""
        if not self._reached.wait(timeout):
            raise TimeoutError(f"no model response reached the gate {self.name!r}")

    def release(self) -> None:
        """Let held responses (and later ones) go on."""
        self._released.set()

    def _hold(self, limit: float) -> bool:
        self._reached.set()
        return self._released.wait(limit)


class ModelEndpoint:
    """The scripted endpoint: ``script()`` models, ``start()``, point a CLI at ``url``."""

    def __init__(self, *, hold_limit: float = HOLD_LIMIT_SECONDS) -> None:
        self._lock = threading.Lock()
        self._conversations: dict[str, Conversation] = {}
        self._gates: dict[str, Gate] = {}
        self._received: list[Received] = []
        self._usage_sent: list[tuple[str, int, Usage]] = []
        self._hold_limit = hold_limit
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # Setup

    def script(self, model: str, steps: Sequence[Step]) -> ModelEndpoint:
        """Give ``model`` this conversation (replacing any earlier one and its position)."""
        with self._lock:
            self._conversations[model] = Conversation(list(steps))
        return self

    def gate(self, name: str) -> Gate:
        """The gate of that name (created on first use)."""
        with self._lock:
            return self._gates.setdefault(name, Gate(name))

    def start(self) -> ModelEndpoint:
        """Listen on an ephemeral port of 127.0.0.1 and serve in a background thread."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="model-endpoint", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; releases every gate so no handler thread stays blocked."""
        for gate in list(self._gates.values()):
            gate.release()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> ModelEndpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL to configure a CLI with, ending in ``/v1``."""
        assert self._server is not None, "start() the endpoint first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # What happened

    def received(self, model: str | None = None) -> list[Received]:
        """Requests so far (of one model, if given), in arrival order."""
        with self._lock:
            return [r for r in self._received if model is None or r.model == model]

    def scripted(self, model: str) -> list[Received]:
        """The requests of ``model`` that a step answered, in order."""
        return [r for r in self.received(model) if r.step is not None]

    def usage_sent(self, model: str) -> list[Usage]:
        """The usage each response of ``model`` reported, in the order the responses ended
        (a response cut short, or a chat stream that did not ask for usage, reported none)."""
        with self._lock:
            return [usage for m, _, usage in self._usage_sent if m == model]

    def position(self, model: str) -> int:
        """How many requests of ``model``'s conversation have been answered or started."""
        with self._lock:
            conversation = self._conversations.get(model)
            return conversation.position if conversation else 0

    def exhausted(self, model: str) -> list[int]:
        """Requests that came after the last step of ``model``'s script (a script too short)."""
        with self._lock:
            conversation = self._conversations.get(model)
            return list(conversation.exhausted) if conversation else []

    def wait_for(self, predicate: Callable[[], Any], timeout: float, what: str) -> Any:
        """Poll ``predicate`` until truthy; its value. TimeoutError names ``what``."""
        deadline = time.monotonic() + timeout
        while not (value := predicate()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out waiting for {what}")
            time.sleep(0.05)
        return value

    # Serving (called from handler threads)

    def _record(self, received: Received) -> None:
        with self._lock:
            self._received.append(received)

    def _record_usage(self, model: str, index: int, usage: Usage) -> None:
        with self._lock:
            self._usage_sent.append((model, index, usage))

    def _take_step(self, model: str | None) -> tuple[int | None, Step | None, bool]:
        """(index, step, known model) for the next request of ``model``'s conversation."""
        with self._lock:
            conversation = self._conversations.get(model or "")
            if conversation is None:
                return None, None, False
            index, step = conversation.next_step()
            return index, step, True

    def _models(self) -> list[str]:
        with self._lock:
            return sorted(self._conversations)

    def _wait_at(self, step: Step) -> str | None:
        """Apply a step's delay and hold; an error text if the hold was never released."""
        if step.delay:
            time.sleep(step.delay)  # deliberate: a slow model is what the step scripts
        if step.hold is not None:
            if not self.gate(step.hold)._hold(self._hold_limit):
                return f"scripted gate {step.hold!r} was not released in {self._hold_limit:g}s"
        return None


def _handler_for(endpoint: ModelEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        owner = endpoint

    return Handler


class _Handler(BaseHTTPRequestHandler):
    owner: ModelEndpoint
    protocol_version = "HTTP/1.1"
    _broken = False

    def log_message(self, format: str, *args: Any) -> None:
        pass  # recorded in Received instead

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        self.owner._record(self._received(path, {}, None))
        if path.endswith("/models"):
            models = [
                {"id": m, "object": "model", "owned_by": "paperclip-tests"}
                for m in self.owner._models()
            ]
            self._json(200, {"object": "list", "data": models})
        else:
            self._error(404, f"no such endpoint: GET {path}", "not_found")

    def do_POST(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._error(413, "request body too large", "too_large")
            return
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._error(400, "the body is not JSON", "invalid_json")
            return
        if not isinstance(body, dict):
            self._error(400, "the body is not a JSON object", "invalid_json")
            return
        wire = _wire_of(path)
        if wire is None:
            self.owner._record(self._received(path, body, None))
            self._error(404, f"no such endpoint: POST {path}", "not_found")
            return
        model = body.get("model") if isinstance(body.get("model"), str) else None
        index, step, known = self.owner._take_step(model)
        received = self._received(path, body, index)
        self.owner._record(received)
        if step is not None and step.respond is not None:
            step = step.respond(received)
        if not known:
            self._error(404, f"no script for model {model!r}", "model_not_found")
        elif step is None:
            self._error(500, f"the script of {model!r} has no step {index}", "script_exhausted")
        elif step.error is not None:
            self._error(step.error.status, step.error.message, step.error.code)
        else:
            assert index is not None
            usage = usage_of(step, index)
            if wire == "chat" and not (body.get("stream_options") or {}).get("include_usage"):
                usage = None
            streamed = (self._stream_responses if wire == "responses" else self._stream_chat)(
                step, str(model), usage
            )
            if streamed and usage is not None:
                self.owner._record_usage(str(model), index, usage)

    def _received(self, path: str, body: Mapping[str, Any], step: int | None) -> Received:
        model = body.get("model")
        return Received(
            path=path,
            model=model if isinstance(model, str) else None,
            body=body,
            headers={k.lower(): v for k, v in self.headers.items()},
            step=step,
            at=time.time(),
        )

    # Streams

    def _stream_responses(self, step: Step, model: str, usage: Usage | None) -> bool:
        """Stream the step; True when it ended as scripted (its usage was sent)."""
        assert usage is not None  # a Responses stream always ends with its usage
        events = responses_events(step, model, usage)
        created = next(events)
        self._open_stream()
        self._sse(created, event=created["type"])
        problem = self.owner._wait_at(step)
        if problem is not None:
            failed = {**created["response"], "status": "failed", "error": {"message": problem}}
            self._sse({"type": "response.failed", "response": failed}, event="response.failed")
        else:
            for event in events:
                self._sse(event, event=event["type"])
        self._end_stream()
        return problem is None and not self._broken

    def _stream_chat(self, step: Step, model: str, usage: Usage | None) -> bool:
        """Stream the step; True when it ended as scripted (its usage, if asked, was sent)."""
        chunks = chat_chunks(step, model, usage)
        self._open_stream()
        self._sse(next(chunks))
        problem = self.owner._wait_at(step)
        if problem is not None:
            self._sse({"error": {"message": problem, "type": "server_error"}})
        else:
            for chunk in chunks:
                self._sse(chunk)
        self._chunk(b"data: [DONE]\n\n")
        self._end_stream()
        return problem is None and not self._broken

    def _open_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _sse(self, data: Mapping[str, Any], event: str | None = None) -> None:
        head = f"event: {event}\n" if event else ""
        self._chunk(f"{head}data: {json.dumps(data)}\n\n".encode())

    def _chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self._broken = True  # the client went away: what it did not read was not sent
            self.close_connection = True

    def _end_stream(self) -> None:
        self._chunk(b"")  # the zero-length chunk ends the body

    def _json(self, status: int, data: Mapping[str, Any]) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _error(self, status: int, message: str, code: str) -> None:
        kind = "invalid_request_error" if status < 500 else "server_error"
        self._json(status, {"error": {"message": message, "type": kind, "code": code}})


def _wire_of(path: str) -> str | None:
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/chat/completions"):
        return "chat"
    return None


def _iter_scripts(data: Any, default_model: str) -> Iterator[tuple[str, list[Step]]]:
    if isinstance(data, list):
        yield default_model, load_script(data)
    elif isinstance(data, dict):
        for model, steps in data.items():
            yield str(model), load_script(steps)
    else:
        raise ValueError("a script file is a list of steps or an object of model name -> steps")


def main(argv: list[str] | None = None) -> None:
    """Serve a script file until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.model_endpoint")
    parser.add_argument("--script", required=True, type=Path, help="JSON: model -> steps")
    parser.add_argument("--model", default="scripted", help="the model name of a bare step list")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any)")
    args = parser.parse_args(argv)
    endpoint = ModelEndpoint()
    for model, steps in _iter_scripts(json.loads(args.script.read_text()), args.model):
        endpoint.script(model, steps)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), _handler_for(endpoint))
    endpoint._server = server
    print(json.dumps({"url": endpoint.url, "models": endpoint._models()}), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
