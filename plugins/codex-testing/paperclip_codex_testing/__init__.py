"""The fake Codex: a scripted stand-in for ``codex app-server``, for tests.

Run it as ``python -m paperclip_codex_testing.fake_app_server``; what it speaks and
its scripts: :mod:`paperclip_codex_testing.fake_app_server`.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
