"""The ``lost_runs`` recovery policy: a run lost with its runner or provider goes on."""

__version__ = "0.2.0"

__all__ = ["__version__"]
