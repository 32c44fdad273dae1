"""Paperclip provider plugin for OpenCode: drives ``opencode serve`` over its HTTP API and events."""

from __future__ import annotations

__version__ = "0.4.1"

__all__ = ["__version__"]
