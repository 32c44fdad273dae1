"""The merges this runner made or refused, kept on disk: a request sent again is answered the same.

``<work dir>/merges/<request id>.json`` holds first the merge about to be made
(written just before the base branch moves), then the answer that was sent
(``workspace_merged``). Each write goes to a temporary file, is flushed to disk
and renamed into place. So a request the control plane sends again (its answer
was lost with a runner that stopped) gets the answer it had, and a merge whose
runner stopped between moving the base branch and answering is found on the
base branch instead of being made twice. Records older than the run folders'
retention are removed with them.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import msgspec

from paperclip.runner.workspaces.merging import Merged
from paperclip.wire.messages import WorkspaceMerged


class _Intent(msgspec.Struct):
    commit: str
    head: str
    base_before: str
    merged_commits: int


class _Record(msgspec.Struct):
    intent: _Intent | None = None
    answer: WorkspaceMerged | None = None


class MergeRecords:
    """The records under ``folder`` (made 0700 on first use)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def answer(self, request_id: uuid.UUID) -> WorkspaceMerged | None:
        """The answer given to this request before, if any."""
        return self._read(request_id).answer

    def intent(self, request_id: uuid.UUID) -> Merged | None:
        """The merge this request was about to make when no answer was kept, if any."""
        record = self._read(request_id)
        if record.answer is not None or record.intent is None:
            return None
        return Merged(**msgspec.structs.asdict(record.intent))

    def save_intent(self, request_id: uuid.UUID, merged: Merged) -> None:
        intent = _Intent(merged.commit, merged.head, merged.base_before, merged.merged_commits)
        self._write(request_id, _Record(intent=intent))

    def save_answer(self, answer: WorkspaceMerged) -> None:
        self._write(answer.request_id, _Record(answer=answer))

    def sweep(self, older_than: timedelta, now: datetime) -> int:
        """Remove the records untouched for ``older_than``; how many."""
        if not self.folder.is_dir():
            return 0
        cutoff = (now - older_than).timestamp()
        removed = 0
        for entry in self.folder.iterdir():
            with contextlib.suppress(OSError):
                if entry.stat().st_mtime < cutoff:
                    entry.unlink()
                    removed += 1
        return removed

    def _path(self, request_id: uuid.UUID) -> Path:
        return self.folder / f"{request_id}.json"

    def _read(self, request_id: uuid.UUID) -> _Record:
        try:
            return msgspec.json.decode(self._path(request_id).read_bytes(), type=_Record)
        except (OSError, msgspec.DecodeError):
            return _Record()

    def _write(self, request_id: uuid.UUID, record: _Record) -> None:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        target = self._path(request_id)
        temp = target.with_suffix(".tmp")
        with open(temp, "wb") as out:
            out.write(msgspec.json.encode(record))
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
        fd = os.open(self.folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
