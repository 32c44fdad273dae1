"""Launch profiles: the runner host decides which commands it starts; an agent only selects."""

from __future__ import annotations

import pytest
from paperclip_hookspecs.providers import ProviderCapabilities, ProviderKind

from paperclip.runner.launch import LAUNCH_NOT_ALLOWED, LaunchPolicy, LaunchRefused


def kind(name: str, **launch: tuple[str, ...]) -> ProviderKind:
    return ProviderKind(
        name=name,
        capabilities=ProviderCapabilities(),
        create_driver=lambda context: None,  # type: ignore[arg-type,return-value]
        launch=launch,
    )


def test_the_default_profile_is_the_kinds_default_command() -> None:
    policy = LaunchPolicy.build({"codex": kind("codex", default=("codex", "app-server"))})
    assert policy.resolve("codex", {}) == ("codex", "app-server")
    assert policy.resolve("codex", {"launch": "default"}) == ("codex", "app-server")


def test_the_host_adds_replaces_and_removes_profiles() -> None:
    policy = LaunchPolicy.build(
        {"codex": kind("codex", default=("codex", "app-server"), beta=("codex-beta",))},
        {"codex": {"fake": ["python", "-m", "fake"], "default": ["/opt/codex"], "beta": []}},
    )
    assert policy.resolve("codex", {"launch": "fake"}) == ("python", "-m", "fake")
    assert policy.resolve("codex", {}) == ("/opt/codex",)
    assert policy.offered("codex") == ["default", "fake"]


@pytest.mark.parametrize(
    "config",
    [
        {"launch": "beta"},
        {"launch": ["/bin/sh", "-c", "id"]},
        {"launch": {"argv": ["/bin/sh"]}},
    ],
)
def test_anything_else_is_refused_with_a_code(config: dict[str, object]) -> None:
    policy = LaunchPolicy.build({"codex": kind("codex", default=("codex", "app-server"))})
    with pytest.raises(LaunchRefused) as refused:
        policy.resolve("codex", config)
    assert refused.value.code == LAUNCH_NOT_ALLOWED


def test_a_provider_without_profiles_offers_nothing() -> None:
    policy = LaunchPolicy.build({"echo": kind("echo")})
    with pytest.raises(LaunchRefused, match="offered: none"):
        policy.resolve("echo", {})
