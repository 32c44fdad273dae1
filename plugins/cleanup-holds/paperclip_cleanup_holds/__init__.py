"""The ``native_completed_turn_cleanup_hold`` recovery policy (seed 003)."""

__version__ = "0.2.0"

__all__ = ["__version__"]
