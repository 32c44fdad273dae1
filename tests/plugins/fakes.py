"""Fake installed distributions: a folder on ``sys.path`` with ``*.dist-info`` and modules.

``importlib.metadata`` reads them exactly as it reads what pip installed, so
discovery runs unchanged. Each test gets its own folder and module names.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

HOOKSPECS_RANGE = "paperclip-hookspecs>=1.0,<2"


@dataclass
class FakeSite:
    """A site-packages of fake distributions, on ``sys.path`` for one test."""

    path: Path
    modules: list[str] = field(default_factory=list)

    def install(
        self,
        dist: str,
        version: str = "1.0.0",
        *,
        entry_points: dict[str, str],
        modules: dict[str, str],
        requires: Sequence[str] = (HOOKSPECS_RANGE,),
    ) -> None:
        """Write ``dist``'s metadata, its ``paperclip`` entry points and its modules."""
        for name, source in modules.items():
            (self.path / f"{name}.py").write_text(textwrap.dedent(source))
            self.modules.append(name)
        info = self.path / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        metadata = ["Metadata-Version: 2.1", f"Name: {dist}", f"Version: {version}"]
        metadata += [f"Requires-Dist: {r}" for r in requires]
        (info / "METADATA").write_text("\n".join(metadata) + "\n")
        points = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
        (info / "entry_points.txt").write_text(f"[paperclip]\n{points}")


def provider_module(*kinds: str) -> str:
    """A plugin module registering provider kinds (whose drivers are never created)."""
    items = ", ".join(
        f"ProviderKind(name={k!r}, capabilities=ProviderCapabilities(), create_driver=_driver)"
        for k in kinds
    )
    return f"""
        from paperclip_hookspecs import hookimpl
        from paperclip_hookspecs.providers import ProviderCapabilities, ProviderKind

        def _driver(ctx):
            return None

        @hookimpl
        def paperclip_providers():
            return [{items}]
        """


def policy_module(*names: str) -> str:
    """A plugin module registering recovery policies that find nothing to recover."""
    items = ", ".join(f"Nothing({n!r})" for n in names)
    return f"""
        from dataclasses import dataclass
        from paperclip_hookspecs import hookimpl
        from paperclip_hookspecs.recovery import OwnerProof, Settlement, SettlementOutcome

        @dataclass(frozen=True)
        class Nothing:
            name: str

            async def list_candidates(self, ctx, limit):
                return []

            async def prove_owner_gone(self, ctx, candidate):
                return OwnerProof(gone=False, reason="never")

            async def settle(self, ctx, candidate, proof):
                return Settlement(SettlementOutcome.KEPT)

        @hookimpl
        def paperclip_recovery_policies():
            return [{items}]
        """
