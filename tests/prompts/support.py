"""Small source factories shared by the prompt tests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from paperclip_hookspecs.prompts import (
    Attachment,
    AuthorKind,
    CommentAuthor,
    CommentSource,
    CommentTrust,
    ParentTask,
    TaskSource,
)

from paperclip.plugin_host import PluginHost

ISSUE = "issue-1"
ADA = CommentAuthor(AuthorKind.USER, "u-1", "Ada")
BUILDER = CommentAuthor(AuthorKind.AGENT, "a-7", "")


def make_task(**changes: Any) -> TaskSource:
    task = TaskSource(
        id=ISSUE,
        identifier="PAP-12",
        title="Fix the login redirect",
        description="After login, users land on /home.\nThey should return to where they were.",
        status="in_progress",
        priority="high",
        parent=ParentTask("issue-0", "PAP-3", "Auth hardening"),
        acceptance_criteria=("Users return to the page they came from", "A test covers it"),
    )
    return replace(task, **changes)


def make_comment(comment_id: str, body: str, **changes: Any) -> CommentSource:
    comment = CommentSource(
        id=comment_id,
        issue_id=ISSUE,
        body=body,
        author=ADA,
        trust=CommentTrust.TRUSTED,
        created_at="2026-09-21T10:00:00Z",
    )
    return replace(comment, **changes)


SCREENSHOT = Attachment("att-1", "redirect.png", "image/png", 48_213)


BUILTIN = PluginHost.with_builtins()
"""A plugin host with the built-in plugins only: the prompt hooks as the core answers them."""
