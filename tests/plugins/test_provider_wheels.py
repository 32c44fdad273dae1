"""A provider's wheel carries no test code: its fake is its testing distribution's (tox ``py311``).

Each provider of plugins/ and its testing distribution beside it (``plugins/<name>-testing``,
``paperclip-<name>-testing``) are built here as wheels, as a release builds them, and
read: the provider's holds no ``fake_*`` module and no testing package, the testing
distribution's holds the fakes, and the provider's ``testing`` extra brings them.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from email.message import Message
from email.parser import Parser
from pathlib import Path, PurePosixPath

import pytest

# Builds with uv, which tox env py311 installs beside the plugins.
pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

ROOT = Path(__file__).resolve().parents[2]
FAKES = {
    "codex": {
        "fake_app_server",
        "fake_mcp",
        "fake_sandbox",
        "fake_script",
        "fake_threads",
        "fake_tools",
        "fake_turn",
        "fake_usage",
    },
    "opencode": {"fake_server", "fake_turn", "fake_script"},
    "pi": {"fake_pi", "fake_turn", "fake_script"},
    "gateway": {"fake_gateway", "fake_run"},
}
"""Each provider, and the modules of its fake."""
PROVIDERS = sorted(FAKES)


def fakes_in(names: list[str]) -> list[str]:
    """The files of a wheel that are test code: a ``fake_*`` module, or a testing package."""
    found = []
    for name in names:
        path = PurePosixPath(name)
        if path.suffix != ".py":
            continue
        if path.stem.startswith("fake_") or any(p.endswith("_testing") for p in path.parts[:-1]):
            found.append(name)
    return found


def modules_of(names: list[str], package: str) -> set[str]:
    """The modules of one package of a wheel (its ``__init__`` aside)."""
    return {
        PurePosixPath(n).stem
        for n in names
        if PurePosixPath(n).parent == PurePosixPath(package)
        and n.endswith(".py")
        and not n.endswith("/__init__.py")
    }


def metadata(wheel: Path) -> tuple[list[str], Message]:
    """A wheel's file names and its METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [meta] = [n for n in names if n.endswith(".dist-info/METADATA")]
        return names, Parser().parsestr(archive.read(meta).decode())


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every provider's wheel and its testing distribution's, by folder name."""
    out = tmp_path_factory.mktemp("wheels")
    folders = [f for name in PROVIDERS for f in (name, f"{name}-testing")]
    build = [sys.executable, "-m", "uv", "build", "--quiet", "--wheel", "--out-dir"]
    builds = {
        folder: subprocess.Popen(
            [*build, str(out / folder), str(ROOT / "plugins" / folder)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for folder in folders
    }
    built = {}
    for folder, build in builds.items():
        log, _ = build.communicate(timeout=600)
        assert build.returncode == 0, f"uv build plugins/{folder}:\n{log[-4000:]}"
        [built[folder]] = (out / folder).glob("*.whl")
    return built


def test_every_provider_with_a_fake_has_its_testing_distribution_beside_it():
    testing = {p.parent.name for p in (ROOT / "plugins").glob("*-testing/pyproject.toml")}
    assert testing == {f"{name}-testing" for name in PROVIDERS}
    for name in PROVIDERS:
        assert not list((ROOT / "plugins" / name / f"paperclip_{name}").glob("fake_*.py"))


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_providers_wheel_holds_no_fake(name, wheels):
    names, meta = metadata(wheels[name])

    assert meta["Name"] == f"paperclip-{name}"
    assert f"paperclip_{name}/plugin.py" in names
    assert fakes_in(names) == []


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_testing_wheel_holds_its_providers_fake_and_nothing_of_the_provider(name, wheels):
    names, meta = metadata(wheels[f"{name}-testing"])
    package = f"paperclip_{name}_testing"

    assert meta["Name"] == f"paperclip-{name}-testing"
    assert modules_of(names, package) == FAKES[name]
    assert not [n for n in names if n.startswith(f"paperclip_{name}/")]
    assert f"{package}/py.typed" in names


@pytest.mark.parametrize("name", PROVIDERS)
def test_the_providers_testing_extra_brings_its_fake(name, wheels):
    _, meta = metadata(wheels[name])
    requires = meta.get_all("Requires-Dist") or []

    assert "testing" in (meta.get_all("Provides-Extra") or [])
    for extra in ("testing", "fake", "test"):
        assert any(
            r.startswith(f"paperclip-{name}-testing")
            and f"extra == '{extra}'" in r.replace('"', "'")
            for r in requires
        ), (extra, requires)
    assert not any(r.startswith(f"paperclip-{name}-testing") and "extra" not in r for r in requires)


def test_the_check_sees_a_fake_module_and_a_testing_package():
    names = [
        "paperclip_example/driver.py",
        "paperclip_example/fake_app_server.py",
        "paperclip_example_testing/script.py",
        "paperclip_example/py.typed",
        "paperclip_example-0.1.0.dist-info/METADATA",
    ]
    assert fakes_in(names) == [
        "paperclip_example/fake_app_server.py",
        "paperclip_example_testing/script.py",
    ]
