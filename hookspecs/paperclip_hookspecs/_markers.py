"""The pluggy markers. The spec marker is private: only this package declares hooks."""

from __future__ import annotations

import pluggy

PROJECT_NAME = "paperclip"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
