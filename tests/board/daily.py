"""What the board tests of the daily flows share: a company with an agent on the fake Codex,
made over the API, and waits on what the API says."""

from __future__ import annotations

import json
import uuid

from tests.support.processes import wait_until


def company(stack, name: str, prefix: str) -> dict:
    with stack.api() as api:
        r = api.post("/companies", json={"name": name, "issue_prefix": prefix})
        assert r.status_code == 201, r.text
        return r.json()


def agent(stack, company_id: str, script: dict | list, name: str = "coder", **config) -> dict:
    """An agent on the fake Codex whose model names ``script`` (written to the script folder)."""
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    stack.script_dir.mkdir(parents=True, exist_ok=True)
    (stack.script_dir / f"{model}.json").write_text(json.dumps(script))
    with stack.api() as api:
        r = api.post(
            f"/companies/{company_id}/agents",
            json={
                "name": name,
                "provider": "codex",
                "provider_config": {"launch": "fake", "model": model, **config},
            },
        )
        assert r.status_code == 201, r.text
        return r.json() | {"model": model}


def script(stack, agent: dict, steps: dict | list) -> None:
    """What the agent's next run does (the fake reads its script when a run starts)."""
    (stack.script_dir / f"{agent['model']}.json").write_text(json.dumps(steps))


def issue(stack, company_id: str, title: str, **extra) -> dict:
    with stack.api() as api:
        r = api.post(f"/companies/{company_id}/issues", json={"title": title, **extra})
        assert r.status_code == 201, r.text
        return r.json()


def runs(stack, company_id: str, issue_id: str) -> list[dict]:
    with stack.api() as api:
        return api.get(
            f"/companies/{company_id}/runs", params={"issue_id": issue_id, "sort": "-created"}
        ).json()["items"]


def ended_run(stack, company_id: str, issue_id: str, count: int = 1, timeout: float = 90) -> dict:
    """The issue's newest run once ``count`` runs exist and none is active."""

    def done():
        found = runs(stack, company_id, issue_id)
        if len(found) >= count and all(r["status"] not in ("queued", "running") for r in found):
            return found[0]
        return None

    return wait_until(done, timeout, 0.2, "the issue's runs to end")


def get(stack, path: str, **params) -> dict:
    with stack.api() as api:
        r = api.get(path, params=params)
        assert r.status_code == 200, r.text
        return r.json()
