"""Paperclip provider plugin for Codex: drives ``codex app-server`` over JSON-RPC on stdio."""

from __future__ import annotations

__version__ = "0.7.1"

__all__ = ["__version__"]
