"""The plugin's registration, config rules and probe."""

from __future__ import annotations

import sys

import jsonschema
import pytest
from paperclip_opencode import plugin
from paperclip_opencode.config import ConfigError, OpenCodeSettings
from paperclip_opencode.probe import probe
from paperclip_opencode.schema import CONFIG_SCHEMA


def test_paperclip_providers_registers_opencode_with_its_capabilities():
    (kind,) = plugin.paperclip_providers()
    assert kind.name == "opencode"
    caps = kind.capabilities
    assert (caps.follow_up, caps.steer) == (True, False)  # a queued follow-up, not a steer
    assert caps.mcp_tools and caps.resume and caps.system_prompt and caps.fresh_retry
    assert kind.launch == {"default": ("opencode", "serve")}
    jsonschema.Draft202012Validator.check_schema(kind.config_schema)


@pytest.mark.parametrize(
    "config",
    [
        {"command": ["sh", "-c", "id"]},
        {"env_key": "PAPERCLIP_RUNNER_CREDENTIAL"},
        {"env_key": "HOME"},
        {"bash": "ask"},
        {"base_url": "file:///etc/passwd"},
        {"request_timeout_seconds": 0},
        {"launch": "a b"},
    ],
)
def test_a_config_that_could_run_something_or_read_secrets_is_refused(config):
    with pytest.raises(ConfigError):
        OpenCodeSettings.from_config(config)
    assert not jsonschema.Draft202012Validator(CONFIG_SCHEMA).is_valid(config)


def test_the_schema_and_the_driver_agree_on_a_good_config():
    config = {
        "base_url": "http://127.0.0.1:8000/v1",
        "model": "m1",
        "env_key": "OPENAI_API_KEY",
        "bash": "deny",
        "turn_timeout_seconds": 600,
    }
    jsonschema.validate(config, CONFIG_SCHEMA)
    settings = OpenCodeSettings.from_config(config)
    doc = settings.config_document(None)
    assert doc["model"] == "paperclip/m1" and doc["permission"]["bash"] == "deny"
    assert doc["provider"]["paperclip"]["options"]["apiKey"] == "{env:OPENAI_API_KEY}"
    assert all(doc["tools"][t] is False for t in ("webfetch", "task", "question"))


def test_probe_reports_the_fakes_version_and_a_missing_cli():
    found = probe((sys.executable, "-m", "paperclip_opencode_testing.fake_server"))
    assert found.found and found.version is not None
    missing = probe(("no-such-opencode-binary", "serve"))
    assert not missing.found and "npm install -g opencode-ai@" in missing.hint
