"""The model-profile rules both sides apply: endpoints by scheme, host, port and path;
keys by name or pattern, never ``PAPERCLIP_*``; safe sandbox and approvals unless said."""

from __future__ import annotations

import pytest
from paperclip_hookspecs.providers import ModelAccess

from paperclip.runner.models import ModelPolicy, ModelRefused
from paperclip.wire.model_rules import (
    IMPLICIT_PROFILE,
    ModelProfile,
    access_problem,
    endpoint_allowed,
    parse_profiles,
)

LOCAL = ["http://127.0.0.1:8765/v1", "https://models.example.com"]


@pytest.mark.parametrize(
    ("endpoint", "allowed"),
    [
        ("http://127.0.0.1:8765/v1", True),
        ("http://127.0.0.1:8765/v1/", True),
        ("http://127.0.0.1:8765/v1/responses", True),
        ("https://models.example.com/v1", True),
        ("https://models.example.com:443/v1", True),
        ("https://MODELS.example.com/v1", True),
        ("http://127.0.0.1:8766/v1", False),  # another port
        ("http://127.0.0.1:8765/v10", False),  # not under the path
        ("http://127.0.0.1:8765", False),
        ("https://127.0.0.1:8765/v1", False),  # another scheme
        ("http://models.example.com/v1", False),
        ("https://models.example.com.attacker.net/v1", False),
        ("https://models.example.com@attacker.net/v1", False),  # user info hides the host
        ("http://127.0.0.1:8765/v1@attacker.net", False),
        ("builtin", False),
    ],
)
def test_an_endpoint_is_allowed_by_scheme_host_port_and_path(endpoint, allowed):
    assert endpoint_allowed(LOCAL, endpoint) is allowed


def test_the_implicit_profile_is_this_machine_any_key_but_the_runners_and_sandboxed():
    def problem(**asked):
        found = access_problem("default", IMPLICIT_PROFILE, ModelAccess(**asked))
        return found and found[0]

    assert problem(endpoints=("http://127.0.0.1:1234/v1", "builtin"), keys=("X_API_KEY",)) is None
    assert problem(endpoints=("http://localhost:9/v1",), approvals="approve") is None
    assert problem(endpoints=("http://10.0.0.1:8000/v1",)) == "base_url"
    assert problem(keys=("PAPERCLIP_RUNNER_API_KEY",)) == "env_key"
    assert problem(keys=("AWS_SECRET_ACCESS_KEY",)) == "env_key"
    assert problem(sandbox="danger-full-access") == "sandbox"


def test_a_configured_profile_allows_only_the_sandboxed_modes_and_declines_unless_it_says():
    profile = ModelProfile(endpoints=["builtin"], keys=["OPENAI_API_KEY"])
    assert access_problem("p", profile, ModelAccess(sandbox="workspace-write")) is None
    assert access_problem("p", profile, ModelAccess(approvals="approve"))[0] == "approvals"
    wider = ModelProfile(sandbox=["danger-full-access"], approvals=["approve"])
    assert access_problem("p", wider, ModelAccess(sandbox="danger-full-access")) is None
    assert access_problem("p", wider, ModelAccess(approvals="approve")) is None


def test_a_host_that_defines_profiles_loses_the_implicit_one():
    policy = ModelPolicy.build({"local": {"endpoints": LOCAL, "keys": ["M_API_KEY"]}})
    assert sorted(policy.profiles) == ["local"]
    with pytest.raises(ModelRefused, match=r"'default' \(offered: local\)"):
        policy.resolve(None, {})
    grant = policy.resolve(
        None, {"model_profile": "local", "base_url": LOCAL[0], "env_key": "M_API_KEY"}
    )
    assert grant.profile == "local"


@pytest.mark.parametrize(
    "configured",
    [
        {"x": {"endpoint": ["builtin"]}},  # a misspelt field
        {"x": {"endpoints": ["ftp://host"]}},
        {"x": {"endpoints": ["http://user@host"]}},
        {"x": {"keys": ["NOT A NAME"]}},
        {"bad name": {}},
    ],
)
def test_a_malformed_host_setting_is_refused(configured):
    with pytest.raises(ValueError):
        parse_profiles(configured)
