"""This process's memory of tool callbacks: which it runs now, which it saw fail.

Recovery asks it before settling an input without a result: a callback this
process still runs will settle with its own result, and one this controller
saw fail is not an orphan. The memory is bounded (``CAPACITY`` entries);
eviction drops failed entries first, oldest first. Forgetting an entry can
only let an input settle as interrupted (outcome unknown) later, never
replay a tool: recovery never runs a plugin tool again.
"""

from __future__ import annotations

from collections import OrderedDict
from enum import StrEnum

CAPACITY = 4096


class CallbackState(StrEnum):
    RUNNING = "running"
    FAILED = "failed"


class CallbackMemory:
    """Input ids (``tool_calls.id``) of callbacks this process runs or saw fail."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._running: OrderedDict[int, None] = OrderedDict()
        self._failed: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._running) + len(self._failed)

    def started(self, input_id: int) -> None:
        """This process is about to run the callback."""
        self._failed.pop(input_id, None)
        self._running[input_id] = None
        self._bound()

    def finished(self, input_id: int) -> None:
        """Its result is saved (or it was answered): nothing to remember."""
        self._running.pop(input_id, None)
        self._failed.pop(input_id, None)

    def failed(self, input_id: int) -> None:
        """It ran here but its result could not be saved: recovery must not treat it as orphaned."""
        self._running.pop(input_id, None)
        self._failed[input_id] = None
        self._bound()

    def state(self, input_id: int) -> CallbackState | None:
        if input_id in self._running:
            return CallbackState.RUNNING
        if input_id in self._failed:
            return CallbackState.FAILED
        return None

    def running(self, input_id: int) -> bool:
        return input_id in self._running

    def failed_here(self, input_id: int) -> bool:
        return input_id in self._failed

    def _bound(self) -> None:
        while len(self) > self.capacity:
            # The oldest failed entry goes first; a running one only when nothing else is left.
            (self._failed or self._running).popitem(last=False)
