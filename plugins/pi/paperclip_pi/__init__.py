"""Paperclip provider plugin for Pi: drives ``pi --mode rpc`` (JSON lines on stdio)."""

from __future__ import annotations

__version__ = "0.4.1"

__all__ = ["__version__"]
