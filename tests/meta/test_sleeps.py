"""Tests wait on observable state, never on the clock.

A test that sleeps "long enough" is slow where the machine is fast and flaky
where it is slow. So a sleep in a test is either short polling (a literal of
at most half a second, or a named interval inside a loop, as ``wait_until``
does) or a delay that is itself the thing under test (a slow client, a slow
model), marked on its line with ``# deliberate:`` and why. Anything else
waits on state: ``wait_until`` a row, a log line, an API figure, a failpoint.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
LONGEST_POLL = 0.5
"""Seconds: a literal sleep up to this long is a poll interval."""
SLEEPS = {"sleep"}
"""``time.sleep``, ``asyncio.sleep`` and a bare imported ``sleep``."""


def _sleeps(tree: ast.AST):
    """Each sleep call with whether it sits inside a loop."""

    def walk(node: ast.AST, in_loop: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, False)  # a function body is its own place
                continue
            loop = in_loop or isinstance(child, ast.While | ast.For | ast.AsyncFor)
            if isinstance(child, ast.Call):
                func = child.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in SLEEPS and child.args:
                    yield child, in_loop
            yield from walk(child, loop)

    yield from walk(tree, False)


def _refused(call: ast.Call, in_loop: bool, line: str) -> bool:
    if "# deliberate:" in line:
        return False
    length = call.args[0]
    if isinstance(length, ast.Constant) and isinstance(length.value, int | float):
        return length.value > LONGEST_POLL
    # A named interval (``interval``, ``self.step``) polls only inside a loop.
    return not (in_loop and isinstance(length, ast.Name | ast.Attribute))


def refused_sleeps() -> list[str]:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        source = path.read_text()
        lines = source.splitlines()
        for call, in_loop in _sleeps(ast.parse(source)):
            if _refused(call, in_loop, lines[call.lineno - 1]):
                found.append(f"{path.relative_to(TESTS.parent)}:{call.lineno}: {ast.unparse(call)}")
    return found


def test_no_test_sleeps_instead_of_waiting_on_state():
    assert refused_sleeps() == [], (
        "wait on observable state (wait_until a row, a log line, an API figure), not on the "
        "clock; a delay that is what the test is about says so with '# deliberate: why'"
    )


def test_the_rule_tells_a_poll_from_a_wait():
    source = """
import time
time.sleep(3)
time.sleep(0.2)
time.sleep(2 * lease + 3)
while True:
    time.sleep(interval)
    time.sleep(2 * lease)
time.sleep(gap)  # deliberate: the client under test is slow
def f():
    time.sleep(interval)
"""
    lines = source.splitlines()
    refused = [
        call.lineno
        for call, in_loop in _sleeps(ast.parse(source))
        if _refused(call, in_loop, lines[call.lineno - 1])
    ]
    assert refused == [3, 5, 8, 11]
