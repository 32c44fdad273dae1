"""Source text and revisions: what the model sees of a source, and the hash that names it.

A revision is evidence of the exact text used to assemble a run's context, not
an authorization token. It is the sha256 of the trimmed, sanitized source text,
so a comment row's raw body and the text rendered into a prompt hash alike.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

SHORT_REVISION_CHARS = 12
"""How much of a revision a prompt shows; a reference must quote at least this much."""

_LINE_BREAKS = re.compile("\r\n?|[\x85\u2028\u2029]")
# Control characters (except tab and newline), and the invisible format characters that
# can make text read differently from what it says: bidi embeddings, overrides and
# isolates, zero-width space, word joiner, byte-order mark. Joiners used by scripts and
# emoji (ZWJ, ZWNJ) and the plain directional marks stay.
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u202a-\u202e\u2060\u2066-\u2069\ufeff]")


def sanitize(text: str) -> str:
    """Normalize line breaks, drop hidden control characters, compose to NFC. Idempotent."""
    text = _LINE_BREAKS.sub("\n", text)
    text = _HIDDEN.sub("", text)
    return unicodedata.normalize("NFC", text)


def source_text(text: str) -> str:
    """The trimmed, sanitized text of a source: what prompts render and revisions hash."""
    return sanitize(text).strip()


def revision(text: str) -> str:
    """sha256 (hex) of the trimmed, sanitized source text."""
    return hashlib.sha256(source_text(text).encode("utf-8")).hexdigest()


def short_revision(full: str) -> str:
    """The part of a revision a prompt shows."""
    return full[:SHORT_REVISION_CHARS]


def revision_matches(quoted: str, full: str) -> bool:
    """Whether a quoted revision (the full one, or at least the shown prefix) names ``full``."""
    quoted = quoted.strip().lower()
    return len(quoted) >= SHORT_REVISION_CHARS and full.startswith(quoted)
