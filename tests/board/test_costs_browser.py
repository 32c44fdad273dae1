"""Costs and budgets on the board, in Chromium against real processes.

Usage comes the real way: the fake Codex reports each scripted response's
tokens, the runner sends them, the control plane prices them from the price
table. The Costs page's figures (totals, the chart's days, each agent, model
and issue) equal the API's; usage without a price reads as unknown, never as
0; a run page and an issue page show their tokens and cost. A budget made on
the page (its refusals shown with the API's code) stops a live turn at its
next tool call: the run and the issue say why and link to the budget, the
dashboard and the inbox show it spent; raised from the board, the held task
goes on by itself.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from tests.board import daily
from tests.board.conftest import PHONE
from tests.engine.conftest import Stack
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.browser]

expect = pytest.importorskip("playwright.sync_api").expect

# 2 USD a million input tokens, 0.5 cached, 8 output (in millionths).
PRICE = {
    "input_per_million_micros": 2_000_000,
    "cached_input_per_million_micros": 500_000,
    "output_per_million_micros": 8_000_000,
}
FINISH = {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "Done"}}}


@pytest.fixture(scope="module")
def costs_stack(paperclip_database_url, tmp_path_factory):
    """One server for the module, its budget keeper on a one-second pass."""
    s = Stack(
        database_url=paperclip_database_url,
        tmp=tmp_path_factory.mktemp("costs"),
        extra_env={"PAPERCLIP_BUDGET_SWEEP_SECONDS": "1"},
    )
    s.start_server(local_runner=True)
    yield s
    s.stop()


@pytest.fixture
def stack(costs_stack):
    return costs_stack


def money(micros: int) -> str:
    """As the board writes it (en-US): at least 2 decimals, at most 4."""
    text = f"{micros / 1_000_000:,.4f}"
    whole, frac = text.split(".")
    frac = frac.rstrip("0").ljust(2, "0")
    return f"{whole}.{frac} USD"


def month_range(zone: str) -> tuple[str, str]:
    """This month in ``zone`` as the page asks for it: its first midnight there, the next
    month's, each as an ISO time in UTC."""
    now = datetime.now(ZoneInfo(zone))
    first = datetime(now.year, now.month, 1, tzinfo=ZoneInfo(zone))
    after = datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=ZoneInfo(zone))
    return tuple(t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z") for t in (first, after))


def price(stack, model: str) -> None:
    with stack.api() as api:
        r = api.put(f"/prices/{model}", json=PRICE)
        assert r.status_code == 200, r.text


def test_the_costs_page_shows_what_the_api_counts(stack, page, screenshots):
    co = daily.company(stack, "Spend", "SPD")
    cid = co["id"]
    coder = daily.agent(
        stack,
        cid,
        [
            {
                "message": "Reading.",
                "usage": {
                    "input_tokens": 12_000,
                    "cached_input_tokens": 2_000,
                    "output_tokens": 800,
                    "reasoning_tokens": 300,
                },
            },
            FINISH | {"usage": {"input_tokens": 13_000, "output_tokens": 200}},
        ],
    )
    price(stack, coder["model"])
    # The reviewer's model has no price: its tokens count, its cost is unknown.
    reviewer = daily.agent(
        stack,
        cid,
        [FINISH | {"usage": {"input_tokens": 5_000, "output_tokens": 50}}],
        name="reviewer",
    )
    fix = daily.issue(stack, cid, "Fix the build", assignee_agent_id=coder["id"])
    review = daily.issue(stack, cid, "Review it", assignee_agent_id=reviewer["id"])
    fix_run = daily.ended_run(stack, cid, fix["id"])
    daily.ended_run(stack, cid, review["id"])
    assert fix_run["status"] == "succeeded", fix_run

    page.goto(stack.board(f"/#/c/{cid}"))
    page.locator("#nav").get_by_role("link", name="Costs").click()
    expect(page.get_by_role("heading", name="Costs", exact=True)).to_be_visible()
    root = page.locator(".costs")
    since, until = root.get_attribute("data-since"), root.get_attribute("data-until")
    assert (since, until) == month_range("UTC")
    api = {
        g: daily.get(stack, f"/companies/{cid}/costs", group_by=g, since=since, until=until)
        for g in ("day", "agent", "model", "issue")
    }
    t = api["day"]["totals"]
    assert (t["events"], t["unpriced_events"], t["runs"]) == (3, 1, 2)
    assert t["input_tokens"] == 30_000 and t["cost_micros"] > 0

    totals = page.get_by_role("region", name="Totals")
    cost = totals.locator("[data-figure='cost'] .cost")
    expect(cost).to_have_attribute("data-micros", str(t["cost_micros"]))
    expect(cost).to_have_text(f"at least {money(t['cost_micros'])} (+ 1 unpriced)")
    expect(totals.locator("[data-figure='input'] dd")).to_have_text("30,000")
    expect(totals.locator("[data-figure='cached'] dd")).to_have_text(
        f"{t['cached_input_tokens']:,}"
    )
    expect(totals.locator("[data-figure='output'] dd")).to_have_text(f"{t['output_tokens']:,}")
    expect(totals.locator("[data-figure='reasoning'] dd")).to_have_text(
        f"{t['reasoning_tokens']:,}"
    )
    expect(totals.locator("[data-figure='runs'] dd")).to_have_text("2")
    expect(totals.locator(".unpriced-note")).to_contain_text("1 of 3 responses had no price")

    # The chart: drawn here, named for screen readers, one bar per day, today's as the API's.
    chart = page.locator("svg.chart")
    expect(chart).to_have_attribute("role", "img")
    expect(chart.locator("title").first).to_contain_text("Cost per day")
    [day] = api["day"]["groups"]
    bar = chart.locator(f"rect.bar[data-day='{day['key']}']")
    expect(bar).to_have_attribute("data-value", str(day["totals"]["cost_micros"]))
    expect(chart.locator(f"circle.unpriced-dot[data-day='{day['key']}']")).to_have_count(1)
    expect(chart.locator("rect.bar")).to_have_count(
        int(page.evaluate("() => document.querySelectorAll('svg.chart rect.bar').length"))
    )
    page.get_by_label("Tokens").check()
    tokens = day["totals"]["input_tokens"] + day["totals"]["output_tokens"]
    expect(page.locator(f"svg.chart rect.bar[data-day='{day['key']}']")).to_have_attribute(
        "data-value", str(tokens)
    )
    page.get_by_text("The figures as a table").click()
    expect(page.locator(f"table.days tr[data-day='{day['key']}']")).to_contain_text(
        f"{day['totals']['input_tokens']:,}"
    )

    # Per agent: the priced one's cost, the unpriced one's "unknown", each one's runs.
    by_agent = {g["key"]: g["totals"] for g in api["agent"]["groups"]}
    coder_row = page.locator(f"tr[data-agent='{coder['id']}']")
    expect(coder_row.locator(".cost")).to_have_text(money(by_agent[coder["id"]]["cost_micros"]))
    expect(coder_row.locator("[data-runs]")).to_have_text("1")
    reviewer_row = page.locator(f"tr[data-agent='{reviewer['id']}']")
    expect(reviewer_row.locator(".cost")).to_have_text("unknown (no price)")
    expect(reviewer_row.locator(".tokens")).to_have_attribute("data-input", "5000")
    expect(coder_row).to_contain_text("no budget of its own")
    # Per model and per issue, as the API groups them.
    models = page.get_by_role("region", name="Per model").locator("tr[data-key]")
    expect(models).to_have_count(len(api["model"]["groups"]))
    issues = page.get_by_role("region", name="Per issue")
    expect(issues.get_by_role("link", name="SPD-1")).to_be_visible()
    expect(issues.locator(f"tr[data-key='{review['id']}'] .cost")).to_have_text(
        "unknown (no price)"
    )
    page.get_by_label("Cost", exact=True).check()
    expect(page.locator("svg.chart")).to_have_attribute("data-metric", "cost")
    screenshots(page, "costs", full_page=True)
    # On a phone nothing is wider than the screen: the tables scroll in their own boxes.
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.set_viewport_size({"width": 1280, "height": 900})

    # The run page and the issue page: their tokens and cost.
    run = daily.get(stack, f"/companies/{cid}/runs/{fix_run['id']}")
    page.goto(stack.board(f"/#/c/{cid}/runs/{fix_run['id']}"))
    facts = page.locator("dl.facts").first
    expect(facts.locator(".cost")).to_have_text(money(run["usage"]["cost_micros"]))
    expect(facts.locator(".tokens")).to_have_attribute(
        "data-input", str(run["usage"]["input_tokens"])
    )
    expect(facts.locator(".tokens")).to_contain_text("25,000 in (2,000 cached)")
    page.goto(stack.board(f"/#/c/{cid}/issues/{fix['identifier']}"))
    panel = page.get_by_role("region", name="Cost")
    expect(panel.locator(".cost")).to_have_text(money(run["usage"]["cost_micros"]))
    expect(panel).to_contain_text(coder["model"])
    page.goto(stack.board(f"/#/c/{cid}/issues/{review['identifier']}"))
    expect(page.get_by_role("region", name="Cost").locator(".cost")).to_have_text(
        "unknown (no price)"
    )

    # This month is the company's: its days start at midnight in its time zone.
    with stack.api() as client:
        r = client.patch(f"/companies/{cid}", json={"time_zone": "America/New_York"})
        assert r.status_code == 200, r.text
    page.goto(stack.board(f"/#/c/{cid}/costs"))
    expect(page.locator(".range")).to_contain_text("America/New_York")
    root = page.locator(".costs")
    since, until = root.get_attribute("data-since"), root.get_attribute("data-until")
    assert (since, until) == month_range("America/New_York")
    zoned = daily.get(stack, f"/companies/{cid}/costs", group_by="day", since=since, until=until)
    for group in zoned["groups"]:
        expect(page.locator(f"svg.chart rect.bar[data-day='{group['key']}']")).to_have_attribute(
            "data-value", str(group["totals"]["cost_micros"])
        )
    expect(page.locator("[data-figure='cost'] .cost")).to_have_attribute(
        "data-micros", str(zoned["totals"]["cost_micros"])
    )


def test_a_budget_made_on_the_board_stops_a_turn_and_raised_there_lets_it_go_on(
    stack, page, screenshots
):
    co = daily.company(stack, "Budgets", "BGT")
    cid = co["id"]
    # 10,000 input tokens at 2 USD a million: 0.02 USD, twice the budget.
    spend = {"message": "Working.", "usage": {"input_tokens": 10_000, "output_tokens": 10}}
    context = {"call_tool": {"name": "get_task_context", "arguments": {}}}
    coder = daily.agent(stack, cid, [spend, context, FINISH])
    price(stack, coder["model"])

    page.goto(stack.board(f"/#/c/{cid}/costs"))
    page.get_by_role("button", name="New budget").click()  # its form, in a dialog
    form = page.get_by_role("form", name="Budget")
    form.get_by_label("Covers").select_option("agent")
    form.get_by_label("Agent", exact=True).select_option(coder["id"])
    form.get_by_label("Monthly limit (currency units)").fill("0.01")
    form.get_by_label("Warn at (% of the limit)").fill("150")
    form.get_by_role("button", name="Create budget").click()
    expect(form.locator(".error")).to_contain_text("warn_percent")  # the field, in words
    expect(form.locator(".error details.code code")).to_have_text(re.compile(r"^\w+$"))
    form.get_by_label("Warn at (% of the limit)").fill("50")
    form.get_by_role("button", name="Create budget").click()
    rows = page.locator("tr[data-budget]")
    expect(rows).to_have_count(1)
    [budget] = daily.get(stack, f"/companies/{cid}/budgets")["items"]
    assert (budget["scope_id"], budget["monthly_limit_micros"], budget["warn_percent"]) == (
        coder["id"],
        10_000,
        50,
    )
    expect(rows.first).to_have_attribute("data-state", "ok")
    expect(rows.first).to_contain_text("0.00 USD of 0.01 USD")
    # A second budget for the same agent: the API's code and message, in the form.
    page.get_by_role("button", name="New budget").click()
    form.get_by_label("Covers").select_option("agent")
    form.get_by_label("Monthly limit (currency units)").fill("5")
    form.get_by_role("button", name="Create budget").click()
    expect(form.locator(".error")).to_contain_text("This agent has a budget already")
    expect(form.locator(".error details.code code")).to_have_text("budget_exists")
    expect(rows).to_have_count(1)
    page.keyboard.press("Escape")

    # The turn crosses the budget: its next tool call is refused, the run ends, the task waits.
    task = daily.issue(stack, cid, "Spend it all", assignee_agent_id=coder["id"])
    run = daily.ended_run(stack, cid, task["id"])
    assert (run["status"], run["error_code"]) == ("failed", "budget_exceeded"), run
    daily.script(stack, coder, [FINISH | {"usage": {"input_tokens": 100, "output_tokens": 5}}])
    # Work given to the agent now does not start: it waits, held, naming the spent budget.
    later = daily.issue(stack, cid, "Then this", assignee_agent_id=coder["id"])
    wait_until(
        lambda: daily.get(stack, f"/companies/{cid}/holds", issue_id=later["id"])["items"],
        60,
        message="the later task held by the budget",
    )
    assert daily.runs(stack, cid, later["id"]) == []
    page.goto(stack.board(f"/#/c/{cid}/issues/{later['identifier']}"))
    why = page.locator(".why-waits")
    expect(why).to_contain_text("the agent budget (0.01 USD a month) is spent")
    expect(why).to_have_attribute("data-budget", budget["id"])

    page.goto(stack.board(f"/#/c/{cid}/runs/{run['id']}"))
    why = page.locator(".why-waits")
    expect(why).to_contain_text("Stopped: a budget is spent.")
    expect(why).to_have_attribute("data-budget", budget["id"])
    page.goto(stack.board(f"/#/c/{cid}/issues/{task['identifier']}"))
    why = page.locator(".why-waits")
    expect(why).to_contain_text("Waiting for a budget:")
    expect(why).to_contain_text("a budget of this run was spent during its turn")
    expect(why.get_by_role("link", name="Raise the agent budget")).to_have_attribute(
        "href", f"#/c/{cid}/costs?budget={budget['id']}"
    )
    expect(
        page.locator("li[data-status='active']").filter(has_text="Budget exceeded")
    ).to_have_count(1)
    page.evaluate("window.scrollTo(0, 0)")
    screenshots(page, "issue-budget")
    page.goto(stack.board(f"/#/c/{cid}/dashboard"))
    alert = page.get_by_role("region", name="Budgets past their warning")
    expect(alert.locator(f"li[data-budget='{budget['id']}']")).to_have_attribute(
        "data-state", "stopped"
    )
    page.goto(stack.board(f"/#/c/{cid}/inbox"))
    alert = page.get_by_role("region", name="Budgets past their warning")
    expect(alert.locator(f"li[data-budget='{budget['id']}']")).to_contain_text("Stopped")

    # From the inbox to the budget, raised there: the task goes on by itself.
    alert.get_by_role("link", name="Agent coder").click()
    row = page.locator(f"tr[data-budget='{budget['id']}']")
    expect(row).to_have_attribute("aria-current", "true")
    expect(row).to_have_attribute("data-state", "stopped")
    spent = daily.get(stack, f"/companies/{cid}/budgets/{budget['id']}")["spent_micros"]
    expect(row.locator("[data-percent]")).to_have_text(f"{round(spent * 1000 / 10_000) / 10:g}%")
    screenshots(page, "budgets", full_page=True)
    row.get_by_role("button", name="Change the budget of Agent coder").click()
    # 0.04 USD: no longer spent, still past its 50% warning.
    form.get_by_label("Monthly limit (currency units)").fill("0.04")
    form.get_by_role("button", name="Save budget").click()
    expect(row).to_have_attribute("data-state", "warning")
    assert (
        daily.get(stack, f"/companies/{cid}/budgets/{budget['id']}")["monthly_limit_micros"]
        == 40_000
    )
    again = daily.ended_run(stack, cid, task["id"], count=2)
    assert again["status"] == "succeeded", again
    assert daily.ended_run(stack, cid, later["id"])["status"] == "succeeded"
    page.goto(stack.board(f"/#/c/{cid}/issues/{task['identifier']}"))
    expect(page.locator(".why-waits")).to_have_count(0)
    expect(page.get_by_role("list", name="Thread").locator("li[data-run]")).to_have_count(2)
    page.goto(stack.board(f"/#/c/{cid}/dashboard"))
    alert = page.get_by_role("region", name="Budgets past their warning")
    expect(alert.locator(f"li[data-budget='{budget['id']}']")).to_have_attribute(
        "data-state", "warning"
    )
    expect(alert).to_contain_text("Past its warning (50%)")

    # Deleted from the board: a second press confirms.
    alert.get_by_role("link", name="Agent coder").click()
    delete = page.get_by_role("button", name="Delete the budget of Agent coder")
    delete.click()
    expect(delete).to_have_text("Press again to delete")
    assert len(daily.get(stack, f"/companies/{cid}/budgets")["items"]) == 1
    delete.click()
    expect(page.locator("tr[data-budget]")).to_have_count(0)
    assert daily.get(stack, f"/companies/{cid}/budgets")["items"] == []
