"""Revision = sha256 of the trimmed, sanitized source text."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paperclip.prompts.markdown import fence
from paperclip.revisions import revision, revision_matches, sanitize, source_text

SANITIZING_RULES = [
    ("trims surrounding whitespace", "  body \n\n", "body"),
    ("normalizes CRLF and CR line breaks", "a\r\nb\rc", "a\nb\nc"),
    ("normalizes unicode line separators", "a\u2028b\u2029c", "a\nb\nc"),
    ("drops control characters but keeps tabs", "a\x00b\x1bc\td", "abc\td"),
    ("drops bidi overrides and isolates", "admin\u202e\u2066txt", "admintxt"),
    ("drops zero-width space and byte-order mark", "\ufeffa\u200bb", "ab"),
    ("keeps emoji joiners", "\U0001f469\u200d\U0001f4bb", "\U0001f469\u200d\U0001f4bb"),
    ("composes to NFC", "cafe\u0301", "caf\u00e9"),
]


@pytest.mark.parametrize(
    ("raw", "expected"), [r[1:] for r in SANITIZING_RULES], ids=[r[0] for r in SANITIZING_RULES]
)
def test_revision_is_sha256_of_trimmed_sanitized_text(raw: str, expected: str) -> None:
    assert source_text(raw) == expected
    assert revision(raw) == hashlib.sha256(expected.encode()).hexdigest()


@given(st.text())
def test_sanitizing_is_idempotent(text: str) -> None:
    assert sanitize(sanitize(text)) == sanitize(text)
    assert revision(source_text(text)) == revision(text)


@given(st.text())
def test_fence_cannot_be_closed_by_its_content(text: str) -> None:
    fenced = fence(text)
    marks = fenced.split("text\n", 1)[0]
    assert fenced.endswith("\n" + marks)
    assert marks not in text


def test_a_quoted_revision_must_show_at_least_the_displayed_prefix() -> None:
    full = revision("body")
    assert revision_matches(full, full)
    assert revision_matches(full[:12].upper(), full)
    assert not revision_matches(full[:11], full)
    assert not revision_matches(revision("other"), full)
