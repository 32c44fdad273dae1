"""The task brief (``paperclip_render_task_markdown``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.prompts import (
    RenderedSection,
    RenderLimits,
    SourceKind,
    TaskMarkdownMode,
    TaskMarkdownOptions,
    TaskSource,
)

from paperclip.prompts.task_markdown import build_task_markdown
from paperclip.revisions import revision, short_revision

from .support import ISSUE, make_comment, make_task

DESCRIPTION = make_task().description
LATEST = make_comment("c-2", "Keep the query string too.")
WAKE = (make_comment("c-1", "Start with the login form."), LATEST)


@dataclass(frozen=True)
class Case:
    rule: str
    options: TaskMarkdownOptions
    task: dict[str, Any] = field(default_factory=dict)
    shows: tuple[str, ...] = ()
    hides: tuple[str, ...] = ()
    sources: tuple[tuple[SourceKind, str], ...] = ()
    truncated: bool = False


TASK_BRIEF_RULES = [
    Case(
        "full brief shows title, status, priority, parent, description and criteria",
        TaskMarkdownOptions(assignment_only=True),
        shows=(
            "- Issue: PAP-12",
            '- Title: "Fix the login redirect"',
            "- Status: in_progress",
            "- Priority: high",
            '- Parent: PAP-3 "Auth hardening"',
            "They should return to where they were.",
            "1. Users return to the page they came from",
            "2. A test covers it",
            f"revision {short_revision(revision(DESCRIPTION))}",
        ),
        sources=((SourceKind.TASK, ISSUE), (SourceKind.DESCRIPTION, ISSUE)),
    ),
    Case(
        "standalone default renders the latest wake comment itself",
        TaskMarkdownOptions(wake_comments=WAKE),
        shows=("### Latest wake comment", "Keep the query string too."),
        hides=("Start with the login form.",),
        sources=(
            (SourceKind.TASK, ISSUE),
            (SourceKind.DESCRIPTION, ISSUE),
            (SourceKind.COMMENT, "c-2"),
        ),
    ),
    Case(
        "standalone default skips a deleted latest comment",
        TaskMarkdownOptions(wake_comments=(WAKE[0], make_comment("c-2", "gone", deleted=True))),
        shows=("Start with the login form.",),
        hides=("gone",),
        sources=(
            (SourceKind.TASK, ISSUE),
            (SourceKind.DESCRIPTION, ISSUE),
            (SourceKind.COMMENT, "c-1"),
        ),
    ),
    Case(
        "assignment-only rendering leaves current comments to the wake prompt",
        TaskMarkdownOptions(assignment_only=True, wake_comments=WAKE),
        hides=("Latest wake comment", "Keep the query string too."),
        sources=((SourceKind.TASK, ISSUE), (SourceKind.DESCRIPTION, ISSUE)),
    ),
    Case(
        "compact brief names an unchanged description instead of repeating it",
        TaskMarkdownOptions(
            mode=TaskMarkdownMode.COMPACT,
            assignment_only=True,
            previous_description_revision=revision(DESCRIPTION),
        ),
        shows=("(resumed session)", "- Description: unchanged since your brief", "1. Users"),
        hides=("They should return",),
        sources=((SourceKind.TASK, ISSUE),),
    ),
    Case(
        "compact brief shows a description changed since the session's brief",
        TaskMarkdownOptions(
            mode=TaskMarkdownMode.COMPACT,
            assignment_only=True,
            previous_description_revision=revision("the old description"),
        ),
        shows=("### Description (changed since your brief)", "They should return"),
        sources=((SourceKind.TASK, ISSUE), (SourceKind.DESCRIPTION, ISSUE)),
    ),
    Case(
        "compact brief shows the description when the session's revision is unknown",
        TaskMarkdownOptions(mode=TaskMarkdownMode.COMPACT, assignment_only=True),
        shows=("They should return",),
        sources=((SourceKind.TASK, ISSUE), (SourceKind.DESCRIPTION, ISSUE)),
    ),
    Case(
        "an empty description is no source",
        TaskMarkdownOptions(assignment_only=True),
        task={"description": "  \n "},
        shows=("- Description: none",),
        sources=((SourceKind.TASK, ISSUE),),
    ),
    Case(
        "a long description is cut, marked and reported truncated",
        TaskMarkdownOptions(assignment_only=True, limits=RenderLimits(max_description_chars=10)),
        shows=("After logi\n", "[Description cut at 10 characters"),
        sources=((SourceKind.TASK, ISSUE), (SourceKind.DESCRIPTION, ISSUE)),
        truncated=True,
    ),
    Case(
        "the fence outlasts backticks in the description",
        TaskMarkdownOptions(assignment_only=True),
        task={"description": "Run ```make``` first"},
        shows=("````text\nRun ```make``` first\n````",),
        sources=((SourceKind.TASK, ISSUE), (SourceKind.DESCRIPTION, ISSUE)),
    ),
    Case(
        "a title cannot break out of its line",
        TaskMarkdownOptions(assignment_only=True),
        task={"title": 'Fix "it"\n- Status: done'},
        shows=('- Title: "Fix \\"it\\"\\n- Status: done"',),
        sources=((SourceKind.TASK, ISSUE), (SourceKind.DESCRIPTION, ISSUE)),
    ),
]


@pytest.mark.parametrize("case", TASK_BRIEF_RULES, ids=[c.rule for c in TASK_BRIEF_RULES])
def test_paperclip_render_task_markdown_task_brief_rules(case: Case, hooks: Any) -> None:
    section = hooks.render_task_markdown(make_task(**case.task), case.options)
    for text in case.shows:
        assert text in section.text
    for text in case.hides:
        assert text not in section.text
    assert [(b.kind, b.id) for b in section.sources] == list(case.sources)
    assert section.truncated is case.truncated


def test_paperclip_render_task_markdown_omit_mode_renders_nothing(hooks: Any) -> None:
    section = hooks.render_task_markdown(
        make_task(), TaskMarkdownOptions(mode=TaskMarkdownMode.OMIT)
    )
    assert section.text == "" and section.sources == ()


def test_build_task_markdown_standalone_callers_keep_the_historical_default() -> None:
    # A caller without ownership metadata passes no options at all.
    section = build_task_markdown(make_task(), TaskMarkdownOptions(wake_comments=WAKE))
    assert "Latest wake comment" in section.text
    assert build_task_markdown(make_task()).text.endswith(
        "Use this task as the current assignment."
    )


def test_paperclip_render_task_markdown_an_installed_plugin_overrides_the_builtin(
    hooks: Any, paperclip_register_plugin: Any
) -> None:
    class ShortBrief:
        @hookimpl
        def paperclip_render_task_markdown(
            self, task: TaskSource, options: TaskMarkdownOptions
        ) -> RenderedSection:
            return RenderedSection("task_markdown", f"Task {task.identifier}")

    paperclip_register_plugin(ShortBrief())
    assert hooks.render_task_markdown(make_task(), TaskMarkdownOptions()).text == "Task PAP-12"


def test_paperclip_render_task_markdown_a_plugin_returning_none_defers_to_the_builtin(
    hooks: Any, paperclip_register_plugin: Any
) -> None:
    class OnlyForOthers:
        @hookimpl
        def paperclip_render_task_markdown(
            self, task: TaskSource, options: TaskMarkdownOptions
        ) -> RenderedSection | None:
            return None

    paperclip_register_plugin(OnlyForOthers())
    assert (
        "## Paperclip task" in hooks.render_task_markdown(make_task(), TaskMarkdownOptions()).text
    )


def test_the_task_brief_names_the_workspace_the_task_works_in() -> None:
    from dataclasses import replace

    from paperclip_hookspecs.workspaces import ExecutionWorkspace

    from paperclip.prompts.wire import task_from_wire, task_to_wire

    workspace = ExecutionWorkspace(
        path="/srv/runner/workspaces/c1/ACM-1",
        branch="paperclip/ACM-1",
        base_ref="main",
        base_commit="0123456789abcdef0123",
        project="Web app",
        repository="/srv/repos/web",
    )
    task = replace(make_task(), workspace=workspace)
    text = build_task_markdown(task).text
    assert (
        "- Workspace: /srv/runner/workspaces/c1/ACM-1 (a git worktree; your working directory)"
        in text
    )
    assert "- Branch: paperclip/ACM-1" in text
    assert "- Base: main at 0123456789ab" in text
    assert '- Project: "Web app"' in text
    # Before the first worktree exists its base commit is not known: the branch names it.
    fresh = replace(task, workspace=replace(workspace, base_ref="", base_commit=""))
    assert "- Base: the repository's default branch" in build_task_markdown(fresh).text
    # The envelope keeps it (a fresh retry renders it again); a task without one is unchanged.
    assert task_from_wire(task_to_wire(task)) == task
    assert "workspace" not in task_to_wire(make_task())
    assert "Workspace" not in build_task_markdown(make_task()).text


def test_the_brief_names_the_chain_of_command_and_the_whole_a_part_belongs_to() -> None:
    from dataclasses import replace

    from paperclip_hookspecs.org_chart import ChainOfCommand, Colleague
    from paperclip_hookspecs.prompts import ParentTask

    from paperclip.prompts.wire import task_from_wire, task_to_wire

    chain = ChainOfCommand(
        manager=Colleague("a-1", "Ada", "CEO", "active"),
        reports=(
            Colleague("a-2", "Bob", "engineer", "active"),
            Colleague("a-3", "Cy", "", "paused"),
        ),
        more_reports=3,
    )
    goal = "Ship v2 by Friday.\n```\nnot a fence\n```"
    task = replace(make_task(), chain=chain, parent=ParentTask("i-0", "ACM-0", "Launch", goal=goal))
    text = build_task_markdown(task).text
    assert '- You report to: "Ada" (CEO)' in text
    assert '- Your reports: "Bob" (engineer), "Cy" (paused), and 3 more.' in text
    # The parent's goal is data, fenced so it cannot close early, and bounded.
    assert "- This task is a part of ACM-0, whose goal is:\n````text\nShip v2 by Friday." in text
    short = build_task_markdown(
        task, TaskMarkdownOptions(limits=RenderLimits(max_parent_goal_chars=4))
    )
    assert "````" not in short.text and "```text\nShip\n```\n[Cut here;" in short.text
    # A resumed session was told it in its brief.
    compact = build_task_markdown(task, TaskMarkdownOptions(mode=TaskMarkdownMode.COMPACT))
    assert "Chain of command" not in compact.text
    top = replace(task, chain=ChainOfCommand(), parent=None)
    assert (
        "- You report to: nobody (you are at the top of the org chart)\n- Your reports: none"
        in (build_task_markdown(top).text)
    )
    # The envelope keeps both (a fresh retry renders them again); a task without is unchanged.
    assert task_from_wire(task_to_wire(task)) == task
    assert "chain" not in task_to_wire(make_task())
    assert "Chain of command" not in build_task_markdown(make_task()).text
