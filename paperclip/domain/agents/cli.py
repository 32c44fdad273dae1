"""``paperclip agents``: a company's agents (list, show, create), its org chart (org, move),
from a running server."""

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
    if found.get("reports_to"):
        manager = client.agent_names(client.company(company)).get(found["reports_to"], "?")
        console.print(f"  reports   to {escape(manager)}", highlight=False)
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
@click.option("--reports-to", "manager", help="Its manager: an agent's name or id (none: the top).")
@company_option
@url_option
@json_option
def create(
    name: str,
    provider: str,
    config_json: str,
    role: str,
    manager: str | None,
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
    if manager is not None:
        body["reports_to"] = client.agent(found, manager)["id"]
    made = client.post(f"/companies/{found['id']}/agents", body)
    if as_json:
        emit_json(made)
        return
    console.print(
        f"created agent [bold]{escape(made['name'])}[/] ({made['provider']}) in {escape(found['name'])}: "
        f"{made['id']}",
        highlight=False,
    )


@agents.command("org")
@company_option
@url_option
@json_option
def org(company: str | None, url: str, as_json: bool) -> None:
    """The org chart: each agent under its manager, with its status and runs going now."""
    client = ApiClient(url)
    found = client.company(company)
    nodes = client.get(f"/companies/{found['id']}/org-chart")["agents"]
    if as_json:
        emit_json(nodes)
        return
    if not nodes:
        console.print(f"{escape(found['name'])} has no agents yet.", highlight=False)
        return
    for node in nodes:
        agent = node["agent"]
        role = f" ({escape(agent['role'])})" if agent.get("role") else ""
        busy = f", {node['active_runs']} running" if node["active_runs"] else ""
        console.print(
            f"{'  ' * node['depth']}[bold]{escape(agent['name'])}[/]{role}: {agent['status']}{busy}",
            highlight=False,
        )


@agents.command("move")
@click.argument("agent")
@click.option("--to", "manager", help="Its new manager: an agent's name or id.")
@click.option("--top", is_flag=True, help="To the top of the org chart (no manager).")
@company_option
@url_option
@json_option
def move(
    agent: str, manager: str | None, top: bool, company: str | None, url: str, as_json: bool
) -> None:
    """Move AGENT (its name or id) under another manager; its issues and runs stay its own."""
    if (manager is None) == (not top):
        fail("say where to", hint="Give --to MANAGER, or --top for no manager.")
    client = ApiClient(url)
    found = client.company(company)
    moving = client.agent(found, agent)
    target = None if top else client.agent(found, manager or "")
    moved = client.patch(
        f"/companies/{found['id']}/agents/{moving['id']}",
        {"reports_to": target["id"] if target else None},
    )
    if as_json:
        emit_json(moved)
        return
    where = f"under {escape(target['name'])}" if target else "to the top"
    console.print(f"moved [bold]{escape(moved['name'])}[/] {where}", highlight=False)
