"""``PluginHost``: the one path through which the core calls plugins.

The host owns a pluggy manager with every hook family of the contract. Built-in
plugins register first and installed plugins (entry points) after, so an
installed plugin is asked before a built-in by ``firstresult`` hooks; built-in
fallbacks are ``trylast`` as well. Core code calls the typed methods below,
never ``pm.hook`` directly: the host names the plugin behind every failure,
refuses duplicate names, and turns "no answer" into an error instead of None.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import pluggy
from paperclip_hookspecs import HOOK_API, PROJECT_NAME
from paperclip_hookspecs import budgets as budgets_family
from paperclip_hookspecs import completion as completion_family
from paperclip_hookspecs import plugin_tools as plugin_tools_family
from paperclip_hookspecs import presentation as presentation_family
from paperclip_hookspecs import prompts as prompts_family
from paperclip_hookspecs import providers as providers_family
from paperclip_hookspecs import receipts as receipts_family
from paperclip_hookspecs import recovery as recovery_family
from paperclip_hookspecs import steering as steering_family
from paperclip_hookspecs.budgets import BudgetAlert
from paperclip_hookspecs.completion import CompletionCheck, CompletionRefusal
from paperclip_hookspecs.plugin_tools import PluginTool
from paperclip_hookspecs.presentation import (
    ConversationTurn,
    PresentationDecision,
    UnpresentedTurn,
)
from paperclip_hookspecs.prompts import (
    CommentSource,
    CompletionReference,
    Continuation,
    ContinuationOptions,
    ReferenceCheck,
    RenderedContinuation,
    RenderedSection,
    SectionRequest,
    SectionSelection,
    SourceBlock,
    TaskMarkdownOptions,
    TaskSource,
    TurnContext,
    WakePromptOptions,
    WakeSource,
)
from paperclip_hookspecs.providers import ProviderKind
from paperclip_hookspecs.receipts import PendingToolInput, ToolRecovery
from paperclip_hookspecs.recovery import RecoveryPolicy
from paperclip_hookspecs.runs import RunView
from paperclip_hookspecs.steering import SteerLogEvent

from paperclip.plugin_host import calling, discovery, failures
from paperclip.plugin_host.budget import DEFAULT_SECONDS, HookBudget
from paperclip.plugin_host.errors import (
    NoPluginAnswerError,
    PluginConflictError,
    PluginError,
    PluginHookError,
    PluginLoadError,
    ProviderNotInstalledError,
)
from paperclip.plugin_host.records import PluginRecord, PluginReport, PluginStatus, SkipCode
from paperclip.wire.tools import BY_NAME, ToolSpec

if TYPE_CHECKING:
    from paperclip.settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")

SPEC_MODULES: tuple[ModuleType, ...] = (
    providers_family,
    prompts_family,
    receipts_family,
    completion_family,
    presentation_family,
    recovery_family,
    plugin_tools_family,
    steering_family,
    budgets_family,
)
"""Every hook family of the contract, in the order of DESIGN.md section 3."""


class PluginHost:
    """Plugins of one process: discovery records, the pluggy manager, the typed calls."""

    def __init__(
        self,
        *,
        strict: bool = False,
        hook_api: str = HOOK_API,
        hook_budget: float = DEFAULT_SECONDS,
    ) -> None:
        self.hook_api = hook_api
        self.strict = strict
        self.budget = HookBudget(hook_budget)
        """How long an installed plugin's hook may run (``PAPERCLIP_PLUGINS_HOOK_BUDGET_SECONDS``)."""
        self._pm = pluggy.PluginManager(PROJECT_NAME)
        for module in SPEC_MODULES:
            self._pm.add_hookspecs(module)
        self._records: list[PluginRecord] = []
        self._loaded: dict[str, PluginRecord] = {}
        """Registered plugins by their pluggy name: whom a hook implementation belongs to."""
        self._registered: dict[str, list[tuple[Any, PluginRecord]]] = {}

    # -- building a host ---------------------------------------------------------------

    @classmethod
    def from_settings(cls, settings: Settings) -> PluginHost:
        """Built-ins, then every installed plugin the settings allow. Never raises for a plugin:
        ``check_pending()`` (run at startup) does, in strict mode or on conflicts."""
        host = cls(strict=settings.plugins_strict, hook_budget=settings.plugins_hook_budget_seconds)
        host.load_builtins(disable=settings.plugins_disable)
        host.load_installed(disable=settings.plugins_disable, only=settings.plugins_only)
        loaded = [r.name for r in host.records() if r.status is PluginStatus.LOADED]
        log.info("plugins loaded: %s (hook API %s)", ", ".join(loaded) or "none", host.hook_api)
        return host

    @classmethod
    def with_builtins(cls) -> PluginHost:
        """A host with the built-in plugins only, as tests start from."""
        host = cls()
        host.load_builtins()
        return host

    def load_builtins(self, *, disable: frozenset[str] = frozenset()) -> None:
        """Register the core's built-in plugins (first, so installed ones are asked before them)."""
        for found in discovery.builtin_plugins(disable):
            self._add(found)

    def load_installed(
        self, *, disable: frozenset[str] = frozenset(), only: frozenset[str] | None = None
    ) -> None:
        """Register the installed plugins (entry point group ``paperclip``) that pass the gate."""
        for found in discovery.installed_plugins(self.hook_api, disable=disable, only=only):
            self._add(found)

    def register(self, plugin: object, name: str | None = None) -> PluginRecord:
        """Register a plugin object in process (tests, embedding); raises if it does not fit."""
        name = name or self._pm.get_canonical_name(plugin)
        record = PluginRecord(
            name=name,
            distribution="",
            version="",
            entry_point=getattr(plugin, "__name__", type(plugin).__name__),
            builtin=False,
            status=PluginStatus.SKIPPED,
        )
        record = self._register(record, plugin)
        if record.status is not PluginStatus.LOADED:
            raise PluginLoadError(f"{record.label} was not registered: {record.reason}")
        return self._keep(record)

    def unregister(self, name: str) -> None:
        """Remove a registered plugin and its record; KeyError if none has that name."""
        record = self._loaded.pop(name)
        self._pm.unregister(name=name)
        self._records.remove(record)
        self._registered.clear()

    def _add(self, found: discovery.Found) -> PluginRecord:
        record = found.record
        if found.plugin is not None:
            record = self._register(record, found.plugin)
        return self._keep(record)

    def _keep(self, record: PluginRecord) -> PluginRecord:
        if record.status is PluginStatus.LOADED:
            self._loaded[record.name] = record
        self._records.append(record)
        return record

    def _register(self, record: PluginRecord, plugin: object) -> PluginRecord:
        taken = self._loaded.get(record.name)
        if taken is not None:
            return discovery.skip(record, SkipCode.INVALID, f"the name is taken by {taken.label}")
        try:
            self._pm.register(plugin, name=record.name)
        except (pluggy.PluginValidationError, ValueError) as exc:
            # pluggy's message spans lines; a skip is reported in one.
            reason = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
            return discovery.skip(record, SkipCode.INVALID, reason)
        callers = self._pm.get_hookcallers(plugin) or []
        unknown = sorted(c.name for c in callers if not c.has_spec())
        if unknown:
            self._pm.unregister(plugin)
            return discovery.skip(
                record,
                SkipCode.INVALID,
                f"implements {', '.join(unknown)}, which hook API {self.hook_api} does not define",
            )
        self._registered.clear()
        return replace(
            record, status=PluginStatus.LOADED, hooks=tuple(sorted(c.name for c in callers))
        )

    # -- what is loaded ----------------------------------------------------------------

    def records(self) -> tuple[PluginRecord, ...]:
        """Every plugin found, in registration order: built-ins, then installed by name."""
        return tuple(self._records)

    def spec_names(self) -> tuple[str, ...]:
        """The name of every hook the contract specifies."""
        return tuple(
            sorted(name for name, caller in vars(self._pm.hook).items() if caller.has_spec())
        )

    def check_pending(self) -> None:
        """Run at startup: raise the first reason this set of plugins must not serve."""
        for check in self._checks():
            check()

    def problems(self) -> tuple[str, ...]:
        """Every reason ``check_pending()`` would raise, for reports."""
        found = []
        for check in self._checks():
            try:
                check()
            except PluginError as exc:
                found.append(str(exc))
        return tuple(found)

    def report(self) -> PluginReport:
        """What ``paperclip plugins`` and ``GET /api/plugins`` show."""
        return PluginReport(self.hook_api, self.records(), self.problems())

    def _checks(self) -> list[Callable[[], object]]:
        return [
            self._check_specs,
            self._check_strict,
            self.providers,
            self.recovery_policies,
            self.tools,
        ]

    def _check_specs(self) -> None:
        try:
            self._pm.check_pending()
        except pluggy.PluginValidationError as exc:
            raise PluginLoadError(str(exc)) from exc

    def _check_strict(self) -> None:
        failed = [r for r in self.records() if r.failed]
        if self.strict and failed:
            listed = "; ".join(f"{r.label}: {r.reason}" for r in failed)
            raise PluginLoadError(f"strict mode (PAPERCLIP_PLUGINS_STRICT): not loaded: {listed}")

    # -- registration hooks ------------------------------------------------------------

    def providers(self) -> list[ProviderKind]:
        """Every registered provider kind; raises on two kinds with one name."""
        return [
            kind for kind, _ in self._collect("paperclip_providers", ProviderKind, "provider kind")
        ]

    def provider(self, name: str) -> ProviderKind:
        """The provider kind called ``name``, or a 409 saying no installed plugin provides it."""
        kinds = {kind.name: kind for kind in self.providers()}
        if name in kinds:
            return kinds[name]
        raise ProviderNotInstalledError(
            f"no installed plugin provides the provider {name!r} "
            f"(installed: {', '.join(sorted(kinds)) or 'none'}); "
            f"install its plugin (e.g. paperclip-{name}) and restart",
            details={"provider": name, "installed": sorted(kinds)},
        )

    def recovery_policies(self) -> list[RecoveryPolicy]:
        """Every registered recovery policy; raises on two policies with one name."""
        return [
            policy
            for policy, _ in self._collect(
                "paperclip_recovery_policies", RecoveryPolicy, "recovery policy"
            )
        ]

    def tools(self) -> list[PluginTool]:
        """Every tool plugins add to the catalog; raises on two tools with one name, or one
        named like a core tool."""
        collected = self._collect("paperclip_tools", PluginTool, "tool")
        for tool, record in collected:
            if tool.name in BY_NAME:
                raise PluginConflictError(
                    f"tool {tool.name!r} of {record.label} has the name of a core tool; "
                    "rename it, or disable the plugin with PAPERCLIP_PLUGINS_DISABLE"
                )
        return [tool for tool, _ in collected]

    def owner_of_tool(self, name: str) -> str | None:
        """The name of the plugin that registered the tool ``name``."""
        for tool, record in self._collect("paperclip_tools", PluginTool, "tool"):
            if tool.name == name:
                return record.name
        return None

    def tool_specs(self) -> list[ToolSpec]:
        """The catalog entries of the plugins' tools, as the runner lists them to the model."""
        return [
            ToolSpec(
                name=tool.name,
                description=tool.description,
                input_schema=dict(tool.input_schema),
                writes=not tool.read_only,
                title=tool.title,
                destructive=tool.destructive,
                open_world=tool.open_world,
                idempotent=tool.idempotent,
            )
            for tool in self.tools()
        ]

    def _collect(self, hook: str, kind: type, what: str) -> list[tuple[Any, PluginRecord]]:
        # Each implementation is called on its own, not through pluggy's fan-out, so
        # every item (and every exception) is known to come from one plugin.
        cached = self._registered.get(hook)
        if cached is not None:
            return cached
        items: dict[str, tuple[Any, PluginRecord]] = {}
        for impl in getattr(self._pm.hook, hook).get_hookimpls():
            if impl.hookwrapper or impl.wrapper:
                continue
            record = self._loaded[impl.plugin_name]
            result = self._register_call(hook, impl, record)
            for item in result or ():
                name = getattr(item, "name", None)
                if not isinstance(item, kind) or not isinstance(name, str) or not name:
                    raise self._bad_result(hook, f"a {kind.__name__} with a name", item, record)
                if name in items:
                    first = items[name][1]
                    raise PluginConflictError(
                        f"{what} {name!r} is registered by both {first.label} and {record.label}; "
                        "uninstall one, or disable it with PAPERCLIP_PLUGINS_DISABLE"
                    )
                items[name] = (item, record)
        collected = list(items.values())
        self._registered[hook] = collected
        return collected

    # -- decision hooks ----------------------------------------------------------------

    def recover_tool_input(self, pending: PendingToolInput) -> ToolRecovery:
        """What becomes of a tool input with no saved result (seed 003)."""
        return self._decide("paperclip_recover_tool_input", ToolRecovery, pending=pending)

    def check_completion(self, check: CompletionCheck) -> CompletionRefusal | None:
        """The first guard's refusal of a completion report, or None: accepted."""
        return self._optional("paperclip_check_completion", CompletionRefusal, check=check)

    def unread_steers(self, events: Sequence[SteerLogEvent]) -> tuple[str, ...]:
        """The acknowledged steers the model has not read, oldest first (seed 004); none
        when no plugin answers."""
        caller = self._pm.hook.paperclip_unread_steers
        result = self._call(caller, events=tuple(events))
        if result is None:
            return ()
        if isinstance(result, str) or not all(isinstance(i, str) for i in result):
            raise self._bad_result(
                "paperclip_unread_steers", "a sequence of message ids or None", result, None
            )
        return tuple(dict.fromkeys(result))

    def decide_presentation(self, turn: ConversationTurn) -> PresentationDecision:
        """Whether a finished conversation turn's prose is its answer (seed 002)."""
        return self._decide("paperclip_decide_presentation", PresentationDecision, turn=turn)

    def accept_unpresented_turn(self, turn: UnpresentedTurn) -> bool:
        """May presentation recovery present this committed conversation turn (seed 002)?
        No when no plugin answers."""
        return bool(self._optional("paperclip_accept_unpresented_turn", bool, turn=turn))

    # -- notifications -----------------------------------------------------------------

    def budget_alert(self, alert: BudgetAlert) -> None:
        """Tell every plugin that implements it that a budget crossed a line; answers ignored."""
        hook = "paperclip_budget_alert"
        self._call(getattr(self._pm.hook, hook), alert=alert)

    # -- prompt rendering (seed 001): the built-in prompt plugin always answers ------

    def render_task_markdown(
        self, task: TaskSource, options: TaskMarkdownOptions
    ) -> RenderedSection:
        return self._decide(
            "paperclip_render_task_markdown", RenderedSection, task=task, options=options
        )

    def render_wake_prompt(
        self, wake: WakeSource, task: TaskSource, options: WakePromptOptions
    ) -> RenderedSection:
        return self._decide(
            "paperclip_render_wake_prompt", RenderedSection, wake=wake, task=task, options=options
        )

    def build_turn_context(self, task: TaskSource, wake: WakeSource) -> TurnContext:
        return self._decide("paperclip_build_turn_context", TurnContext, task=task, wake=wake)

    def select_prompt_sections(self, request: SectionRequest) -> SectionSelection:
        return self._decide("paperclip_select_prompt_sections", SectionSelection, request=request)

    def render_continuation(
        self,
        continuation: Continuation,
        task: TaskSource,
        comments: tuple[CommentSource, ...],
        options: ContinuationOptions,
    ) -> RenderedContinuation:
        return self._decide(
            "paperclip_render_continuation",
            RenderedContinuation,
            continuation=continuation,
            task=task,
            comments=comments,
            options=options,
        )

    def validate_completion_references(
        self, references: tuple[CompletionReference, ...], rendered: tuple[SourceBlock, ...]
    ) -> ReferenceCheck:
        return self._decide(
            "paperclip_validate_completion_references",
            ReferenceCheck,
            references=references,
            rendered=rendered,
        )

    def render_completion_recovery(self, task: TaskSource, run: RunView) -> RenderedSection:
        return self._decide(
            "paperclip_render_completion_recovery", RenderedSection, task=task, run=run
        )

    def _decide(self, hook: str, kind: type[T], **kwargs: Any) -> T:
        result = self._optional(hook, kind, **kwargs)
        if result is None:
            raise NoPluginAnswerError(
                f"no plugin answered {hook}: is its built-in plugin disabled "
                "(PAPERCLIP_PLUGINS_DISABLE)?"
            )
        return result

    def _optional(self, hook: str, kind: type[T], **kwargs: Any) -> T | None:
        caller = getattr(self._pm.hook, hook)
        result = self._call(caller, **kwargs)
        if result is not None and not isinstance(result, kind):
            implementers = [self._loaded[i.plugin_name] for i in caller.get_hookimpls()]
            owner = implementers[-1] if len(implementers) == 1 else None
            raise self._bad_result(hook, f"a {kind.__name__} or None", result, owner, implementers)
        return result

    # -- the time budget, and naming the plugin behind a failure ---------------------

    def _call(self, caller: pluggy.HookCaller, **kwargs: Any) -> Any:
        """Every call goes through here: installed plugins within the budget, failures named."""
        return calling.call_hook(self._pm, self._loaded, self.budget, caller, kwargs)

    def _register_call(self, hook: str, impl: pluggy.HookImpl, record: PluginRecord) -> Any:
        """One plugin's registration hook, within the budget unless it is a built-in."""
        return calling.call_registration(self.budget, hook, impl, record)

    def _bad_result(
        self,
        hook: str,
        expected: str,
        got: object,
        record: PluginRecord | None,
        candidates: Sequence[PluginRecord] = (),
    ) -> PluginHookError:
        return failures.bad_result(hook, expected, got, record, candidates)
