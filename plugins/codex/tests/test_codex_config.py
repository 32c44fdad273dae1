"""Settings validation and the Codex configuration derived from them."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from paperclip_codex.config import (
    CONFIG_MARKER,
    DEFAULT_COMMAND,
    DISABLED_FEATURES,
    MCP_TOKEN_ENV_VAR,
    CodexSettings,
    ConfigError,
    flatten,
    mcp_overrides,
    override_args,
    render_toml,
    toml_value,
    write_config,
)
from paperclip_codex.schema import CONFIG_SCHEMA
from paperclip_codex_testing.fake_app_server import load_config
from paperclip_hookspecs.providers import McpEndpoint


def test_defaults() -> None:
    settings = CodexSettings.from_config({})
    assert DEFAULT_COMMAND == ("codex", "app-server")
    assert settings.launch == "default"
    assert settings.tool_approval == "approve"
    assert settings.approval_policy == "never"
    assert settings.sandbox == "workspace-write"
    assert settings.approvals == "decline"
    assert settings.resume_fallback == "fail"
    assert settings.turn_timeout_seconds is None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        # Nothing in an agent's config names a program or a path (issue 9).
        ({"command": ["/bin/sh", "-c", "id"]}, "selects a launch profile of the runner"),
        ({"codex_home": "/etc"}, "each run has its own CODEX_HOME"),
        ({"config_overrides": {"notify": ["/bin/sh"]}}, "'notify' is not allowed"),
        ({"config_overrides": {"mcp_servers.x.command": "sh"}}, "is not allowed"),
        ({"config_overrides": {"model_instructions_file": "/etc/shadow"}}, "is not allowed"),
        ({"config_overrides": {"model_reasoning_effort": ["high"]}}, "must be a string"),
        ({"env_key": "PAPERCLIP_RUNNER_CREDENTIAL"}, "not a PAPERCLIP_ variable"),
        ({"env_key": "HOME"}, "ending in _API_KEY"),
        ({"launch": "../x y"}, "launch must be a profile name"),
        ({"base_url": "file:///etc/passwd"}, "http(s) URL"),
        ({"model": "a b"}, "model must be a model name"),
        # Values codex-cli 0.171 refuses are refused here, before a process starts.
        ({"approval_policy": "untrusted"}, "approval_policy must be one of never, on-request"),
        ({"approval_policy": "on-failure"}, "approval_policy must be one of"),
        ({"sandbox": "none"}, "sandbox must be one of"),
        ({"approvals": "yes"}, "approvals must be one of"),
        ({"tool_approval": "prompt"}, "tool_approval must be one of approve, auto"),
        ({"request_timeout_seconds": 0}, "between 1 and 3600 seconds"),
        ({"request_timeout_seconds": 1e9}, "between 1 and 3600 seconds"),
        ({"request_timeout_seconds": True}, "number of seconds"),
        ({"modle": "gpt"}, "unknown codex config key(s): modle"),
    ],
)
def test_bad_config_is_refused_with_the_key_named(config: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=None) as caught:
        CodexSettings.from_config(config)
    assert message in str(caught.value)


def test_config_document_round_trips_through_toml() -> None:
    settings = CodexSettings.from_config(
        {"base_url": "http://127.0.0.1:8000/v1", "model": "m-1", "sandbox": "read-only"}
    )
    doc = tomllib.loads(render_toml(settings.config_document()))
    assert doc == {
        "approval_policy": "never",
        "sandbox_mode": "read-only",
        "check_for_update_on_startup": False,
        "web_search": "disabled",
        "model": "m-1",
        "model_provider": "paperclip",
        "analytics": {"enabled": False},
        "agents": {"enabled": False},
        "features": dict.fromkeys(DISABLED_FEATURES, False),
        "model_providers": {
            "paperclip": {
                "name": "Paperclip model endpoint",
                "base_url": "http://127.0.0.1:8000/v1",
                "env_key": "OPENAI_API_KEY",
                "wire_api": "responses",
            }
        },
    }


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        'quote " and \\ backslash',
        "line\nbreak\ttab\x7fdel",
        "ünïcödé",
        3,
        2.5,
        True,
        [1, "a"],
    ],
)
def test_toml_values_parse_back(value: object) -> None:
    assert tomllib.loads(f"x = {toml_value(value)}")["x"] == value


def test_mcp_overrides_reach_the_fake_like_they_reach_codex(tmp_path: Path) -> None:
    endpoint = McpEndpoint(
        name="paperclip", url="http://127.0.0.1:5/mcp?run=a&b=c", bearer_token="t"
    )
    args = override_args(mcp_overrides(endpoint, 120.0))
    assert args[0] == "-c"
    assert MCP_TOKEN_ENV_VAR in " ".join(args)
    assert "t" not in [a.split("=", 1)[-1] for a in args]  # the token itself is never an argument
    config = load_config(tmp_path, args[1::2])
    assert config["mcp_servers"]["paperclip"] == {
        "url": "http://127.0.0.1:5/mcp?run=a&b=c",
        "bearer_token_env_var": MCP_TOKEN_ENV_VAR,
        "default_tools_approval_mode": "approve",
        "tool_timeout_sec": 120.0,
    }


def test_mcp_server_name_must_be_a_bare_key() -> None:
    with pytest.raises(ConfigError):
        mcp_overrides(McpEndpoint(name="my.tools", url="http://x", bearer_token="t"), None)


def test_flatten_gives_dotted_keys() -> None:
    assert flatten({"a": 1, "b": {"c": {"d": [1]}, "e": "x"}}) == [
        ("a", 1),
        ("b.c.d", [1]),
        ("b.e", "x"),
    ]


def test_write_config_owns_only_its_own_file(tmp_path: Path) -> None:
    doc = CodexSettings().config_document()
    assert write_config(tmp_path, doc) is True
    text = (tmp_path / "config.toml").read_text()
    assert text.startswith(CONFIG_MARKER + "\n")
    assert write_config(tmp_path, doc) is True  # ours: rewritten

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "config.toml").write_text('model = "theirs"\n')
    assert write_config(foreign, doc) is False
    assert (foreign / "config.toml").read_text() == 'model = "theirs"\n'


def test_write_config_never_follows_a_link_nor_waits_on_a_pipe(tmp_path: Path) -> None:
    """The home may be the provider's user's: a link or a pipe put there is not ours."""
    outside = tmp_path / "outside.toml"
    outside.write_text(CONFIG_MARKER + "\nkeep = true\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").symlink_to(outside)
    assert write_config(home, {"model": "m"}) is False
    assert outside.read_text() == CONFIG_MARKER + "\nkeep = true\n"
    (home / "config.toml").unlink()
    os.mkfifo(home / "config.toml")
    assert write_config(home, {"model": "m"}) is False  # returns at once, reads nothing


def test_fake_reads_config_toml_then_overrides(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('model = "from-file"\n[features]\napps = false\n')
    config = load_config(tmp_path, ["model=o3", "features.goals=false", 'sandbox_mode="read-only"'])
    assert config == {
        "model": "o3",  # a bare word: Codex keeps it as a string
        "features": {"apps": False, "goals": False},
        "sandbox_mode": "read-only",
    }


def test_allowed_overrides_pass_and_reach_the_command_line() -> None:
    settings = CodexSettings.from_config(
        {"config_overrides": {"model_reasoning_effort": "high", "tool_output_token_limit": 9}}
    )
    assert override_args(settings.config_overrides) == [
        "-c",
        'model_reasoning_effort="high"',
        "-c",
        "tool_output_token_limit=9",
    ]


SCHEMA_CASES = [
    ({}, True),
    ({"base_url": "http://127.0.0.1:8000/v1", "model": "gpt-5", "launch": "fake"}, True),
    ({"config_overrides": {"model_reasoning_effort": "low"}}, True),
    ({"turn_timeout_seconds": None, "approval_policy": "on-request"}, True),
    ({"command": ["codex"]}, False),
    ({"config_overrides": {"notify": "x"}}, False),
    ({"env_key": "PAPERCLIP_RUNNER_CREDENTIAL"}, False),
    ({"request_timeout_seconds": 0}, False),
    ({"request_timeout_seconds": 4000}, False),
    ({"approval_policy": "untrusted"}, False),
    ({"model": "a b"}, False),
]


@pytest.mark.parametrize(("config", "valid"), SCHEMA_CASES)
def test_the_json_schema_and_the_driver_agree(config: dict[str, object], valid: bool) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(CONFIG_SCHEMA)
    validator.check_schema(CONFIG_SCHEMA)
    assert validator.is_valid(config) is valid
    if valid:
        CodexSettings.from_config(config)
    else:
        with pytest.raises(ConfigError):
            CodexSettings.from_config(config)


def test_the_schema_lists_every_setting() -> None:
    assert set(CONFIG_SCHEMA["properties"]) == set(CodexSettings.__dataclass_fields__)
    assert CONFIG_SCHEMA["additionalProperties"] is False
