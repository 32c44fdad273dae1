"""The in-process memory of callbacks is bounded at 4,096 entries; failed ones go first."""

from __future__ import annotations

from paperclip.engine.calls.callbacks import CAPACITY, CallbackMemory, CallbackState


def test_the_memory_holds_at_most_4096_entries():
    assert CAPACITY == 4096
    memory = CallbackMemory()
    for input_id in range(10_000):
        memory.failed(input_id)
    assert len(memory) == 4096
    assert not memory.failed_here(0) and memory.failed_here(9_999)
    assert memory.failed_here(10_000 - 4096) and not memory.failed_here(10_000 - 4097)


def test_eviction_drops_old_failed_entries_before_running_ones():
    memory = CallbackMemory(capacity=3)
    memory.started(1)
    memory.failed(2)
    memory.failed(3)
    memory.started(4)  # over the bound: the oldest failed entry goes, the running one stays
    assert memory.state(1) is CallbackState.RUNNING
    assert memory.state(2) is None and memory.state(3) is CallbackState.FAILED
    memory.started(5)
    memory.started(6)  # only running entries are left to evict: the oldest goes
    assert len(memory) == 3 and memory.state(1) is None


def test_a_finished_callback_is_forgotten_and_a_failure_ends_running():
    memory = CallbackMemory()
    memory.started(7)
    memory.failed(7)
    assert not memory.running(7) and memory.failed_here(7)
    memory.finished(7)
    assert memory.state(7) is None and len(memory) == 0
