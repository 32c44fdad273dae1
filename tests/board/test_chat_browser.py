"""The board's chat and interaction cards in Chromium, against real processes (docs/chat.md)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.engine.chat_stack import held_turn, interactions, replies
from tests.support.db import query
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.browser]

# Imported only when Playwright is installed (tox ``board``); elsewhere the module is
# deselected by its marker, and must still import.
expect = pytest.importorskip("playwright.sync_api").expect


def test_chat_with_the_agent_answer_its_card_and_see_each_reply_once(stack, page, screenshots):
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(held_turn("Which team should the designer join?", card=True))
    stack.assign(ctx)  # the assignment's own run asks first; the chat comes after it
    wait_until(lambda: interactions(stack, ctx), 90, message="the agent's card")
    stack.rewrite_script(ctx, held_turn("The designer joins the web team.", "done"))

    page.goto(stack.board(f"/#/c/{ctx['company']['id']}/issues/{ctx['issue']['id']}"))
    cards = page.get_by_role("region", name="Questions and approvals")
    card = cards.locator("li[data-status='pending']")
    expect(card).to_contain_text("Which team hires?")
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("button", name="Start a chat").click()
    expect(chat.locator("[data-chat-state]")).to_have_attribute("data-chat-state", "idle")

    # Answering the card wakes the agent; then a chat message is the next turn.
    # The question waits at the top of the page, answered there.
    waiting = page.get_by_role("region", name="Waiting on you")
    waiting.get_by_label("Answer to Which team hires?").fill("The web team.")
    waiting.get_by_role("button", name="Answer: Which team hires?").click()
    expect(cards.locator("li[data-status='answered']")).to_have_count(1)
    wait_until(
        lambda: (
            all(r["status"] in ("succeeded", "failed") for r in stack.runs(ctx))
            and len(stack.runs(ctx)) == 2
        ),
        90,
        message="the answered card's run ended",
    )
    stack.rewrite_script(ctx, held_turn("Yes: the web team starts on Monday.", "done"))
    chat.get_by_label("Message to the agent").fill("Does the web team start soon?")
    chat.get_by_role("button", name="Send").click()
    agent_lines = chat.locator("li[data-role='agent']")
    expect(agent_lines).to_have_count(1, timeout=90_000)
    expect(agent_lines).to_contain_text("Yes: the web team starts on Monday.")
    expect(chat.locator("[data-chat-state]")).to_have_attribute("data-chat-state", "idle")
    with stack.api() as api:
        [ctx["conversation"]] = api.get(
            f"/companies/{ctx['company']['id']}/conversations",
            params={"issue_id": ctx["issue"]["id"]},
        ).json()["items"]
    assert replies(stack, ctx) == ["Yes: the web team starts on Monday."]
    # The board sends each message with a key of its own: a retry cannot write it twice.
    sql = "SELECT idempotency_key FROM conversation_messages WHERE role = 'user'"
    with ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this thread
        [keyed] = pool.submit(query, stack.database_url, sql).result()
    assert keyed["idempotency_key"]
    screenshots(page, "issue-chat", full_page=True)


def test_chat_messages_are_markdown_and_their_html_is_sanitised(stack, page):
    stack.start_server()  # no runner: the messages wait for their turn, which never comes
    ctx = stack.setup_issue({"turns": []})
    stack.assign(ctx)
    page.goto(stack.board(f"/#/c/{ctx['company']['id']}/issues/{ctx['issue']['id']}"))
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("button", name="Start a chat").click()
    box = chat.get_by_label("Message to the agent")
    box.fill("Ship it **now**, please.")
    chat.get_by_role("button", name="Send").click()
    mine = chat.locator("li[data-role='user']")
    expect(mine).to_have_count(1)
    expect(mine.first.locator(".body strong")).to_have_text("now")
    expect(mine.first.locator(".body")).to_have_text("Ship it now, please.")

    payload = '<img src=x onerror="document.title=\'pwned\'"><b onclick="alert(1)">Hello</b>'
    box.fill(payload)
    chat.get_by_role("button", name="Send").click()
    expect(mine).to_have_count(2)
    second = mine.nth(1).locator(".body")
    expect(second).to_have_text(payload)  # shown as written: text, never markup
    expect(chat.locator("img")).to_have_count(0)
    expect(second.locator("b")).to_have_count(0)
    assert page.title() == "Paperclip board"
    # The API keeps what was written; only the page leaves the markup out.
    with stack.api() as api:
        cid = ctx["company"]["id"]
        [conversation] = api.get(
            f"/companies/{cid}/conversations", params={"issue_id": ctx["issue"]["id"]}
        ).json()["items"]
        bodies = [
            m["body"]
            for m in api.get(
                f"/companies/{cid}/conversations/{conversation['id']}/messages"
            ).json()["items"]
        ]
    assert bodies == ["Ship it **now**, please.", payload]
