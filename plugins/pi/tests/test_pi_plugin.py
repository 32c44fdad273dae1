"""The plugin's registration, config rules, its Pi extension and probe."""

from __future__ import annotations

import sys

import jsonschema
import pytest
from paperclip_pi import plugin
from paperclip_pi.config import EXTENSION, ConfigError, PiSettings
from paperclip_pi.probe import probe
from paperclip_pi.schema import CONFIG_SCHEMA


def test_paperclip_providers_registers_pi_with_its_capabilities():
    (kind,) = plugin.paperclip_providers()
    assert kind.name == "pi"
    caps = kind.capabilities
    assert caps.steer and caps.follow_up and caps.mcp_tools and caps.resume and caps.system_prompt
    assert kind.launch == {"default": ("pi",)}
    jsonschema.Draft202012Validator.check_schema(kind.config_schema)


@pytest.mark.parametrize(
    "config",
    [
        {"command": ["sh", "-c", "id"]},
        {"env_key": "PAPERCLIP_RUNNER_CREDENTIAL"},
        # Pi runs an apiKey that starts with '!': only a variable's name is accepted.
        {"env_key": "!cat /etc/shadow"},
        {"api": "anthropic-messages"},
        {"base_url": "file:///etc/passwd"},
        {"thinking": "max"},
        {"launch": "../x"},
    ],
)
def test_a_config_that_could_run_something_or_read_secrets_is_refused(config):
    with pytest.raises(ConfigError):
        PiSettings.from_config(config)
    assert not jsonschema.Draft202012Validator(CONFIG_SCHEMA).is_valid(config)


def test_models_json_names_the_key_by_its_variable():
    settings = PiSettings.from_config(
        {"base_url": "http://127.0.0.1:8000/v1", "model": "m1", "env_key": "SCRIPTED_MODEL_API_KEY"}
    )
    provider = settings.models_document()["providers"]["paperclip"]
    assert provider["apiKey"] == "SCRIPTED_MODEL_API_KEY" and provider["models"] == [{"id": "m1"}]
    assert settings.settings_document()["enableInstallTelemetry"] is False


def test_the_extension_ships_with_the_plugin():
    source = EXTENSION.read_text()
    assert EXTENSION.suffix == ".js" and "export default async function" in source
    assert "PAPERCLIP_MCP_URL" in source and "tools/call" in source


def test_probe_reports_the_fakes_version_and_a_missing_cli():
    found = probe((sys.executable, "-m", "paperclip_pi_testing.fake_pi"))
    assert found.found and found.version is not None
    missing = probe(("no-such-pi-binary",))
    assert not missing.found and "@mariozechner/pi-coding-agent@" in missing.hint
