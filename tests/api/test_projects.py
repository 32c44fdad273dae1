"""Projects over HTTP: CRUD and pages, the checks of a source, the door check against what
runner hosts said they allow, the 409s, tenancy, and the project of issues and agents."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import delete, func, select, update

from paperclip.models import ActivityEntry, IssueWorkspace, Project, Runner

PATH = "/srv/repos/app"


async def count_projects(container) -> int:
    async with container.sessions()() as session:
        return (await session.execute(select(func.count()).select_from(Project))).scalar()


async def make_project(client, company_id, name="app", **fields):
    body = {"name": name, **({"repo_path": PATH} if not fields else {}), **fields}
    r = await client.post(f"/api/companies/{company_id}/projects", json=body)
    assert r.status_code == 201, r.text
    return r.json()


@pytest.fixture
async def runner_said(paperclip_container):
    """Make runner rows whose hosts reported folders and clone URL patterns; gone after the test
    (runners are the instance's, and the module's other tests share its database)."""
    made = []

    async def said(name, *, roots=None, remotes=None, revoked=False, connected=True):
        runner, _ = await paperclip_container.runners().create(f"{name}-{uuid.uuid4()}")
        made.append(runner.id)
        async with paperclip_container.sessions().begin() as session:
            await session.execute(
                update(Runner)
                .where(Runner.id == runner.id)
                .values(
                    workspace_roots=roots,
                    workspace_remotes=remotes,
                    revoked_at=datetime.now(UTC) if revoked else None,
                    replica="replica-a" if connected else None,
                )
            )

    yield said
    async with paperclip_container.sessions().begin() as session:
        await session.execute(delete(Runner).where(Runner.id.in_(made)))


async def give_workspace(container, issue, project_id, status="ready"):
    async with container.sessions().begin() as session:
        session.add(
            IssueWorkspace(
                issue_id=uuid.UUID(issue["id"]),
                company_id=uuid.UUID(issue["company_id"]),
                project_id=uuid.UUID(project_id),
                status=status,
                key=f"{issue['company_id']}/{issue['identifier']}",
                branch=f"paperclip/{issue['identifier']}",
                repo_path=PATH,
            )
        )


async def set_workspace_status(container, issue, status):
    async with container.sessions().begin() as session:
        await session.execute(
            update(IssueWorkspace)
            .where(IssueWorkspace.issue_id == uuid.UUID(issue["id"]))
            .values(status=status)
        )


async def test_crud_pages_and_activity(paperclip_client, company, paperclip_container):
    base = f"/api/companies/{company['id']}/projects"
    made = [await make_project(paperclip_client, company["id"], f"p{i}") for i in range(5)]
    first = made[0]
    assert first["repo_path"] == PATH and first["repo_url"] is None
    assert (first["branch_prefix"], first["default_branch"], first["hooks_enabled"]) == (
        "paperclip/",
        None,
        False,
    )
    assert (await paperclip_client.get(f"{base}/{first['id']}")).json() == first

    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = (await paperclip_client.get(base, params=params)).json()
        seen += [p["name"] for p in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ["p0", "p1", "p2", "p3", "p4"]

    r = await paperclip_client.patch(
        f"{base}/{first['id']}",
        json={
            "name": "renamed",
            "description": "the app",
            "default_branch": "develop",
            "hooks_enabled": True,
            "repo_url": "https://git.example/acme/app.git",
        },
    )
    assert r.status_code == 200, r.text
    changed = r.json()
    assert (changed["name"], changed["description"], changed["default_branch"]) == (
        "renamed",
        "the app",
        "develop",
    )
    # Setting the URL replaced the folder: a project has exactly one source.
    assert changed["hooks_enabled"] and changed["repo_path"] is None
    assert changed["repo_url"] == "https://git.example/acme/app.git"
    r = await paperclip_client.patch(f"{base}/{first['id']}", json={"default_branch": None})
    assert r.json()["default_branch"] is None and r.json()["name"] == "renamed"

    assert (await paperclip_client.delete(f"{base}/{first['id']}")).status_code == 204
    r = await paperclip_client.get(f"{base}/{first['id']}")
    assert r.status_code == 404 and r.json()["code"] == "project_not_found"

    async with paperclip_container.sessions()() as session:
        actions = (
            await session.execute(
                select(ActivityEntry.action)
                .where(ActivityEntry.entity_id == first["id"])
                .order_by(ActivityEntry.id)
            )
        ).scalars()
        assert list(actions) == [
            "project.created",
            "project.updated",
            "project.updated",
            "project.deleted",
        ]


@pytest.mark.parametrize(
    ("body", "code", "fields"),
    [
        ({}, "invalid_project_source", ["repo_path", "repo_url"]),
        (
            {"repo_path": PATH, "repo_url": "https://git.example/a.git"},
            "invalid_project_source",
            ["repo_path", "repo_url"],
        ),
        ({"repo_path": "srv/app"}, "invalid_repo_path", ["repo_path"]),
        ({"repo_path": "/srv/../etc"}, "invalid_repo_path", ["repo_path"]),
        ({"repo_url": "ftp://git.example/a.git"}, "invalid_repo_url", ["repo_url"]),
        ({"repo_url": "-uhack"}, "invalid_repo_url", ["repo_url"]),
        ({"repo_url": "ext::sh -c id"}, "invalid_repo_url", ["repo_url"]),
        (
            {"repo_path": PATH, "branch_prefix": "bad..x/"},
            "invalid_branch_prefix",
            ["branch_prefix"],
        ),
        (
            {"repo_path": PATH, "default_branch": ".hidden"},
            "invalid_default_branch",
            ["default_branch"],
        ),
    ],
)
async def test_a_bad_source_or_branch_is_refused_naming_the_field(
    paperclip_client, company, paperclip_container, body, code, fields
):
    before = await count_projects(paperclip_container)
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/projects", json={"name": "x", **body}
    )
    assert r.status_code == 422, r.text
    assert r.json()["code"] == code and r.json()["message"]
    assert [d["field"] for d in r.json()["details"]] == fields
    assert await count_projects(paperclip_container) == before


async def test_a_bad_change_is_refused_and_writes_nothing(paperclip_client, company):
    project = await make_project(paperclip_client, company["id"])
    url = f"/api/companies/{company['id']}/projects/{project['id']}"
    for body, code in (
        ({"repo_path": None}, "invalid_project_source"),
        ({"repo_path": "/a", "repo_url": "https://git.example/a.git"}, "invalid_project_source"),
        ({"repo_url": "not a url", "name": "new"}, "invalid_repo_url"),
        ({"branch_prefix": "a b"}, "invalid_branch_prefix"),
    ):
        r = await paperclip_client.patch(url, json=body)
        assert r.status_code == 422 and r.json()["code"] == code, (body, r.text)
    assert (await paperclip_client.get(url)).json() == project


async def test_the_door_check_follows_what_runner_hosts_said(
    paperclip_client, company, paperclip_container, runner_said
):
    base = f"/api/companies/{company['id']}/projects"

    async def create(**source):
        return await paperclip_client.post(base, json={"name": str(uuid.uuid4()), **source})

    # No runner said anything: any well-formed source is accepted (the runner checks again).
    assert (await create(repo_path="/anywhere/repo")).status_code == 201
    assert (await create(repo_url="https://elsewhere.example/r.git")).status_code == 201

    await runner_said("builder", roots=["/srv/repos"])
    await runner_said("old", roots=["/var/old"], revoked=True)
    # What a runner that is away said may be stale (its host restarting with new settings).
    await runner_said("away", roots=["/opt/away"], connected=False)
    assert (await create(repo_path="/srv/repos/app")).status_code == 201
    assert (await create(repo_path="/srv/repos")).status_code == 201
    for path in ("/home/me/app", "/srv/repos-other/app", "/var/old/app", "/opt/away/app"):
        r = await create(repo_path=path)
        assert r.status_code == 422 and r.json()["code"] == "workspace_not_allowed", path
        assert r.json()["details"][0]["field"] == "repo_path"
        assert "PAPERCLIP_RUNNER_WORKSPACE_ROOTS" in r.json()["message"]
        assert "/srv/repos'" not in r.json()["message"]  # no host's folders are listed
    # Nobody said which URLs: they are still accepted.
    assert (await create(repo_url="https://elsewhere.example/r.git")).status_code == 201

    await runner_said("laptop", roots=["/home/me"], remotes=["https://git.example/acme/*"])
    assert (await create(repo_path="/home/me/app")).status_code == 201  # any host will do
    assert (await create(repo_url="https://git.example/acme/app.git")).status_code == 201
    r = await create(repo_url="https://evil.example/acme/app.git")
    assert r.status_code == 422 and r.json()["code"] == "workspace_not_allowed"
    assert r.json()["details"][0]["field"] == "repo_url"
    assert "PAPERCLIP_RUNNER_WORKSPACE_REMOTES" in r.json()["message"]
    assert "git.example" not in r.json()["message"]

    # A change of source is checked; a project whose source no host allows now still
    # takes other changes.
    project = (await create(repo_path="/srv/repos/kept")).json()
    url = f"{base}/{project['id']}"
    r = await paperclip_client.patch(url, json={"repo_path": "/opt/elsewhere"})
    assert r.status_code == 422 and r.json()["code"] == "workspace_not_allowed"
    async with paperclip_container.sessions().begin() as session:
        await session.execute(update(Runner).values(workspace_roots=["/nowhere"]))
    r = await paperclip_client.patch(url, json={"description": "still fine"})
    assert r.status_code == 200 and r.json()["repo_path"] == "/srv/repos/kept"


async def test_a_name_is_unique_in_its_company(paperclip_client, company):
    await make_project(paperclip_client, company["id"], "app")
    other = await make_project(paperclip_client, company["id"], "web")
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/projects", json={"name": "app", "repo_path": "/x"}
    )
    assert r.status_code == 409 and r.json()["code"] == "project_name_taken"
    r = await paperclip_client.patch(
        f"/api/companies/{company['id']}/projects/{other['id']}", json={"name": "app"}
    )
    assert r.status_code == 409 and r.json()["code"] == "project_name_taken"
    second = (await paperclip_client.post("/api/companies", json={"name": "Second"})).json()
    await make_project(paperclip_client, second["id"], "app")


async def test_delete_waits_for_open_issues_then_detaches_the_ended_ones(
    paperclip_client, company, agent
):
    base = f"/api/companies/{company['id']}"
    project = await make_project(paperclip_client, company["id"])
    await paperclip_client.patch(
        f"{base}/agents/{agent['id']}", json={"default_project_id": project["id"]}
    )
    issues = [
        (
            await paperclip_client.post(
                f"{base}/issues", json={"title": f"t{i}", "project_id": project["id"]}
            )
        ).json()
        for i in range(2)
    ]
    url = f"{base}/projects/{project['id']}"
    r = await paperclip_client.delete(url)
    assert r.status_code == 409 and r.json()["code"] == "project_in_use"
    assert "2 issue" in r.json()["message"]
    await paperclip_client.patch(f"{base}/issues/{issues[0]['id']}", json={"status": "done"})
    r = await paperclip_client.delete(url)
    assert r.status_code == 409 and "1 issue" in r.json()["message"]
    await paperclip_client.patch(f"{base}/issues/{issues[1]['id']}", json={"status": "cancelled"})
    assert (await paperclip_client.delete(url)).status_code == 204
    for issue in issues:
        r = await paperclip_client.get(f"{base}/issues/{issue['id']}")
        assert r.status_code == 200 and r.json()["project_id"] is None
    r = await paperclip_client.get(f"{base}/agents/{agent['id']}")
    assert r.json()["default_project_id"] is None


async def test_source_and_prefix_stay_while_worktrees_live(
    paperclip_client, company, paperclip_container
):
    base = f"/api/companies/{company['id']}"
    project = await make_project(paperclip_client, company["id"])
    url = f"{base}/projects/{project['id']}"
    issue = (
        await paperclip_client.post(
            f"{base}/issues", json={"title": "t", "project_id": project["id"]}
        )
    ).json()
    await give_workspace(paperclip_container, issue, project["id"])
    for body in (
        {"repo_path": "/srv/repos/other"},
        {"repo_url": "https://git.example/a.git"},
        {"branch_prefix": "work/"},
    ):
        r = await paperclip_client.patch(url, json=body)
        assert r.status_code == 409 and r.json()["code"] == "project_has_workspaces", body
    assert (await paperclip_client.get(url)).json() == project
    r = await paperclip_client.patch(
        url,
        json={
            "name": "renamed",
            "description": "d",
            "default_branch": "main",
            "hooks_enabled": True,
            "repo_path": PATH,  # the same source: not a change
            "branch_prefix": "paperclip/",
        },
    )
    assert r.status_code == 200, r.text
    await set_workspace_status(paperclip_container, issue, "released")
    r = await paperclip_client.patch(url, json={"repo_path": "/srv/repos/other"})
    assert r.status_code == 200 and r.json()["repo_path"] == "/srv/repos/other"


async def test_issues_carry_and_filter_by_their_project(paperclip_client, company):
    base = f"/api/companies/{company['id']}/issues"
    app = await make_project(paperclip_client, company["id"], "app")
    web = await make_project(paperclip_client, company["id"], "web")
    issue = (
        await paperclip_client.post(base, json={"title": "in app", "project_id": app["id"]})
    ).json()
    assert issue["project_id"] == app["id"]
    assert (await paperclip_client.get(f"{base}/{issue['id']}")).json() == issue
    loose = (await paperclip_client.post(base, json={"title": "loose"})).json()
    assert loose["project_id"] is None

    async def titles(project):
        r = await paperclip_client.get(base, params={"project_id": project["id"]})
        return [i["title"] for i in r.json()["items"]]

    assert await titles(app) == ["in app"] and await titles(web) == []
    r = await paperclip_client.patch(f"{base}/{issue['id']}", json={"project_id": web["id"]})
    assert r.status_code == 200 and r.json()["project_id"] == web["id"]
    assert await titles(app) == [] and await titles(web) == ["in app"]
    r = await paperclip_client.patch(f"{base}/{issue['id']}", json={"project_id": None})
    assert r.json()["project_id"] is None


async def test_an_issue_keeps_its_project_while_its_worktree_lives(
    paperclip_client, company, paperclip_container
):
    base = f"/api/companies/{company['id']}/issues"
    app = await make_project(paperclip_client, company["id"], "app")
    web = await make_project(paperclip_client, company["id"], "web")
    issue = (await paperclip_client.post(base, json={"title": "t", "project_id": app["id"]})).json()
    await give_workspace(paperclip_container, issue, app["id"], status="releasing")
    for project_id in (web["id"], None):
        r = await paperclip_client.patch(
            f"{base}/{issue['id']}", json={"project_id": project_id, "title": "moved"}
        )
        assert r.status_code == 409 and r.json()["code"] == "workspace_exists"
        assert "paperclip/PAP-1" in r.json()["message"]
    assert (await paperclip_client.get(f"{base}/{issue['id']}")).json() == issue
    r = await paperclip_client.patch(
        f"{base}/{issue['id']}", json={"project_id": app["id"], "title": "same project"}
    )
    assert r.status_code == 200
    await set_workspace_status(paperclip_container, issue, "released")
    r = await paperclip_client.patch(f"{base}/{issue['id']}", json={"project_id": web["id"]})
    assert r.status_code == 200 and r.json()["project_id"] == web["id"]


async def test_the_assignee_default_project_is_applied(paperclip_client, company, agent):
    base = f"/api/companies/{company['id']}"
    app = await make_project(paperclip_client, company["id"], "app")
    web = await make_project(paperclip_client, company["id"], "web")
    r = await paperclip_client.post(
        f"{base}/agents",
        json={"name": "helper", "provider": "fixture", "default_project_id": app["id"]},
    )
    assert r.status_code == 201 and r.json()["default_project_id"] == app["id"]
    helper = r.json()

    async def create(**fields):
        r = await paperclip_client.post(f"{base}/issues", json={"title": "t", **fields})
        assert r.status_code == 201, r.text
        return r.json()

    assert (await create(assignee_agent_id=helper["id"]))["project_id"] == app["id"]
    explicit = await create(assignee_agent_id=helper["id"], project_id=web["id"])
    assert explicit["project_id"] == web["id"]
    assert (await create(assignee_agent_id=agent["id"]))["project_id"] is None  # no default

    loose = await create()
    r = await paperclip_client.patch(
        f"{base}/issues/{loose['id']}", json={"assignee_agent_id": helper["id"]}
    )
    assert r.json()["project_id"] == app["id"]
    kept = await create(project_id=web["id"])
    r = await paperclip_client.patch(
        f"{base}/issues/{kept['id']}", json={"assignee_agent_id": helper["id"]}
    )
    assert r.json()["project_id"] == web["id"]
    declined = await create()
    r = await paperclip_client.patch(
        f"{base}/issues/{declined['id']}",
        json={"assignee_agent_id": helper["id"], "project_id": None},
    )
    assert r.json()["project_id"] is None

    r = await paperclip_client.patch(
        f"{base}/agents/{agent['id']}", json={"default_project_id": web["id"]}
    )
    assert r.status_code == 200 and r.json()["default_project_id"] == web["id"]
    r = await paperclip_client.patch(
        f"{base}/agents/{agent['id']}", json={"default_project_id": None}
    )
    assert r.json()["default_project_id"] is None


async def test_another_company_project_is_not_found_everywhere(
    paperclip_client, company, agent, paperclip_container
):
    other = (await paperclip_client.post("/api/companies", json={"name": "Bravo"})).json()
    foreign = await make_project(paperclip_client, other["id"], "secret")
    mine = await make_project(paperclip_client, company["id"], "app")
    base = f"/api/companies/{company['id']}"
    url = f"{base}/projects/{foreign['id']}"
    for method, body in (("GET", None), ("PATCH", {"name": "x"}), ("DELETE", None)):
        r = await paperclip_client.request(method, url, json=body)
        assert r.status_code == 404 and r.json()["code"] == "project_not_found", method
        assert "secret" not in r.text
    listed = (await paperclip_client.get(f"{base}/projects")).json()["items"]
    assert [p["id"] for p in listed] == [mine["id"]]

    issue = (await paperclip_client.post(f"{base}/issues", json={"title": "t"})).json()
    before = await count_projects(paperclip_container)
    agents = (await paperclip_client.get(f"{base}/agents")).json()
    issues = (await paperclip_client.get(f"{base}/issues")).json()
    for method, path, kwargs, field in (
        ("POST", "/issues", {"json": {"title": "t", "project_id": foreign["id"]}}, "project_id"),
        ("PATCH", f"/issues/{issue['id']}", {"json": {"project_id": foreign["id"]}}, "project_id"),
        ("GET", "/issues", {"params": {"project_id": foreign["id"]}}, "project_id"),
        (
            "POST",
            "/agents",
            {"json": {"name": "n", "provider": "fixture", "default_project_id": foreign["id"]}},
            "default_project_id",
        ),
        (
            "PATCH",
            f"/agents/{agent['id']}",
            {"json": {"default_project_id": foreign["id"]}},
            "default_project_id",
        ),
    ):
        r = await paperclip_client.request(method, f"{base}{path}", **kwargs)
        assert r.status_code == 422 and r.json()["code"] == "project_not_found", (path, r.text)
        assert r.json()["details"][0]["field"] == field
    assert (await paperclip_client.get(f"{base}/issues/{issue['id']}")).json() == issue
    assert (
        await paperclip_client.get(f"/api/companies/{other['id']}/projects/{foreign['id']}")
    ).json() == foreign
    assert await count_projects(paperclip_container) == before
    assert (await paperclip_client.get(f"{base}/agents")).json() == agents
    assert (await paperclip_client.get(f"{base}/issues")).json() == issues


async def test_a_chat_that_gives_the_task_to_its_agent_gives_the_default_project(
    paperclip_client, company
):
    base = f"/api/companies/{company['id']}"
    app = await make_project(paperclip_client, company["id"], "app")
    helper = (
        await paperclip_client.post(
            f"{base}/agents",
            json={"name": "helper", "provider": "fixture", "default_project_id": app["id"]},
        )
    ).json()
    issue = (await paperclip_client.post(f"{base}/issues", json={"title": "t"})).json()
    r = await paperclip_client.post(
        f"{base}/conversations", json={"issue_id": issue["id"], "agent_id": helper["id"]}
    )
    assert r.status_code == 201, r.text
    r = await paperclip_client.get(f"{base}/issues/{issue['id']}")
    assert (r.json()["assignee_agent_id"], r.json()["project_id"]) == (helper["id"], app["id"])
