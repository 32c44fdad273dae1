"""The fake app-server's threads on disk, so a later process can resume them (as Codex rollouts do)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from paperclip_codex_testing.fake_turn import ThreadState
from paperclip_codex_testing.fake_usage import ThreadUsage

_THREAD_ID = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


class ThreadStore:
    """``$CODEX_HOME/fake-threads/<id>.json``: a thread's settings, turns and usage so far."""

    def __init__(self, home: Path, sandbox: Callable[[Mapping[str, Any]], str]) -> None:
        self.home = home
        self._sandbox = sandbox
        """The sandbox mode of a stored thread, under this process's configuration."""

    def path(self, thread_id: str) -> Path:
        return self.home / "fake-threads" / f"{thread_id}.json"

    def save(self, thread: ThreadState) -> None:
        path = self.path(thread.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {
            "id": thread.id,
            "cwd": thread.cwd,
            "model": thread.model,
            "approvalPolicy": thread.approval_policy,
            "sandbox": thread.sandbox,
            "turns": thread.turns,
            "createdAt": thread.created_at,
            "usage": thread.usage.to_json(),
        }
        path.write_text(json.dumps(state), encoding="utf-8")

    def load(self, thread_id: str) -> ThreadState | None:
        if not _THREAD_ID.match(thread_id):
            return None
        path = self.path(thread_id)
        if not path.exists():
            return None
        state = json.loads(path.read_text(encoding="utf-8"))
        return ThreadState(
            id=state["id"],
            cwd=state.get("cwd"),
            model=state.get("model"),
            approval_policy=state.get("approvalPolicy") or "on-request",
            sandbox=self._sandbox(state),
            turns=state["turns"],
            created_at=state["createdAt"],
            usage=ThreadUsage.from_json(state.get("usage")),
        )
