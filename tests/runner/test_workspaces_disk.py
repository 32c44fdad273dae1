"""The disk the runner's folders take, and the sweep of run folders past their retention."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from paperclip.runner.workspaces.disk import sweep_run_folders, tree_bytes, usage
from tests.support.git_repos import make_bare, make_repo, spec_for

NOW = datetime(2030, 1, 8, 12, 0, tzinfo=UTC)


def run_folder(runs: Path, name: str, modified: datetime, files: dict[str, datetime]) -> Path:
    folder = runs / name
    for relative, when in files.items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x\n")
        os.utime(target, (when.timestamp(), when.timestamp()))
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
        os.utime(sub, (modified.timestamp(), modified.timestamp()))
    os.utime(folder, (modified.timestamp(), modified.timestamp()))
    return folder


def test_only_old_run_folders_no_run_keeps_are_removed(tmp_path):
    runs = tmp_path / "runs"
    old, recent = NOW - timedelta(days=8), NOW - timedelta(hours=1)
    run_folder(runs, "old", old, {"state.json": old, "deep/er/file": old})
    run_folder(runs, "old-but-kept", old, {"state.json": old})
    run_folder(runs, "old-folder-new-file", old, {"deep/file": recent})
    run_folder(runs, "recent", recent, {"state.json": recent})
    readonly = run_folder(runs, "old-read-only", old, {"cache/mod/file": old})
    (readonly / "cache" / "mod").chmod(0o500)
    os.utime(readonly / "cache" / "mod", (old.timestamp(), old.timestamp()))
    (tmp_path / "outside").mkdir()
    (runs / "link").symlink_to(tmp_path / "outside")

    removed = sweep_run_folders(runs, timedelta(hours=168), {"old-but-kept"}, NOW)

    assert sorted(removed) == ["old", "old-read-only"]
    assert sorted(p.name for p in runs.iterdir()) == [
        "link",
        "old-but-kept",
        "old-folder-new-file",
        "recent",
    ]
    assert (tmp_path / "outside").is_dir()
    assert sweep_run_folders(tmp_path / "no-runs-yet", timedelta(hours=1), set(), NOW) == []


async def test_usage_counts_worktrees_their_bytes_and_the_mirrors(
    workspaces, repo, remotes, tmp_path
):
    assert usage(workspaces.work_dir) == usage(tmp_path / "nothing-here")
    one = await workspaces.ensure(spec_for(repo, "ACM-1"))
    await workspaces.ensure(spec_for(repo, "ACM-2"))
    (one.path / "big.bin").write_bytes(b"\1" * 200_000)
    (one.path / "link-out").symlink_to(tmp_path)  # not followed, not counted

    found = usage(workspaces.work_dir)

    assert found.workspace_count == 2
    assert 200_000 <= found.workspace_bytes < 200_000 + tree_bytes(tmp_path / "repos") + 1_000_000
    assert found.mirror_bytes == 0

    bare = make_bare(make_repo(tmp_path / "up"), remotes / "up.git")
    await workspaces.ensure(spec_for(f"file://{bare}", "ACM-3"))
    after = usage(workspaces.work_dir)
    assert after.workspace_count == 3 and after.mirror_bytes > 0
