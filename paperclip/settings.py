"""Settings of the core, read from ``PAPERCLIP_*`` environment variables."""

from __future__ import annotations

import ipaddress
import os
import socket
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import platformdirs
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from paperclip.clock import Clock, parse_test_clock, system_clock
from paperclip.wire.workspace_rules import path_problem


class DeploymentMode(StrEnum):
    LOCAL_TRUSTED = "local_trusted"
    """Loopback only, no login: the local operator, who proves it with the operator token."""
    AUTHENTICATED = "authenticated"
    """Every request carries a board API key (``Authorization: Bearer ...``)."""


class LogFormat(StrEnum):
    CONSOLE = "console"
    JSON = "json"


def default_data_dir() -> Path:
    """The platform's user data dir; ``/var/lib/paperclip`` for root.

    The embedded PostgreSQL runs as an unprivileged system user when started by
    root, and must be able to traverse every parent of its data folder, which
    ``/root`` forbids.
    """
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/paperclip")
    return Path(platformdirs.user_data_dir("paperclip", appauthor=False))


class Settings(BaseSettings):
    """Every setting of the core. See docs/configuration.md."""

    model_config = SettingsConfigDict(env_prefix="PAPERCLIP_", extra="ignore")

    database_url: str | None = Field(
        default=None,
        description="PostgreSQL URL (postgresql://...). Unset: the embedded PostgreSQL in the data dir.",
    )
    data_dir: Path = Field(
        default_factory=default_data_dir, description="Where Paperclip keeps its data."
    )
    host: str = Field(default="127.0.0.1", description="Address the HTTP server binds.")
    port: int = Field(
        default=3100, ge=0, le=65535, description="Port the HTTP server binds (0: any free)."
    )
    deployment_mode: DeploymentMode = Field(default=DeploymentMode.LOCAL_TRUSTED)
    operator_token_required: bool = Field(
        default=True,
        description="Without login (local_trusted), a request acts as the operator only with the "
        "operator token of the data dir (<data dir>/operator-token; the board's sign-in URL "
        "carries it). false: every request from this host acts as the operator (for a machine "
        "only you use).",
    )
    allowed_hosts: Annotated[frozenset[str], NoDecode] = Field(
        default=frozenset(),
        description="Host names the HTTP server answers to, comma-separated. In local_trusted "
        "mode loopback names always are, and these are added; in authenticated mode, when set, "
        "only these are.",
    )
    log_level: str = Field(default="INFO", description="DEBUG, INFO, WARNING or ERROR.")
    log_format: LogFormat = Field(default=LogFormat.CONSOLE)
    max_body_bytes: int = Field(
        default=1_048_576, ge=1024, description="Largest accepted request body."
    )
    max_streams_per_key: int = Field(
        default=32,
        ge=1,
        description="Event streams one credential may hold open on a replica at once (the "
        "local operator's, without login); one more is refused with 429 too_many_streams.",
    )
    max_streams_per_address: int = Field(
        default=64,
        ge=1,
        description="Event streams one client address may hold open on a replica at once.",
    )
    header_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="How long a client has to send a request's line and headers, from its "
        "connection (or its request's first byte); then 408 and the connection is closed.",
    )
    body_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="How long a client has to send a request's body, once its headers are in; "
        "then 408 and the connection is closed.",
    )
    instance_id: str = Field(
        default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}",
        description="This replica's name in leases and run events.",
    )

    lease_seconds: float = Field(
        default=15.0,
        ge=0.5,
        le=600,
        description="How long a run controller's lease lasts unrenewed; another replica "
        "adopts the run after it expires.",
    )
    run_abandon_seconds: float = Field(
        default=600.0,
        ge=1,
        description="How long a run waits for a runner: one whose next turn no runner took "
        "this long is failed and its task held (runner_unavailable); without a recovery "
        "policy installed, one whose lease expired this long ago is failed.",
    )
    runner_gone_seconds: float = Field(
        default=60.0,
        ge=0,
        description="A run whose runner has been away this long past its lease lost its turn: "
        "recovery resumes it on a runner that offers its provider.",
    )
    prompt_ownership: bool = Field(
        default=True,
        description="New runs assemble their prompt with ownership metadata "
        "(paperclipTurnContext, execution input v5). false rolls back: new runs are written as "
        "v4 with the legacy wake rendering; runs already started keep their persisted schema "
        "to the end.",
    )
    run_max_resumes: int = Field(
        default=3,
        ge=0,
        le=100,
        description="How many times a run lost with its runner or provider goes on in a new "
        "turn; once more, it fails and its task is held.",
    )
    run_report_nudges: int = Field(
        default=1,
        ge=0,
        le=10,
        description="How many times a run whose turn ended without its finish or block report "
        "is asked for it in a short follow-up turn of the same session (the report nudge); "
        "once more, it fails with finish_not_called. 0 turns nudges off.",
    )
    reconcile_seconds: float = Field(
        default=2.0,
        gt=0,
        le=3600,
        description="How often the reconciler runs the recovery policies (sooner when nudged).",
    )
    database_wait_seconds: float = Field(
        default=60.0,
        ge=0,
        le=3600,
        description="How long `paperclip serve` waits at start for a database it cannot reach "
        "(a replica started during an outage) before it gives up.",
    )
    model_prices: dict[str, dict[str, float | str]] = Field(
        default_factory=dict,
        description="Model prices, as JSON: model -> {input, cached_input, output (currency "
        "units a million tokens), currency}. The instance's price table (/api/prices) wins; "
        "a provider that reports its own cost is not priced.",
    )
    budget_sweep_seconds: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="How often each replica looks for work held by a budget that allows it "
        "again (raised, or a new month).",
    )
    workspace_retention_hours: float = Field(
        default=24.0,
        ge=0,
        le=24 * 365,
        description="How long an issue's worktree stays after the issue is done or cancelled "
        "(from its last change); then its runner removes it, keeping its branch and saving "
        "uncommitted changes to a ref first.",
    )
    workspace_sweep_seconds: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="How often each replica looks for ended issues' worktrees to remove.",
    )
    merge_wait_seconds: float = Field(
        default=60.0,
        gt=0,
        le=600,
        description="How long a request to merge an issue's branch waits for the runner's "
        "answer before it answers 504 merge_timeout (the merge may still be made; asking "
        "again gets its result).",
    )
    retention_run_events_days: float = Field(
        default=90.0,
        ge=0,
        description="How long a finished run's events are kept (counted from the event and "
        "from the run's end); 0 keeps them for ever. Live runs and answers not presented yet "
        "keep theirs (docs/operations.md#retention).",
    )
    retention_tool_calls_days: float = Field(
        default=90.0,
        ge=0,
        description="How long a finished run's settled tool calls (the tool journal) are kept; "
        "0 keeps them for ever. Receipts are always kept.",
    )
    retention_activity_days: float = Field(
        default=365.0,
        ge=0,
        description="How long activity log entries are kept (those of a live run stay); "
        "0 keeps them for ever.",
    )
    retention_sweep_seconds: float = Field(
        default=300.0,
        gt=0,
        le=86_400,
        description="How often a replica removes history past its retention.",
    )
    retention_batch_rows: int = Field(
        default=1000,
        ge=10,
        le=100_000,
        description="Rows the retention keeper looks at in one transaction (a small batch "
        "never holds up the engine).",
    )
    routine_grace_seconds: float = Field(
        default=60.0,
        ge=1,
        le=86_400,
        description="A routine's cron slot found this late or less runs on time; a later one "
        "is missed, and its routine's catch-up policy decides (docs/routines.md).",
    )
    routine_pass_seconds: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="The routine scheduler looks at least this often (it wakes for each due "
        "slot and heartbeat on its own); how soon a queued execution starts once the open one "
        "closed.",
    )
    test_clock: str | None = Field(
        default=None,
        description="Tests only: the time routines and heartbeats read, "
        "'<ISO start>@<unix anchor>x<speed>' (paperclip/clock.py). Unset: the system's.",
    )
    local_runner: bool = Field(
        default=True,
        description="`paperclip serve` starts a runner on this machine (`--no-runner` leaves it out).",
    )

    runner_launch: dict[str, dict[str, list[str]]] = Field(
        default_factory=dict,
        description="The runner host's launch profiles, as JSON: provider -> profile name -> "
        "command line; laid over the provider plugins' defaults (an empty command removes one). "
        "Agents select a profile by name; they never name an executable.",
    )

    runner_models: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="The runner host's model profiles, as JSON: profile name -> {endpoints, "
        "keys, sandbox, approvals}. Agents select one by name (provider_config.model_profile); "
        "none: one implicit 'default' profile (docs/security.md#model-profiles).",
    )

    runner_agent_user: str | None = Field(
        default=None,
        description="Run by root, the Unix user provider processes run as (default "
        "'paperclip-agent', made on first use; 'root': no switch). Run by another user, "
        "providers run as that user.",
    )

    runner_workspace_roots: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="The runner host's folders that repositories may live in (absolute paths, "
        "comma-separated); none: no project folder is allowed.",
    )
    runner_workspace_remotes: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="The clone URLs the runner host may fetch from, as shell-style patterns "
        "(comma-separated: https://github.com/acme/*); none: no clone URL is allowed.",
    )
    runner_diff_limit_bytes: int = Field(
        default=262_144,
        ge=1024,
        le=16_777_216,
        description="The largest diff of a worktree the runner reports after a turn.",
    )
    runner_run_retention_hours: float = Field(
        default=168.0,
        gt=0,
        description="How long a finished run's folder stays on the runner host.",
    )

    # Plugins: names are entry-point names or distribution names; built-ins by their own name.
    plugins_disable: Annotated[frozenset[str], NoDecode] = Field(
        default=frozenset(),
        description="Plugins not to load, comma-separated (PAPERCLIP_PLUGINS_DISABLE=a,b).",
    )
    plugins_only: Annotated[frozenset[str] | None, NoDecode] = Field(
        default=None,
        description="When set, the only installed plugins to load, comma-separated (empty: none).",
    )
    plugins_strict: bool = Field(
        default=False,
        description="Refuse to start when an installed plugin fails to import or is incompatible.",
    )
    plugins_hook_budget_seconds: float = Field(
        default=2.0,
        gt=0,
        le=60,
        description="How long a call of an installed plugin's hook may run before it is cut off "
        "(docs/plugins/README.md#how-hooks-run).",
    )

    @field_validator("plugins_disable", "plugins_only", "allowed_hosts", mode="before")
    @classmethod
    def _name_list(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list | tuple | set | frozenset):
            return frozenset(str(n).strip().lower() for n in value if str(n).strip())
        return value

    @field_validator("runner_workspace_roots", "runner_workspace_remotes", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list | tuple):
            return [str(item).strip() for item in value if str(item).strip()]
        return value

    @field_validator("runner_workspace_roots")
    @classmethod
    def _absolute_roots(cls, roots: list[str]) -> list[str]:
        for root in roots:
            if problem := path_problem(root):
                raise ValueError(problem.replace("a repository folder", "a workspace root"))
        return roots

    @field_validator("runner_models")
    @classmethod
    def _model_profiles(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        from paperclip.wire.model_rules import parse_profiles

        parse_profiles(value)
        return value

    @field_validator("test_clock")
    @classmethod
    def _clock_spec(cls, value: str | None) -> str | None:
        if value:
            parse_test_clock(value)
        return value or None

    def clock(self) -> Clock:
        """What routines and heartbeats read: the system's clock, or the test clock."""
        return parse_test_clock(self.test_clock) if self.test_clock else system_clock

    @field_validator("database_url")
    @classmethod
    def _postgresql_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None  # set but empty: the embedded PostgreSQL, as when unset
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        url = value.strip()
        if url.startswith("postgres://"):  # libpq's short scheme, which SQLAlchemy does not know
            url = "postgresql://" + url.removeprefix("postgres://")
        expected = "expected postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
        # Never the value itself in a message: it may hold a password.
        try:
            backend = make_url(url).get_backend_name()
        except ArgumentError:
            raise ValueError(f"not a URL; {expected}") from None
        except ValueError:
            raise ValueError(f"its port is not a number; {expected}") from None
        if backend != "postgresql":
            raise ValueError(f"Paperclip needs PostgreSQL, not {backend!r}; {expected}")
        return url

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        level = value.upper()
        if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
            raise ValueError(f"unknown log level {value!r}")
        return level

    @property
    def pgdata(self) -> Path:
        """The embedded PostgreSQL's data folder."""
        return self.data_dir / "pgdata"

    def check_bind_address(self) -> None:
        """Refuse ``local_trusted`` on an address that other machines can reach."""
        if self.deployment_mode is DeploymentMode.LOCAL_TRUSTED and not is_loopback(self.host):
            raise ConfigurationError(
                f"deployment mode local_trusted serves without login and may only bind a loopback "
                f"address, not {self.host!r}. Bind 127.0.0.1, or set "
                "PAPERCLIP_DEPLOYMENT_MODE=authenticated and create a key with "
                "`paperclip keys create`."
            )


class ConfigurationError(Exception):
    """A setting or combination of settings that Paperclip refuses to run with."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
