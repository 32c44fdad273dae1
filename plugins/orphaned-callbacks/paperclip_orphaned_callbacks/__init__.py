"""The orphaned-callback policy: tool callbacks a restart interrupted settle by themselves (seed 003)."""

__version__ = "0.2.0"

__all__ = ["__version__"]
