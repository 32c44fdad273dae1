"""An issue's branch merged into its base branch by the runner: real repositories, real git.

The runner's whole side of ``merge_workspace`` (``WorkspaceHost.merge``): the
host's policy, the worktree's lock, the two strategies, every refusal leaving
refs, working trees and indexes as they were, and one answer per request id.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path

import pytest

from paperclip.runner import workspace_host
from paperclip.runner.workspace_host import WorkspaceHost
from paperclip.runner.workspaces.merging import Merged
from paperclip.wire.messages import MergeWorkspace, WorkspaceSpec
from tests.support.git_repos import commit, git, make_bare, make_repo, repo_state, spec_for


@pytest.fixture
def host(tmp_path: Path, policy) -> WorkspaceHost:
    return WorkspaceHost(tmp_path / "runner", policy)


def ask(spec: WorkspaceSpec, strategy="fast_forward", message="", request_id=None):
    return MergeWorkspace(
        seq=1,
        request_id=request_id or uuid.uuid4(),
        issue_id=uuid.uuid4(),
        workspace=spec,
        strategy=strategy,
        message=message,
    )


async def worked(host: WorkspaceHost, repo: Path, files: dict, issue="ACM-1") -> tuple:
    """The issue's worktree with one commit of ``files`` on its branch; (spec, head)."""
    spec = spec_for(repo, issue, base_ref="main")
    ready = await host.trees.ensure(spec)
    head = commit(ready.path, files, "The agent's work")
    return spec, head


async def test_fast_forward_moves_the_base_branch_and_its_checkout_to_the_branch_head(host, repo):
    spec, head = await worked(host, repo, {"a.txt": "one\nTWO\nthree\n", "c.txt": "new\n"})

    answer = await host.merge(ask(spec))

    assert (answer.status, answer.error_code) == ("merged", None), answer.error
    assert (answer.commit, answer.head, answer.merged_commits) == (head, head, 1)
    assert git(repo, "rev-parse", "main") == head
    # main is checked out in the repository's own working tree: its files followed.
    assert (repo / "a.txt").read_text() == "one\nTWO\nthree\n" and (repo / "c.txt").exists()
    assert git(repo, "status", "--porcelain") == ""
    # The work product is now against the merged head: nothing left to review.
    assert answer.state is not None
    assert (answer.state.base_commit, answer.state.ahead, answer.state.files) == (head, 0, [])
    assert answer.diff == ""


async def test_fast_forward_is_refused_when_the_base_moved_on(host, repo):
    spec, _ = await worked(host, repo, {"a.txt": "changed\n"})
    commit(repo, {"b.txt": "moved on\n"}, "Meanwhile on main")
    before = repo_state(repo)

    answer = await host.merge(ask(spec))

    assert (answer.status, answer.error_code) == ("refused", "not_fast_forward")
    assert "merge_commit" in answer.error and "rebase" in answer.error
    assert repo_state(repo) == before


async def test_a_merge_commit_has_the_old_base_and_the_branch_head_as_parents(host, repo):
    spec, head = await worked(host, repo, {"a.txt": "one\nTWO\nthree\n"})
    base = commit(repo, {"b.txt": "bee, changed on main\n"}, "Meanwhile on main")

    answer = await host.merge(ask(spec, "merge_commit", "Merge paperclip/ACM-1: Fix the thing"))

    assert answer.status == "merged", answer.error
    merge = git(repo, "rev-parse", "main")
    assert answer.commit == merge and answer.merged_commits == 1
    assert git(repo, "rev-parse", f"{merge}^1", f"{merge}^2").split() == [base, head]
    assert git(repo, "log", "-1", "--format=%s%n%an <%ae>", merge) == (
        "Merge paperclip/ACM-1: Fix the thing\nPaperclip <paperclip@paperclip.invalid>"
    )
    assert (repo / "a.txt").read_text() == "one\nTWO\nthree\n"
    assert (repo / "b.txt").read_text() == "bee, changed on main\n"
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "rev-parse", "paperclip/ACM-1") == head  # the branch itself stays


async def test_a_merge_commit_into_a_base_checked_out_nowhere_touches_no_working_tree(host, repo):
    spec, head = await worked(host, repo, {"a.txt": "one\nTWO\nthree\n"})
    base = commit(repo, {"b.txt": "changed on main\n"}, "Meanwhile on main")
    git(repo, "checkout", "--quiet", "--detach")  # main is checked out nowhere now
    before = repo_state(repo)

    answer = await host.merge(ask(spec, "merge_commit"))

    assert answer.status == "merged", answer.error
    assert git(repo, "rev-parse", "main^1", "main^2").split() == [base, head]
    assert git(repo, "log", "-1", "--format=%s", "main") == "Merge paperclip/ACM-1"
    after = repo_state(repo)
    assert {k: v for k, v in after.items() if k != "refs"} == {
        k: v for k, v in before.items() if k != "refs"
    }


async def test_a_conflict_changes_nothing_and_names_the_files(host, repo):
    spec, head = await worked(
        host, repo, {"a.txt": "one\nthe agent's two\nthree\n", "c.txt": "x\n"}
    )
    commit(repo, {"a.txt": "one\nmain's two\nthree\n"}, "Meanwhile on main")
    before = repo_state(repo)
    branch_worktree = Path(host.trees.root / "c1" / "ACM-1")
    branch_status = git(branch_worktree, "status", "--porcelain")

    answer = await host.merge(ask(spec, "merge_commit"))

    assert (answer.status, answer.error_code) == ("refused", "merge_conflict"), answer.error
    assert answer.conflicts == ["a.txt"]
    assert repo_state(repo) == before
    assert git(branch_worktree, "status", "--porcelain") == branch_status
    assert git(repo, "rev-parse", "paperclip/ACM-1") == head


async def test_nothing_to_merge(host, repo):
    spec = spec_for(repo, base_ref="main")
    await host.trees.ensure(spec)
    before = repo_state(repo)

    answer = await host.merge(ask(spec, "merge_commit"))

    assert (answer.status, answer.error_code) == ("refused", "nothing_to_merge")
    assert repo_state(repo) == before


async def test_uncommitted_changes_the_merge_touches_refuse_it_and_stay(host, repo):
    spec, _ = await worked(host, repo, {"a.txt": "one\nTWO\nthree\n", "c.txt": "new\n"})
    (repo / "a.txt").write_text("a person's edit\n")
    (repo / "c.txt").write_text("a person's new file\n")
    before = repo_state(repo)

    answer = await host.merge(ask(spec))

    assert (answer.status, answer.error_code) == ("refused", "base_checkout_dirty")
    assert answer.files == ["a.txt", "c.txt"]
    assert repo_state(repo) == before


async def test_uncommitted_changes_elsewhere_in_the_checkout_are_carried_along(host, repo):
    spec, head = await worked(host, repo, {"a.txt": "one\nTWO\nthree\n"})
    (repo / "b.txt").write_text("a person's edit\n")
    (repo / "notes.txt").write_text("untracked\n")

    answer = await host.merge(ask(spec))

    assert answer.status == "merged", answer.error
    assert git(repo, "rev-parse", "main") == head
    assert (repo / "a.txt").read_text() == "one\nTWO\nthree\n"
    assert (repo / "b.txt").read_text() == "a person's edit\n"
    assert (repo / "notes.txt").read_text() == "untracked\n"


async def test_a_clone_url_is_not_merged(host, repo, remotes):
    bare = make_bare(repo, remotes / "app.git")
    spec = spec_for(f"file://{bare}", base_ref="main")

    answer = await host.merge(ask(spec))

    assert (answer.status, answer.error_code) == ("refused", "merge_not_supported")
    assert "mirror" in answer.error


async def test_a_repository_the_host_no_longer_allows_is_refused(tmp_path, repo):
    spec, _ = await worked(
        WorkspaceHost(tmp_path / "runner", _policy(repo.parent)), repo, {"d.txt": "d\n"}
    )
    elsewhere = WorkspaceHost(tmp_path / "runner", _policy(tmp_path / "other"))
    before = git(repo, "rev-parse", "main")

    answer = await elsewhere.merge(ask(spec))

    assert (answer.status, answer.error_code) == ("refused", "workspace_not_allowed")
    assert git(repo, "rev-parse", "main") == before


def _policy(root: Path):
    from paperclip.runner.workspaces.policy import WorkspacePolicy

    return WorkspacePolicy.build([root], [])


async def test_one_request_merges_once_and_is_answered_the_same_again(host, tmp_path, repo):
    spec, head = await worked(host, repo, {"a.txt": "changed\n"})
    request = ask(spec)

    first = await host.merge(request)
    # A new runner process (the same work folder) gets the request again: the kept answer.
    again = await WorkspaceHost(tmp_path / "runner", host.policy).merge(request)

    assert first.status == again.status == "merged"
    assert again.commit == first.commit == head and again.merged_commits == 1
    assert (await host.merge(ask(spec))).error_code == "nothing_to_merge"  # a new request


async def test_a_merge_made_before_its_runner_stopped_is_found_not_made_again(host, repo):
    spec, head = await worked(host, repo, {"a.txt": "changed\n"})
    base = git(repo, "rev-parse", "main")
    request = ask(spec)
    # The runner kept what it was about to do, moved main, and stopped before answering.
    host.merges.save_intent(request.request_id, Merged(head, head, base, 1))
    git(repo, "merge", "--quiet", "--ff-only", head)

    answer = await host.merge(request)

    assert (answer.status, answer.commit, answer.merged_commits) == ("merged", head, 1)


async def test_a_worktree_in_use_by_a_run_is_waited_for_then_refused(host, repo, monkeypatch):
    monkeypatch.setattr(workspace_host, "BUSY_WAIT_SECONDS", 0.6)
    spec, _ = await worked(host, repo, {"a.txt": "changed\n"})
    before = git(repo, "rev-parse", "main")

    with contextlib.ExitStack() as held:
        held.enter_context(host.trees.lock(spec.key))  # a run of the issue is hosted here
        answer = await host.merge(ask(spec))

    assert (answer.status, answer.error_code) == ("refused", "workspace_busy")
    assert git(repo, "rev-parse", "main") == before


async def test_the_base_defaults_to_the_repository_head_branch(host, repos):
    repo = make_repo(repos / "trunk-app", branch="trunk")
    spec = spec_for(repo)  # no base branch named: the repository's HEAD branch
    ready = await host.trees.ensure(spec)
    head = commit(ready.path, {"x.txt": "x\n"})

    answer = await host.merge(ask(spec))

    assert answer.status == "merged", answer.error
    assert git(repo, "rev-parse", "trunk") == head


async def test_a_request_sent_again_while_it_is_at_work_is_left_to_it(host, repo):
    spec, head = await worked(host, repo, {"a.txt": "changed\n"})
    request = ask(spec)
    sent = []
    done = asyncio.Event()

    async def send(message):
        sent.append(message)
        done.set()

    host.merge_soon(request, send)
    host.merge_soon(request, send)  # the outbox replayed it before the first answered
    await asyncio.wait_for(done.wait(), 30)
    await asyncio.sleep(0.2)

    assert [(m.status, m.commit) for m in sent] == [("merged", head)]
