"""Paperclip: a plugin-based control plane for AI coding agents."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("paperclip")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"
