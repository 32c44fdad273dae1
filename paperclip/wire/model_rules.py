"""Model profiles: which model endpoints, key variables, sandbox modes and approval answers
a runner host lets an agent use. The checks both sides make.

A runner host defines named profiles (``PAPERCLIP_RUNNER_MODELS``); an agent names one
(``provider_config.model_profile``, ``default`` when absent). The control plane refuses
at the door a config that no connected runner's profile allows (it knows them from the
runners' ``hello``); the runner checks again before any process starts, because it never
trusts what it is sent. Both refuse with ``model_profile_not_allowed``. Everything here
is pure: a profile and what a config asks in, a problem (a sentence for people) or None out.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import Any

import msgspec
from paperclip_hookspecs.providers import (
    BUILTIN_ENDPOINT,
    DEFAULT_MODEL_PROFILE,
    MODEL_PROFILE_KEY,
    ModelAccess,
    ProviderKind,
)

MODEL_PROFILE_NOT_ALLOWED = "model_profile_not_allowed"
MODELS_SETTING = "PAPERCLIP_RUNNER_MODELS"

SAFE_SANDBOX = ("read-only", "workspace-write")
"""What a configured profile allows when it does not say ``sandbox``."""
SAFE_APPROVALS = ("decline",)
"""What a configured profile allows when it does not say ``approvals``."""
RESERVED_KEYS = "PAPERCLIP_*"
"""Never a model key: the runner's own settings and secrets (its credential)."""

_PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_*]{0,127}$")
_ENTRY = re.compile(r"^(https?)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}|\*))?(/\S*)?$")
_URL = re.compile(r"^(https?)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?(/\S*)?$")


class ModelProfile(msgspec.Struct, kw_only=True):
    """One profile of a runner host, as its setting writes it and its ``hello`` sends it
    (URLs and variable names, never a key's value)."""

    endpoints: list[str] = []
    """Model endpoints: ``http(s)://host[:port|:*][/path]`` (an agent's ``base_url`` on that
    host and port, under that path), or ``builtin`` (the provider's own endpoint)."""
    keys: list[str] = []
    """The variables whose value a provider may send as a model key (``*`` patterns allowed)."""
    sandbox: list[str] | None = None
    """Sandbox modes an agent may select (absent: ``read-only``, ``workspace-write``)."""
    approvals: list[str] | None = None
    """How sandbox-escape requests may be answered (absent: ``decline`` only)."""


class _StrictProfile(ModelProfile, forbid_unknown_fields=True):
    """A profile as the host's setting writes it: a misspelt field is a mistake, not ignored."""


def parse_profiles(configured: Mapping[str, Any] | None) -> dict[str, ModelProfile]:
    """The host's setting as profiles; raises ValueError saying which profile is wrong."""
    profiles: dict[str, ModelProfile] = {}
    for name, raw in (configured or {}).items():
        try:
            strict = msgspec.convert(raw, _StrictProfile)
        except msgspec.ValidationError as exc:
            raise ValueError(f"profile {name!r}: {exc}") from None
        profile = ModelProfile(**msgspec.structs.asdict(strict))
        if problem := profile_problem(name, profile):
            raise ValueError(problem)
        profiles[name] = profile
    return profiles


IMPLICIT_PROFILE = ModelProfile(
    endpoints=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*", BUILTIN_ENDPOINT],
    keys=["*_API_KEY"],
    sandbox=list(SAFE_SANDBOX),
    approvals=["decline", "approve"],
)
"""The ``default`` profile of a runner host that defines none: what the quickstart uses
(a model on this machine, or the provider's own; any ``*_API_KEY`` variable; the sandboxed
modes; escalations answered either way). A host shared with others defines its own."""


def profile_problem(name: str, profile: ModelProfile) -> str | None:
    """Why a host's profile is malformed (said when the runner starts), or None."""
    if not _PROFILE_NAME.match(name):
        return f"profile name {name!r}: letters, digits, '_', '.', '-' (at most 64)"
    for entry in profile.endpoints:
        if entry != BUILTIN_ENDPOINT and (not _ENTRY.match(entry) or "@" in entry):
            return (
                f"profile {name!r}: endpoint {entry!r} is not 'builtin' nor "
                "http(s)://host[:port|:*][/path]"
            )
    for key in profile.keys:
        if not _KEY.match(key):
            return f"profile {name!r}: key {key!r} is not a variable name (or a * pattern)"
    return None


def host_profiles(configured: Mapping[str, ModelProfile] | None) -> dict[str, ModelProfile]:
    """The host's profiles: its configured ones, or the implicit ``default`` when none."""
    return dict(configured) if configured else {DEFAULT_MODEL_PROFILE: IMPLICIT_PROFILE}


def profile_name(config: Mapping[str, Any]) -> str:
    """The model profile an agent's config names (``default`` when absent)."""
    name = config.get(MODEL_PROFILE_KEY, DEFAULT_MODEL_PROFILE)
    return name if isinstance(name, str) else repr(name)


def access_of(kind: ProviderKind | None, config: Mapping[str, Any]) -> ModelAccess:
    """What ``config`` asks of the host: the kind's own reading, else the conventional keys.

    Raises ValueError when the kind cannot read the config."""
    reader = getattr(kind, "model_access", None) if kind is not None else None
    if reader is not None:
        return reader(without_profile(config))
    base_url = config.get("base_url")
    env_key = config.get("env_key")
    sandbox, approvals = config.get("sandbox"), config.get("approvals")
    return ModelAccess(
        endpoints=(str(base_url),) if base_url is not None else (BUILTIN_ENDPOINT,),
        keys=(str(env_key),) if env_key is not None else (),
        sandbox=sandbox if isinstance(sandbox, str) else None,
        approvals=approvals if isinstance(approvals, str) else None,
    )


def without_profile(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config as a provider plugin reads it: the core's ``model_profile`` key taken out."""
    return {k: v for k, v in config.items() if k != MODEL_PROFILE_KEY}


def access_problem(name: str, profile: ModelProfile, access: ModelAccess) -> tuple[str, str] | None:
    """What ``access`` asks that the profile ``name`` does not allow, or None: the config key
    it is read from by convention (``base_url``, ``env_key``, ...) and a sentence saying what
    the profile allows."""
    for endpoint in access.endpoints:
        if not endpoint_allowed(profile.endpoints, endpoint):
            return "base_url", (
                f"the model profile {name!r} does not allow the endpoint {endpoint!r} "
                f"(allowed: {_listed(profile.endpoints)})"
            )
    for key in access.keys:
        if not key_allowed(profile.keys, key):
            return "env_key", (
                f"the model profile {name!r} does not allow the key variable {key!r} "
                f"(allowed: {_listed(profile.keys)}; never {RESERVED_KEYS})"
            )
    for setting, value, allowed in (
        ("sandbox", access.sandbox, profile.sandbox or list(SAFE_SANDBOX)),
        ("approvals", access.approvals, profile.approvals or list(SAFE_APPROVALS)),
    ):
        if value is not None and value not in allowed:
            return setting, (
                f"the model profile {name!r} does not allow {setting} {value!r} "
                f"(allowed: {_listed(allowed)})"
            )
    return None


def endpoint_allowed(entries: list[str], endpoint: str) -> bool:
    """Whether ``endpoint`` (a URL, or ``builtin``) is one of ``entries``' endpoints."""
    if endpoint == BUILTIN_ENDPOINT:
        return BUILTIN_ENDPOINT in entries
    asked = _parse(_URL, endpoint)
    if asked is None or "@" in endpoint:
        return False  # user info would make the host another than it reads
    return any(_covers(_parse(_ENTRY, entry), asked) for entry in entries if entry != "builtin")


def key_allowed(entries: list[str], key: str) -> bool:
    """Whether the variable ``key`` may be sent as a model key under ``entries``."""
    if fnmatch.fnmatchcase(key, RESERVED_KEYS):
        return False
    return any(fnmatch.fnmatchcase(key, entry) for entry in entries)


def _parse(pattern: re.Pattern[str], url: str) -> tuple[str, str, str, str] | None:
    match = pattern.match(url)
    if match is None:
        return None
    scheme, host, port, path = match.groups()
    port = port or ("443" if scheme == "https" else "80")
    return scheme, host.lower(), port, (path or "").rstrip("/")


def _covers(entry: tuple[str, str, str, str] | None, asked: tuple[str, str, str, str]) -> bool:
    if entry is None:
        return False
    scheme, host, port, path = entry
    return (
        scheme == asked[0]
        and host == asked[1]
        and port in ("*", asked[2])
        and (asked[3] == path or asked[3].startswith(path + "/"))
    )


def _listed(items: list[str]) -> str:
    return ", ".join(items) or "none"
