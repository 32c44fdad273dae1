"""A scripted stand-in for ``opencode serve``, for tests.

Run it as the runner's launch profile, the way the real one runs::

    python -m paperclip_opencode_testing.fake_server --script-dir DIR [--log PATH] --port P --hostname 127.0.0.1

It serves the part of OpenCode's HTTP API a run uses, with OpenCode 1.18's
shapes: ``POST /session``, ``GET /session/{id}``,
``POST /session/{id}/prompt_async`` (a prompt sent while one runs is queued
and runs after it, and stored at once, as OpenCode stores it),
``GET /session/{id}/message``, ``DELETE /session/{id}/message/{message id}``,
``POST /session/{id}/abort`` and the event stream
``GET /event``. Like OpenCode it answers only with basic auth (``opencode`` and
``$OPENCODE_SERVER_PASSWORD``) and reads ``$XDG_CONFIG_HOME/opencode/opencode.json``:
the model picks the script (:mod:`paperclip_opencode_testing.fake_script`), ``mcp``
says where the run's tools are. Sessions are kept in
``$XDG_DATA_HOME/fake-opencode/`` so a later process can resume them.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from paperclip_provider_kit.http import Request, Response, serve
from paperclip_provider_kit.script import fake_parser, parse_fake

from paperclip_opencode_testing import __version__
from paperclip_opencode_testing.fake_script import ScriptError, script_for
from paperclip_opencode_testing.fake_turn import PromptFailed, PromptRun, new_id, now_ms

FAKE_VERSION = f"paperclip-fake-opencode {__version__}"
_SESSION_PATH = re.compile(
    r"^/session/(ses_[A-Za-z0-9]+)(/prompt_async|/abort|/message)?(?:/(msg_[A-Za-z0-9]+))?$"
)


@dataclass
class _Session:
    id: str
    title: str
    prompts: int = 0
    """Prompts run so far (the next one runs the script's turn of this index)."""
    responses: int = 0
    """Model responses so far (the next one's usage is derived from this index)."""
    queue: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    """Stored messages (``id``, ``role``, ``text``, an answer's ``parentID``), oldest first."""
    worker: asyncio.Task[None] | None = None
    current: asyncio.Task[None] | None = None


class FakeOpenCode:
    """The server's state: sessions, subscribers of the event stream, the script folder."""

    def __init__(
        self, script_dir: Path, config: Mapping[str, Any], home: Path, log: IO[str] | None
    ) -> None:
        self.script_dir = script_dir
        self.config = config
        self.home = home
        self.password = os.environ.get("OPENCODE_SERVER_PASSWORD")
        self.subscribers: list[asyncio.Queue[bytes | None]] = []
        self.sessions: dict[str, _Session] = {}
        self._log = log
        provider, _, model = str(config.get("model") or "").partition("/")
        self.model = (provider, model)

    def log(self, entry: Mapping[str, Any]) -> None:
        if self._log is not None:
            self._log.write(json.dumps(entry) + "\n")
            self._log.flush()

    def publish(self, kind: str, properties: Mapping[str, Any]) -> None:
        data = json.dumps({"id": new_id("evt"), "type": kind, "properties": properties})
        for queue in self.subscribers:
            queue.put_nowait(f"data: {data}\n\n".encode())

    # HTTP

    async def handle(self, request: Request) -> Response:
        if self.password and request.basic_auth() != ("opencode", self.password):
            return Response(401, {"error": "unauthorized"})
        self.log(
            {
                "type": "received",
                "method": request.method,
                "path": request.path,
                "body": request.body.decode(errors="replace"),
            }
        )
        if request.method == "GET" and request.path == "/event":
            queue: asyncio.Queue[bytes | None] = asyncio.Queue()
            self.subscribers.append(queue)
            data = json.dumps({"id": new_id("evt"), "type": "server.connected", "properties": {}})
            queue.put_nowait(f"data: {data}\n\n".encode())
            return Response(stream=queue)
        if request.method == "POST" and request.path == "/session":
            return Response(200, self._create(request.json()))
        match = _SESSION_PATH.match(request.path)
        session = self._session(match.group(1)) if match else None
        if session is None:
            return Response(
                404, {"name": "NotFoundError", "data": {"message": "Session not found"}}
            )
        action = match.group(2) if match else None
        message_id = match.group(3) if match else None
        if action == "/message":
            return self._message_request(session, request.method, message_id)
        if message_id is not None:
            return Response(404, {"error": "not supported by the fake"})
        if request.method == "GET" and action is None:
            return Response(200, self._info(session))
        if request.method == "POST" and action == "/prompt_async":
            self._prompt(session, request.json())
            return Response(204)
        if request.method == "POST" and action == "/abort":
            if session.current is not None:
                session.current.cancel()
            return Response(200, True)
        return Response(404, {"error": "not supported by the fake"})

    def _message_request(self, session: _Session, method: str, message_id: str | None) -> Response:
        if method == "GET" and message_id is None:
            return Response(200, [_stored(session.id, m) for m in session.messages])
        if method == "DELETE" and message_id is not None:
            kept = [m for m in session.messages if m["id"] != message_id]
            if len(kept) == len(session.messages):
                return Response(404, {"name": "NotFoundError", "data": {"message": "no message"}})
            session.messages = kept
            session.queue = [q for q in session.queue if q["id"] != message_id]
            self._save(session)
            return Response(200, True)
        return Response(404, {"error": "not supported by the fake"})

    # Sessions

    def _create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        session = _Session(new_id("ses"), str(body.get("title") or "New session"))
        self.sessions[session.id] = session
        self._save(session)
        info = self._info(session)
        self.publish("session.created", {"sessionID": session.id, "info": info})
        self.publish("session.updated", {"sessionID": session.id, "info": info})
        return info

    def _info(self, session: _Session) -> dict[str, Any]:
        return {
            "id": session.id,
            "slug": "fake-session",
            "projectID": "global",
            "directory": os.getcwd(),
            "title": session.title,
            "version": "fake",
            "time": {"created": now_ms(), "updated": now_ms()},
        }

    def _session(self, session_id: str) -> _Session | None:
        if session_id in self.sessions:
            return self.sessions[session_id]
        path = self.home / f"{session_id}.json"
        if not path.is_file():
            return None
        state = json.loads(path.read_text())
        session = _Session(state["id"], state["title"], state["prompts"], state.get("responses", 0))
        session.messages = state.get("messages", [])
        self.sessions[session.id] = session
        return session

    def _save(self, session: _Session) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        state = {
            "id": session.id,
            "title": session.title,
            "prompts": session.prompts,
            "responses": session.responses,
            "messages": session.messages,
        }
        (self.home / f"{session.id}.json").write_text(json.dumps(state))

    def _prompt(self, session: _Session, body: Mapping[str, Any]) -> None:
        text = "".join(
            str(p.get("text", "")) for p in body.get("parts") or [] if isinstance(p, Mapping)
        )
        user_id = new_id("msg")
        info: dict[str, Any] = {
            "id": user_id,
            "role": "user",
            "sessionID": session.id,
            "time": {"created": now_ms()},
            "agent": "build",
            "model": {"providerID": self.model[0], "modelID": self.model[1]},
        }
        if body.get("system"):
            info["system"] = body["system"]
        self.publish("message.updated", {"sessionID": session.id, "info": info})
        part = {
            "type": "text",
            "text": text,
            "messageID": user_id,
            "sessionID": session.id,
            "id": new_id("prt"),
        }
        self.publish(
            "message.part.updated", {"sessionID": session.id, "part": part, "time": now_ms()}
        )
        session.queue.append({"id": user_id, "text": text})
        session.messages.append({"id": user_id, "role": "user", "text": text})
        self._save(session)  # stored when accepted: a lost process's queue outlives it
        if session.worker is None or session.worker.done():
            session.worker = asyncio.ensure_future(self._work(session))

    async def _work(self, session: _Session) -> None:
        """Run the session's queued prompts one after another, then go idle."""
        busy = {"sessionID": session.id, "status": {"type": "busy"}}
        self.publish("session.status", busy)
        while session.queue:
            prompt = session.queue.pop(0)
            index = session.prompts
            session.prompts += 1
            # Answered from here on (the real answer's message names its prompt as parent).
            session.messages.append(
                {"id": new_id("msg"), "role": "assistant", "parentID": prompt["id"]}
            )
            self._save(session)  # counted when it starts, as a transcript records it
            self.publish("session.status", busy)
            run = PromptRun(
                session_id=session.id,
                parent_id=prompt["id"],
                model=self.model,
                cwd=os.getcwd(),
                mcp=self.config.get("mcp") or {},
                publish=self.publish,
                log=self.log,
                next_response=lambda: self._next_response(session),
            )
            try:
                steps = script_for(self.script_dir, self.model[1]).steps_for(index)
                session.current = asyncio.ensure_future(run.run(steps))
                await session.current
            except asyncio.CancelledError:
                session.queue.clear()
                self._error(session, "MessageAbortedError", "The operation was aborted.")
            except (PromptFailed, ScriptError, OSError) as exc:
                self._error(session, "UnknownError", str(exc))
            except Exception as exc:  # a bug of the fake: fail the prompt where it is seen
                self.log({"type": "fake_error", "error": repr(exc)})
                self._error(session, "UnknownError", f"fake server bug: {exc!r}")
            finally:
                session.current = None
        self.publish("session.status", {"sessionID": session.id, "status": {"type": "idle"}})
        self.publish("session.idle", {"sessionID": session.id})

    def _next_response(self, session: _Session) -> int:
        index = session.responses
        session.responses += 1
        self._save(session)
        return index

    def _error(self, session: _Session, name: str, message: str) -> None:
        error = {"name": name, "data": {"message": message}}
        self.publish("session.error", {"sessionID": session.id, "error": error})


def _stored(session_id: str, message: Mapping[str, Any]) -> dict[str, Any]:
    """A stored message as ``GET /session/{id}/message`` answers it."""
    info = {"id": message["id"], "role": message["role"], "sessionID": session_id}
    if message.get("parentID"):
        info["parentID"] = message["parentID"]
    parts = [{"type": "text", "text": message["text"]}] if message.get("text") else []
    return {"info": info, "parts": parts}


def load_config() -> dict[str, Any]:
    """``$XDG_CONFIG_HOME/opencode/opencode.json``, as OpenCode reads it."""
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    path = base / "opencode" / "opencode.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def main(argv: list[str] | None = None) -> None:
    parser = fake_parser("python -m paperclip_opencode_testing.fake_server")
    parser.add_argument("--port", type=int, default=4096)
    parser.add_argument("--hostname", default="127.0.0.1")
    parser.add_argument("serve", nargs="?", help="accepted for compatibility with `opencode serve`")
    args = parse_fake(parser, argv, FAKE_VERSION)
    if args is None:
        return
    data = Path(os.environ.get("XDG_DATA_HOME") or tempfile.mkdtemp(prefix="fake-opencode-"))
    log = (
        open(args.log, "a", encoding="utf-8") if args.log else None
    )  # open for the process lifetime
    fake = FakeOpenCode(args.script_dir, load_config(), data / "fake-opencode", log)
    fake.log(
        {
            "type": "started",
            "pid": os.getpid(),
            "config": fake.config,
            "env": sorted(k for k in os.environ if k.startswith("PAPERCLIP_")),
        }
    )
    asyncio.run(_serve(fake, args.hostname, args.port))


async def _serve(fake: FakeOpenCode, host: str, port: int) -> None:
    server = await serve(fake.handle, host, port)
    print(f"opencode server listening on http://{host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await server.close()


if __name__ == "__main__":
    main()
