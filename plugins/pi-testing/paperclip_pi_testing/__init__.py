"""The fake Pi: a scripted stand-in for ``pi --mode rpc``, for tests.

Run it as ``python -m paperclip_pi_testing.fake_pi``; what it speaks and its
scripts: :mod:`paperclip_pi_testing.fake_pi`.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
