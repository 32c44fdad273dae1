"""Paperclip provider plugin for a remote agent behind an OpenClaw gateway (its WebSocket protocol)."""

from __future__ import annotations

__version__ = "0.4.1"

__all__ = ["__version__"]
