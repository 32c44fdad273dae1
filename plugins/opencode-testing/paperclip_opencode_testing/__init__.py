"""The fake OpenCode server: a scripted stand-in for ``opencode serve``, for tests.

Run it as ``python -m paperclip_opencode_testing.fake_server``; what it speaks and its
scripts: :mod:`paperclip_opencode_testing.fake_server`.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
