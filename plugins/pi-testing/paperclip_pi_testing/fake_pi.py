"""A scripted stand-in for ``pi --mode rpc``, for tests.

Run it as the runner's launch profile; the driver appends Pi's flags as it
does to the real one::

    python -m paperclip_pi_testing.fake_pi --script-dir DIR [--log PATH] --mode rpc ... [-e EXT]
        [--session-dir D] [--session ID] [--append-system-prompt FILE]

It speaks Pi 0.73's RPC (JSON lines on stdio): ``prompt``, ``steer``,
``follow_up``, ``abort``, ``get_state``, with the responses and events Pi
sends (``agent_start``, ``turn_start``, ``message_start``/``update``/``end``,
``tool_execution_start``/``end``, ``queue_update``, ``turn_end``,
``agent_end``). It reads ``$PI_CODING_AGENT_DIR/settings.json`` for the model,
which picks the script (:mod:`paperclip_pi_testing.fake_script`). With ``-e`` and the
run's endpoint in the environment it offers the run's tools as the bundled
extension does (``paperclip_<tool>``) and calls them for real. Sessions are
kept in the session folder, so a later process can resume them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from paperclip_pi_testing import __version__
from paperclip_pi_testing.fake_script import Script, ScriptError, script_for
from paperclip_pi_testing.fake_turn import AgentRun, Host

FAKE_VERSION = f"paperclip-fake-pi {__version__}"


class FakePi(Host):
    """The RPC server: commands in on stdin, responses and events out on stdout."""

    def __init__(self, args: argparse.Namespace, out: IO[bytes], log: IO[str] | None) -> None:
        self.args = args
        self._out = out
        self._log = log
        agent_dir = Path(os.environ.get("PI_CODING_AGENT_DIR") or Path.home() / ".pi" / "agent")
        settings_file = agent_dir / "settings.json"
        self.settings = json.loads(settings_file.read_text()) if settings_file.is_file() else {}
        self.model = str(self.settings.get("defaultModel") or "")
        self.sessions = Path(args.session_dir or agent_dir / "sessions")
        self.session_id, self.prompts, self.responses = self._open_session(args.session)
        url, token = (
            os.environ.get("PAPERCLIP_MCP_URL"),
            os.environ.get("PAPERCLIP_MCP_BEARER_TOKEN"),
        )
        self.tools = (
            {"url": url, "headers": {"Authorization": f"Bearer {token}"}}
            if args.extension and url and token
            else None
        )
        self.run: AgentRun | None = None

    # Host (what an agent run uses)

    def send(self, message: Mapping[str, Any]) -> None:
        self._out.write(json.dumps(message).encode() + b"\n")
        self._out.flush()

    def log(self, entry: Mapping[str, Any]) -> None:
        if self._log is not None:
            self._log.write(json.dumps(entry) + "\n")
            self._log.flush()

    def next_steps(self) -> list[dict[str, Any]]:
        """The steps of the session's next prompt (counted when it starts)."""
        index = self.prompts
        self.prompts += 1
        self._save()
        return self._script().steps_for(index)

    def next_response(self) -> int:
        """The index of the session's next model response (its usage is derived from it)."""
        index = self.responses
        self.responses += 1
        self._save()
        return index

    # Commands

    async def serve(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            try:
                command = json.loads(line)
            except ValueError:
                self.send(
                    {
                        "type": "response",
                        "command": "parse",
                        "success": False,
                        "error": "Failed to parse command",
                    }
                )
                continue
            self.log({"type": "received", "command": command})
            if isinstance(command, dict):
                self._handle(command)
        if self.run is not None and self.run.task is not None:
            self.run.task.cancel()

    def _handle(self, command: dict[str, Any]) -> None:
        kind = command.get("type")
        reply: dict[str, Any] = {"type": "response", "command": kind, "success": True}
        if command.get("id") is not None:
            reply["id"] = command["id"]
        busy = self.run is not None and not self.run.done
        if kind == "prompt":
            if busy:
                reply.update(
                    success=False, error="Agent is already processing. Specify streamingBehavior."
                )
            else:
                self.send(reply)
                self.run = AgentRun(self, str(command.get("message") or ""))
                self.run.start()
                return
        elif kind in ("steer", "follow_up"):
            if busy and self.run is not None:
                self.run.queue(kind, str(command.get("message") or ""))
            else:
                reply.update(success=False, error="Agent is not running")
        elif kind == "abort":
            if busy and self.run is not None:
                self.run.abort()
        elif kind == "get_state":
            reply["data"] = {
                "model": {"id": self.model, "provider": self.settings.get("defaultProvider")},
                "isStreaming": busy,
                "sessionId": self.session_id,
                "sessionFile": str(self._session_file()),
                "messageCount": 0,
                "pendingMessageCount": 0,
            }
        elif kind == "extension_ui_response":
            return
        else:
            reply.update(
                success=False, error=f"Unknown command: {kind} (not supported by the fake)"
            )
        self.send(reply)

    # Sessions

    def _script(self) -> Script:
        return script_for(self.args.script_dir, self.model)

    def _session_file(self) -> Path:
        return self.sessions / f"{self.session_id}.json"

    def _open_session(self, ref: str | None) -> tuple[str, int, int]:
        if ref:
            path = self.sessions / f"{ref}.json"
            if path.is_file():
                state = json.loads(path.read_text())
                return str(state["id"]), int(state["prompts"]), int(state.get("responses", 0))
        return str(uuid.uuid4()), 0, 0

    def _save(self) -> None:
        self.sessions.mkdir(parents=True, exist_ok=True)
        state = {
            "id": self.session_id,
            "prompts": self.prompts,
            "responses": self.responses,
            "saved": time.time(),
        }
        self._session_file().write_text(json.dumps(state))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m paperclip_pi_testing.fake_pi")
    parser.add_argument("--version", action="store_true")
    parser.add_argument("--script-dir", type=Path)
    parser.add_argument("--log")
    parser.add_argument("--mode", default="rpc")
    parser.add_argument("-e", "--extension", action="append", default=[])
    parser.add_argument("--session-dir")
    parser.add_argument("--session")
    parser.add_argument("--append-system-prompt", action="append", default=[])
    for flag in (
        "--no-extensions",
        "--no-skills",
        "--no-prompt-templates",
        "--no-themes",
        "--no-context-files",
    ):
        parser.add_argument(flag, action="store_true")
    args = parser.parse_args(argv)
    if args.version:
        print(FAKE_VERSION)
        return
    if args.script_dir is None or args.mode != "rpc":
        parser.error("the fake speaks --mode rpc only, and needs --script-dir")
    # stdout is the protocol channel: keep it for records, send any stray output to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    log = open(args.log, "a", encoding="utf-8") if args.log else None  # for the process lifetime
    fake = FakePi(args, out, log)
    system = [Path(p).read_text() if Path(p).is_file() else p for p in args.append_system_prompt]
    fake.log(
        {
            "type": "started",
            "pid": os.getpid(),
            "model": fake.model,
            "session": fake.session_id,
            "tools": fake.tools is not None,
            "system": system,
            "env": sorted(k for k in os.environ if k.startswith("PAPERCLIP_")),
        }
    )
    try:
        fake._script()
    except (OSError, ScriptError) as exc:
        print(f"fake pi: {exc}", file=sys.stderr)
    asyncio.run(_serve(fake))


async def _serve(fake: FakePi) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    await fake.serve(reader)


if __name__ == "__main__":
    main()
