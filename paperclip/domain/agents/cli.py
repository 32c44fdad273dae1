"""``paperclip agents``: a company's agents (list, show, create), from a running server."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.markup import escape

from paperclip.cli_kit.client import ApiClient, ListGroup, company_option, json_option, url_option
from paperclip.cli_kit.output import columns, console, emit_json, fail, when


@click.group("agents", cls=ListGroup)
def agents() -> None:
    """A company's agents (bare: list them)."""


def _model(agent: dict[str, Any]) -> str:
    config = agent.get("provider_config") or {}
    return str(config.get("model") or "-")


@agents.command("list")
@company_option
@url_option
@json_option
def list_agents(company: str | None, url: str, as_json: bool) -> None:
    """The company's agents: name, provider, model, launch profile, status, id."""
    client = ApiClient(url)
    found = client.company(company)
    rows = client.items(f"/companies/{found['id']}/agents")
    if as_json:
        emit_json(rows)
        return
    columns(
        [
            [
                a["name"],
                a["provider"],
                _model(a),
                str((a.get("provider_config") or {}).get("launch", "default")),
                a["status"],
                a["id"],
            ]
            for a in rows
        ],
        header=["NAME", "PROVIDER", "MODEL", "LAUNCH", "STATUS", "ID"],
    )


@agents.command("show")
@click.argument("agent")
@company_option
@url_option
@json_option
def show(agent: str, company: str | None, url: str, as_json: bool) -> None:
    """One agent (AGENT: its name or id), with its provider's configuration."""
    client = ApiClient(url)
    found = client.agent(client.company(company), agent)
    if as_json:
        emit_json(found)
        return
    console.print(f"[bold]{escape(found['name'])}[/] ({found['status']})", highlight=False)
    console.print(f"  id        {found['id']}", highlight=False)
    console.print(f"  provider  {found['provider']}", highlight=False)
    if found.get("role"):
        console.print(f"  role      {escape(found['role'])}", highlight=False)
    caps = found.get("capabilities")
    if caps is None:
        console.print("  [yellow]no installed plugin provides it[/]")
    console.print(f"  created   {when(found['created_at'])}", highlight=False)
    console.print("  config    " + escape(json.dumps(found["provider_config"])), highlight=False)


@agents.command("create")
@click.argument("name")
@click.option("--provider", required=True, help="An installed provider kind (`paperclip plugins`).")
@click.option(
    "--config",
    "config_json",
    default="{}",
    help='Its provider_config as JSON: {"launch": "default", "model": "...", ...}.',
)
@click.option("--role", default="", help="What it does, in a few words.")
@company_option
@url_option
@json_option
def create(
    name: str,
    provider: str,
    config_json: str,
    role: str,
    company: str | None,
    url: str,
    as_json: bool,
) -> None:
    """Create an agent named NAME in the company."""
    try:
        config = json.loads(config_json)
    except json.JSONDecodeError as exc:
        fail(f"--config is not JSON: {exc}", hint='Give an object: --config \'{"model": "m"}\'.')
    if not isinstance(config, dict):
        fail("--config is not a JSON object", hint='Give an object: --config \'{"model": "m"}\'.')
    client = ApiClient(url)
    found = client.company(company)
    body = {"name": name, "provider": provider, "provider_config": config, "role": role}
    made = client.post(f"/companies/{found['id']}/agents", body)
    if as_json:
        emit_json(made)
        return
    console.print(
        f"created agent [bold]{escape(made['name'])}[/] ({made['provider']}) in {escape(found['name'])}: "
        f"{made['id']}",
        highlight=False,
    )
