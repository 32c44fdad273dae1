"""Every hook of the contract is documented in docs/plugins/ and has a test named after it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

import pytest
from paperclip_hookspecs import HOOK_API, PROJECT_NAME

from paperclip.plugin_host import SPEC_MODULES, PluginHost

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "plugins"
TEST_ROOTS = [ROOT / "tests", *sorted((ROOT / "plugins").glob("*/tests"))]
HEADING = re.compile(r"^#+ .*?\b(paperclip_\w+)", re.MULTILINE)


def specs_of(module: ModuleType) -> list[str]:
    """The hooks a family module declares (functions carrying the spec marker)."""
    return sorted(
        name
        for name, value in vars(module).items()
        if name.startswith("paperclip_") and hasattr(value, f"{PROJECT_NAME}_spec")
    )


def documented(docs: Path) -> dict[str, set[str]]:
    """For each page under ``docs``, the hooks it has a heading for."""
    return {page.name: set(HEADING.findall(page.read_text())) for page in sorted(docs.glob("*.md"))}


def names_of_tests(roots: Iterable[Path]) -> set[str]:
    names = set()
    for root in roots:
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    if node.name.startswith("test_"):
                        names.add(node.name)
    return names


def undocumented_families(modules: Iterable[ModuleType], docs: Path) -> list[str]:
    """Families whose hooks are not all headings of one page (one page per family)."""
    pages = documented(docs)
    return [
        f"{module.__name__}: {', '.join(specs_of(module))}"
        for module in modules
        if not any(set(specs_of(module)) <= headed for headed in pages.values())
    ]


def untested(specs: Iterable[str], roots: Iterable[Path]) -> list[str]:
    names = names_of_tests(roots)
    return [spec for spec in specs if not any(spec in name for name in names)]


ALL_SPECS = sorted(spec for module in SPEC_MODULES for spec in specs_of(module))


def test_every_family_module_is_registered_by_the_host():
    assert set(PluginHost().spec_names()) == set(ALL_SPECS)
    assert len(ALL_SPECS) >= 6


def test_every_hookspec_is_documented_on_its_familys_page():
    assert undocumented_families(SPEC_MODULES, DOCS) == []


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_every_hookspec_has_a_test_named_after_it(spec):
    assert untested([spec], TEST_ROOTS) == [], f"no test function's name contains {spec}"


def test_the_meta_checks_fail_for_a_new_spec(tmp_path):
    family = ModuleType("paperclip_hookspecs.brand_new")

    def paperclip_brand_new() -> None:
        """A hook nobody documented or tested yet."""

    setattr(paperclip_brand_new, f"{PROJECT_NAME}_spec", {})
    family.paperclip_brand_new = paperclip_brand_new  # type: ignore[attr-defined]
    docs, tests = tmp_path / "docs", tmp_path / "tests"
    docs.mkdir()
    tests.mkdir()
    (docs / "other.md").write_text(
        "# Other\n\nMentions `paperclip_brand_new` but not as a heading.\n"
    )
    (tests / "test_other.py").write_text("def test_something_else():\n    'paperclip_brand_new'\n")

    assert undocumented_families([family], docs) == [
        "paperclip_hookspecs.brand_new: paperclip_brand_new"
    ]
    assert untested(["paperclip_brand_new"], [tests]) == ["paperclip_brand_new"]

    (docs / "brand-new.md").write_text("# Brand new\n\n## `paperclip_brand_new`\n")
    (tests / "test_brand_new.py").write_text(
        "async def test_paperclip_brand_new_works():\n    pass\n"
    )
    assert undocumented_families([family], docs) == []
    assert untested(["paperclip_brand_new"], [tests]) == []


def test_the_contract_version_is_the_distribution_version_and_has_a_changelog_entry():
    project = (ROOT / "hookspecs" / "pyproject.toml").read_text()
    assert f'\nversion = "{HOOK_API}"\n' in project
    assert f"\n## {HOOK_API}\n" in (ROOT / "hookspecs" / "CHANGELOG.md").read_text()
