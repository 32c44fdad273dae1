"""The board in a real browser: Debian's Chromium, headless, driven by Playwright, against
``paperclip serve`` and the fake Codex as real processes (tox ``board``).

Playwright never downloads a browser here: it launches the system's
``/usr/bin/chromium`` (``PAPERCLIP_CHROMIUM`` overrides). Without it the tests
are skipped, unless ``PAPERCLIP_REQUIRE_BROWSER=1`` (the ``board`` env) makes
that a failure. Screenshots go to ``PAPERCLIP_BOARD_SCREENSHOTS`` when set
(``docs/board`` refreshes the ones docs/board.md shows), else to the test's
temporary folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.engine.conftest import Stack

CHROMIUM = os.environ.get("PAPERCLIP_CHROMIUM", "/usr/bin/chromium")
WIDE = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def chromium(stack):
    # Playwright's sync API keeps an event loop running in this thread while it is
    # started: the stack (whose database fixture runs its own loop) is made first.
    if not Path(CHROMIUM).exists():
        if os.environ.get("PAPERCLIP_REQUIRE_BROWSER") == "1":
            pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install chromium")
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport=WIDE)
    page = context.new_page()
    errors: list[str] = []
    # A script error or a CSP violation on the board fails the test.
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console",
        lambda msg: (
            errors.append(msg.text)
            if msg.type == "error" and "Content Security Policy" in msg.text
            else None
        ),
    )
    page.set_default_timeout(30_000)
    yield page
    context.close()
    assert errors == [], errors


@pytest.fixture
def screenshots(tmp_path):
    folder = Path(os.environ.get("PAPERCLIP_BOARD_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)

    def take(page, name: str, *, full_page: bool = False) -> Path:
        path = folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        return path

    return take


@pytest.fixture
def stack(paperclip_database_url, tmp_path):
    """As in tests/engine: a control plane, a runner and the fake Codex, as real processes."""
    s = Stack(database_url=paperclip_database_url, tmp=tmp_path)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def shared_stack(paperclip_database_url, tmp_path_factory):
    """One control plane, its local runner and the fake Codex for a whole module: tests that
    need no restart share them (each makes its own company), which keeps the module fast."""
    s = Stack(database_url=paperclip_database_url, tmp=tmp_path_factory.mktemp("board"))
    s.start_server(local_runner=True)
    yield s
    s.stop()
