"""Paperclip: a plugin-based control plane for AI coding agents."""

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "paperclip-control-plane"
"""The core's distribution name on the package index (the import package is ``paperclip``)."""

try:
    __version__ = version(DISTRIBUTION)
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"
