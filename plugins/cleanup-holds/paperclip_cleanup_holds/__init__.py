"""The ``native_completed_turn_cleanup_hold`` recovery policy (seed 003)."""

__version__ = "0.1.0"

__all__ = ["__version__"]
