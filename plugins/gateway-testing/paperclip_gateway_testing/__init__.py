"""The fake gateway: a scripted stand-in for an OpenClaw gateway, for tests.

Run it as ``python -m paperclip_gateway_testing.fake_gateway``; what it speaks and its
scripts: :mod:`paperclip_gateway_testing.fake_gateway`.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
