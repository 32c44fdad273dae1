"""The plugin's registration, profile and config rules, device signature and probe."""

from __future__ import annotations

import base64
import hashlib

import jsonschema
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from paperclip_gateway import plugin
from paperclip_gateway.config import ConfigError, GatewaySettings
from paperclip_gateway.device import DeviceIdentity
from paperclip_gateway.probe import probe
from paperclip_gateway.profile import GatewayProfile, ProfileError
from paperclip_gateway.schema import CONFIG_SCHEMA


def test_paperclip_providers_registers_gateway_with_its_capabilities():
    (kind,) = plugin.paperclip_providers()
    assert kind.name == "gateway"
    caps = kind.capabilities
    assert (caps.steer, caps.follow_up, caps.mcp_tools, caps.system_prompt) == (
        False,
        True,
        True,
        True,
    )
    assert GatewayProfile.parse(kind.launch["default"]).tools_listen == ("127.0.0.1", 18790)
    jsonschema.Draft202012Validator.check_schema(kind.config_schema)


def test_session_keys_per_issue_fixed_or_per_run():
    assert GatewaySettings().session_key_for("r1", "i1") == "paperclip:issue:i1"
    assert GatewaySettings().session_key_for("r1", None) == "paperclip:run:r1"
    fixed = GatewaySettings.from_config({"session_key_strategy": "fixed", "session_key": "team"})
    assert fixed.session_key_for("r1", "i1") == "team"
    run = GatewaySettings.from_config({"session_key_strategy": "run"})
    assert run.session_key_for("r1", "i1") == "paperclip:run:r1"


@pytest.mark.parametrize(
    "config",
    [
        {"url": "ws://example.com"},
        {"token": "secret"},
        {"session_key_strategy": "fixed", "session_key": "cron:hourly"},
        {"agent_id": "../x"},
        {"request_timeout_seconds": 0},
    ],
)
def test_a_config_that_names_a_gateway_or_a_secret_is_refused(config):
    with pytest.raises(ConfigError):
        GatewaySettings.from_config(config)
    assert not jsonschema.Draft202012Validator(CONFIG_SCHEMA).is_valid(config)


@pytest.mark.parametrize(
    "argv",
    [(), ("http://x",), ("ws://x", "--run", "sh"), ("ws://x", "--tools-listen", "127.0.0.1:1")],
)
def test_a_profile_that_is_not_a_gateway_profile_is_refused(argv):
    with pytest.raises(ProfileError):
        GatewayProfile.parse(argv)


def test_the_device_signature_verifies_as_a_gateway_checks_it(tmp_path):
    identity = DeviceIdentity.from_file(tmp_path / "device.pem")
    again = DeviceIdentity.from_file(tmp_path / "device.pem")
    assert (
        again.device_id == identity.device_id
        and (tmp_path / "device.pem").stat().st_mode & 0o777 == 0o600
    )
    device = identity.sign_connect(
        client_id="gateway-client",
        client_mode="backend",
        role="operator",
        scopes=["operator.read"],
        token="t",
        nonce="n-1",
        signed_at=42,
        platform="Linux",
    )
    raw = base64.urlsafe_b64decode(device["publicKey"] + "==")
    assert hashlib.sha256(raw).hexdigest() == device["id"]
    payload = (
        "v3|" + device["id"] + "|gateway-client|backend|operator|operator.read|42|t|n-1|linux|"
    )
    Ed25519PublicKey.from_public_bytes(raw).verify(
        base64.urlsafe_b64decode(device["signature"] + "=="), payload.encode()
    )


def test_probe_says_an_unreachable_gateway_is_missing():
    missing = probe(("ws://127.0.0.1:9", "--token-env", "NOPE_TOKEN"))
    assert not missing.found and "not reachable" in missing.hint
    assert not probe(("not-a-url",)).found
