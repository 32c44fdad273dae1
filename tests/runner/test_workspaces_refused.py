"""What the runner host refuses (``workspace_not_allowed``) and what it cannot use
(``workspace_unavailable``): each with a message naming the rule, and nothing made."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from paperclip.runner.workspaces.errors import WorkspaceError
from paperclip.runner.workspaces.git import run_git
from paperclip.runner.workspaces.mirrors import mirror_name
from paperclip.runner.workspaces.policy import WorkspacePolicy
from paperclip.runner.workspaces.worktrees import Workspaces
from paperclip.settings import Settings
from paperclip.wire.messages import WorkspaceSpec
from tests.support.git_repos import git, make_bare, make_repo, spec_for, worktrees

NOT_ALLOWED, UNAVAILABLE = "workspace_not_allowed", "workspace_unavailable"


async def refused(workspaces: Workspaces, spec: WorkspaceSpec, code: str) -> str:
    with pytest.raises(WorkspaceError) as caught:
        await workspaces.ensure(spec)
    assert caught.value.code == code, caught.value.message
    assert not list(workspaces.root.glob("c1/*")), "nothing is made for a refused workspace"
    return caught.value.message


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("{repos}/../elsewhere/app", "'..'"),
        ("repos/app", "absolute path"),
        ("/etc", "PAPERCLIP_RUNNER_WORKSPACE_ROOTS on the runner host: {repos}"),
    ],
)
async def test_paths_the_host_does_not_allow_are_refused(workspaces, repos, path, said):
    message = await refused(workspaces, spec_for(path.format(repos=repos)), NOT_ALLOWED)
    assert said.format(repos=repos) in message


async def test_a_symlink_inside_a_root_leading_out_of_it_is_refused(workspaces, repos, tmp_path):
    outside = make_repo(tmp_path / "outside" / "secret")
    (repos / "innocent").symlink_to(outside)

    message = await refused(workspaces, spec_for(repos / "innocent"), NOT_ALLOWED)

    assert str(outside) in message and "symlink" in message
    assert len(worktrees(outside)) == 1  # its own checkout only: no worktree of it was made


async def test_a_symlink_that_stays_inside_a_root_is_followed(workspaces, repos, repo):
    (repos / "alias").symlink_to(repo)

    ready = await workspaces.ensure(spec_for(repos / "alias"))

    assert str(ready.path) in [w["worktree"] for w in worktrees(repo)]


async def test_no_roots_configured_refuses_every_folder_and_says_how_to_set_them(tmp_path, repo):
    workspaces = Workspaces(tmp_path / "runner", WorkspacePolicy.build([], []))

    message = await refused(workspaces, spec_for(repo), NOT_ALLOWED)

    assert "set PAPERCLIP_RUNNER_WORKSPACE_ROOTS" in message


async def test_a_missing_folder_and_a_folder_that_is_not_a_repository_are_unavailable(
    workspaces, repos, repo
):
    assert "does not exist" in await refused(workspaces, spec_for(repos / "gone"), UNAVAILABLE)
    (repos / "plain").mkdir()
    assert "not a git repository" in await refused(
        workspaces, spec_for(repos / "plain"), UNAVAILABLE
    )
    # A folder inside a repository is not that repository.
    (repo / "sub").mkdir()
    assert "not a git repository" in await refused(workspaces, spec_for(repo / "sub"), UNAVAILABLE)


async def test_a_missing_base_branch_is_unavailable(workspaces, repo):
    message = await refused(workspaces, spec_for(repo, base_ref="release-9"), UNAVAILABLE)

    assert "release-9" in message
    assert git_branches(repo) == ["main"]  # the branch was not made either


def git_branches(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()


async def test_bad_keys_and_branch_names_are_refused(workspaces, repo):
    for spec in (
        WorkspaceSpec(key="../escape", branch="paperclip/X-1", repo_path=str(repo)),
        WorkspaceSpec(key="c1/.hidden", branch="paperclip/X-1", repo_path=str(repo)),
        WorkspaceSpec(key="c1/X-1", branch="--force", repo_path=str(repo)),
        WorkspaceSpec(key="c1/X-1", branch="paperclip/X-1", repo_path=str(repo), base_ref="-x"),
    ):
        await refused(workspaces, spec, NOT_ALLOWED)


async def test_a_key_folder_leading_out_through_a_symlink_is_refused(workspaces, repo, tmp_path):
    workspaces.root.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (workspaces.root / "c1").symlink_to(tmp_path / "elsewhere")

    with pytest.raises(WorkspaceError) as caught:
        await workspaces.ensure(spec_for(repo))

    assert caught.value.code == NOT_ALLOWED
    assert list((tmp_path / "elsewhere").iterdir()) == []


async def test_a_clone_url_matching_no_pattern_is_refused(workspaces, tmp_path):
    bare = make_bare(make_repo(tmp_path / "up"), tmp_path / "not-allowed.git")

    message = await refused(workspaces, spec_for(f"file://{bare}"), NOT_ALLOWED)

    assert "PAPERCLIP_RUNNER_WORKSPACE_REMOTES" in message
    assert not workspaces.mirrors.exists() or list(workspaces.mirrors.iterdir()) == []


async def test_no_patterns_configured_refuses_every_clone_url(tmp_path, repos, remotes):
    bare = make_bare(make_repo(tmp_path / "up"), remotes / "app.git")
    workspaces = Workspaces(tmp_path / "runner", WorkspacePolicy.build([repos], []))

    message = await refused(workspaces, spec_for(f"file://{bare}"), NOT_ALLOWED)

    assert "set PAPERCLIP_RUNNER_WORKSPACE_REMOTES" in message


async def test_remote_helper_urls_are_refused_and_git_itself_would_not_run_them(tmp_path, repos):
    marker = tmp_path / "ext-ran"
    url = f"ext::sh -c touch% {marker}"
    workspaces = Workspaces(tmp_path / "runner", WorkspacePolicy.build([repos], ["*"]))

    await refused(workspaces, WorkspaceSpec(key="c1/X-1", branch="b", repo_url=url), NOT_ALLOWED)
    # Past the policy too: a repository's own configuration cannot turn the ext transport on
    # for the runner's git.
    inside = make_repo(tmp_path / "configured")
    git(inside, "config", "protocol.ext.allow", "always")
    done = await run_git(["fetch", url], cwd=inside, home=tmp_path, check=False)
    assert done.returncode != 0 and "transport 'ext' not allowed" in done.stderr
    assert not marker.exists()


async def test_a_clone_that_fails_is_unavailable_and_its_credentials_are_not_shown(tmp_path, repos):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://deploy:s3cret-token@127.0.0.1:{port}/acme/app.git"
    workspaces = Workspaces(
        tmp_path / "runner", WorkspacePolicy.build([repos], ["http://*@127.0.0.1:*/acme/*"])
    )

    with pytest.raises(WorkspaceError) as caught:
        await workspaces.ensure(WorkspaceSpec(key="c1/X-1", branch="paperclip/X-1", repo_url=url))

    assert caught.value.code == UNAVAILABLE
    assert "could not clone" in caught.value.message and f"127.0.0.1:{port}" in caught.value.message
    assert "s3cret" not in caught.value.message
    assert list(workspaces.mirrors.iterdir()) == []  # no half mirror left behind


def test_a_mirror_is_named_by_its_url_whatever_credentials_it_carries():
    plain = "https://git.example.com/acme/app.git"
    assert mirror_name(plain) == mirror_name("https://bot:t0ken@git.example.com/acme/app.git")
    assert mirror_name(plain) != mirror_name("https://git.example.com/acme/other.git")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a repository to another user")
async def test_a_repository_of_another_user_is_unavailable_with_what_to_do(workspaces, repo):
    for folder, _, files in os.walk(repo):
        for name in [folder, *(os.path.join(folder, f) for f in files)]:
            os.lchown(name, 65534, 65534)

    message = await refused(workspaces, spec_for(repo), UNAVAILABLE)

    assert f"the repository {repo} belongs to" in message
    assert "safe.directory" in message and "chown" in message


def test_the_settings_read_roots_and_patterns_as_comma_separated_lists(monkeypatch):
    monkeypatch.setenv("PAPERCLIP_RUNNER_WORKSPACE_ROOTS", "/srv/repos, /home/dev/src,")
    monkeypatch.setenv("PAPERCLIP_RUNNER_WORKSPACE_REMOTES", "https://github.com/acme/*")
    settings = Settings()

    policy = WorkspacePolicy.build(
        settings.runner_workspace_roots, settings.runner_workspace_remotes
    )

    assert policy.roots == (Path("/srv/repos"), Path("/home/dev/src"))
    assert policy.remotes == ("https://github.com/acme/*",)
    assert (settings.runner_diff_limit_bytes, settings.runner_run_retention_hours) == (
        262_144,
        168,
    )
    monkeypatch.setenv("PAPERCLIP_RUNNER_WORKSPACE_ROOTS", "relative/path")
    with pytest.raises(ValueError, match="absolute path"):
        Settings()
