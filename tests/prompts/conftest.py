"""Fixtures for the prompt tests: a fresh plugin manager per test, and plugin registration."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import paperclip_hookspecs.prompts as prompt_specs
import pluggy
import pytest
from paperclip_hookspecs import PROJECT_NAME

from paperclip.prompts import plugin as builtin_prompts
from paperclip.prompts.hooks import PromptHooks


@pytest.fixture
def pm() -> pluggy.PluginManager:
    """A fresh plugin manager with the prompt hookspecs and the built-in rendering."""
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(prompt_specs)
    manager.register(builtin_prompts, name="paperclip.prompts")
    return manager


@pytest.fixture
def hooks(pm: pluggy.PluginManager) -> PromptHooks:
    return PromptHooks(pm)


@pytest.fixture
def register_plugin(pm: pluggy.PluginManager) -> Iterator[Callable[[Any], Any]]:
    """Register a plugin object for one test; it is unregistered at teardown."""
    added: list[Any] = []

    def register(obj: Any) -> Any:
        pm.register(obj)
        added.append(obj)
        return obj

    yield register
    for obj in added:
        pm.unregister(obj)
