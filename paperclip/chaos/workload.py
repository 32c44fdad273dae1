"""The chaos workload: one issue per run, each with its own agent and fake-provider script.

A run's first turn posts two comments (tools with write effects, bodies unique
to the run), each followed by a progress note (a self-contained call, which the
journal writes in one statement), with pauses between them, says it is done and
calls ``finish``; a
later turn of the same thread (a continuation after a loss) says it went on
and finishes. Every body names its run, so the checks can tell a duplicate
from another run's comment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from paperclip.chaos.cluster import FAKE_PROFILE


@dataclass
class WorkItem:
    label: str
    agent_id: str = ""
    issue_id: str = ""
    assigned: bool = False
    outcome: str = ""
    """``succeeded`` or ``held`` once the issue is settled, else empty."""
    steered: list[str] = field(default_factory=list)
    """The comments a person steered into the item's runs (accepted by the API, or refused
    as in the run's wake already: delivered in its input)."""
    steer_comment: str = ""
    """The comment of the steer being tried (made once, reused by a retry)."""


def comment_body(label: str, number: int) -> str:
    return f"chaos {label}: comment {number}"


def steer_body(label: str, number: int) -> str:
    return f"chaos {label}: steer {number}"


def script(label: str, pause: float, comments: int = 2) -> dict:
    """The first turn posts ``comments`` comments, ``pause`` seconds apart; steers are read
    (``consume_steer``) before each step, as a model reads them at its next step."""
    finish = {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": label}}}
    first: list[dict] = []
    for number in range(1, comments + 1):
        body = comment_body(label, number)
        first += [{"call_tool": {"name": "post_comment", "arguments": {"body": body}}}]
        note = {"summary": f"{label}: after comment {number}"}
        first += [{"call_tool": {"name": "report_progress", "arguments": note}}]
        first += [{"sleep": pause}]
    first += [{"message": f"Run {label} is done."}, finish]
    later = [{"message": f"Run {label} went on after a loss."}, finish]
    return {"turns": [first, later], "consume_steer": True}


class Workload:
    def __init__(self, count: int, script_dir: Path, pause: float, comments: int = 2) -> None:
        self.items = [WorkItem(f"w{n:04d}") for n in range(count)]
        self.script_dir, self.pause, self.comments = script_dir, pause, comments
        self.company_id = ""
        self.server_errors: list[str] = []
        """Answers of the API other than 503 ``database_unavailable`` in the 5xx range."""

    def create(self, api: httpx.Client) -> None:
        """The company, and for each run an agent (its model names its script) and an issue."""
        self.script_dir.mkdir(parents=True, exist_ok=True)
        company = _created(api.post("/companies", json={"name": "Chaos", "issue_prefix": "CHS"}))
        self.company_id = company["id"]
        for item in self.items:
            model = f"chaos-{item.label}"
            (self.script_dir / f"{model}.json").write_text(
                json.dumps(script(item.label, self.pause, self.comments))
            )
            agent = _created(
                api.post(
                    f"/companies/{self.company_id}/agents",
                    json={
                        "name": f"agent-{item.label}",
                        "provider": "codex",
                        "provider_config": {"launch": FAKE_PROFILE, "model": model},
                    },
                )
            )
            issue = _created(
                api.post(
                    f"/companies/{self.company_id}/issues",
                    json={"title": f"Chaos {item.label}", "description": "Post two comments."},
                )
            )
            item.agent_id, item.issue_id = agent["id"], issue["id"]

    def assign(self, api: httpx.Client, item: WorkItem) -> bool:
        """Assign the item's issue (which wakes its agent); False while the API cannot answer."""
        try:
            r = api.patch(
                f"/companies/{self.company_id}/issues/{item.issue_id}",
                json={"assignee_agent_id": item.agent_id},
            )
        except httpx.HTTPError:
            return False
        if r.status_code >= 500 and r.status_code != 503:
            self.server_errors.append(
                f"PATCH issue {item.issue_id}: {r.status_code} {r.text[:200]}"
            )
        item.assigned = r.status_code == 200
        return item.assigned

    def steer(self, api: httpx.Client, item: WorkItem, run_id: str) -> bool:
        """A person's comment on the item's issue, steered into its live run; True once sent.

        Each steer's comment is made once: a retry after a refused steer reuses it, and
        a POST whose answer was lost is sent again with the same idempotency key."""
        company = self.company_id
        number = len(item.steered) + 1
        try:
            if not item.steer_comment:
                r = api.post(
                    f"/companies/{company}/issues/{item.issue_id}/comments",
                    json={
                        "body": steer_body(item.label, number),
                        "idempotency_key": f"{item.label}-steer-{number}",
                    },
                )
                self._server_error("POST comment", r)
                if r.status_code not in (200, 201):
                    return False
                item.steer_comment = r.json()["id"]
            r = api.post(
                f"/companies/{company}/runs/{run_id}/steer",
                json={"comment_id": item.steer_comment},
            )
        except httpx.HTTPError:
            return False
        self._server_error(f"POST steer of run {run_id}", r)
        # A run woken with the comment has it in its input already: delivered, not steered.
        in_wake = r.status_code == 409 and _code(r) == "steer_comment_in_wake"
        if r.status_code not in (200, 202) and not in_wake:
            return False
        item.steered.append(item.steer_comment)
        item.steer_comment = ""
        return True

    def _server_error(self, what: str, r: httpx.Response) -> None:
        if r.status_code >= 500 and r.status_code != 503:
            self.server_errors.append(f"{what}: {r.status_code} {r.text[:200]}")

    def pending(self) -> list[WorkItem]:
        return [item for item in self.items if not item.assigned]

    def active(self) -> list[WorkItem]:
        return [item for item in self.items if item.assigned and not item.outcome]


def _code(response: httpx.Response) -> str | None:
    try:
        return response.json().get("code")
    except ValueError:
        return None


def _created(response: httpx.Response) -> dict:
    if response.status_code != 201:
        raise RuntimeError(
            f"setting up the workload failed: {response.status_code} {response.text}"
        )
    body: dict = response.json()
    return body
