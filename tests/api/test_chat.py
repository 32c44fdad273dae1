"""Agent chat and interactions over HTTP: conversations, messages in cursor pages, the live
stream, cards and approvals, and the clear 4xx of bad input."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from paperclip.models import ConversationMessage, ConversationTurnRecord, WakeRequest


@pytest.fixture
async def issue(paperclip_client, company):
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/issues", json={"title": "Hire a designer"}
    )
    assert r.status_code == 201, r.text
    return r.json()


@pytest.fixture
async def chat(paperclip_client, company, agent, issue):
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/conversations",
        json={"issue_id": issue["id"], "agent_id": agent["id"], "title": "Hiring"},
    )
    assert r.status_code == 201, r.text
    return r.json()


async def test_a_conversation_takes_the_unassigned_task_and_a_message_starts_a_turn(
    paperclip_client, paperclip_container, company, agent, issue, chat
):
    base = f"/api/companies/{company['id']}"
    assert (chat["state"], chat["session_generation"]) == ("idle", 1)
    r = await paperclip_client.get(f"{base}/issues/{issue['id']}")
    assert r.json()["assignee_agent_id"] == agent["id"]
    r = await paperclip_client.post(
        f"{base}/conversations/{chat['id']}/messages", json={"body": "Who do we hire?"}
    )
    assert r.status_code == 202, r.text
    assert (r.json()["role"], r.json()["delivery"]) == ("user", "turn")
    conversation = (await paperclip_client.get(f"{base}/conversations/{chat['id']}")).json()
    assert conversation["state"] == "active" and conversation["current_wake_id"]
    async with paperclip_container.sessions()() as session:
        wake = await session.get(WakeRequest, uuid.UUID(conversation["current_wake_id"]))
        turn = (
            await session.execute(
                select(ConversationTurnRecord).where(
                    ConversationTurnRecord.wake_request_id == wake.id
                )
            )
        ).scalar_one()
    assert (wake.agent_id, wake.issue_id) == (uuid.UUID(agent["id"]), uuid.UUID(issue["id"]))
    assert turn.conversation_id == uuid.UUID(chat["id"])
    turns = (await paperclip_client.get(f"{base}/conversations/{chat['id']}/turns")).json()
    assert [t["wake_request_id"] for t in turns["items"]] == [conversation["current_wake_id"]]


async def test_messages_come_in_cursor_pages_and_on_the_live_stream(
    paperclip_client, company, chat
):
    base = f"/api/companies/{company['id']}/conversations/{chat['id']}"
    for body in ("one", "two", "three"):
        r = await paperclip_client.post(f"{base}/messages", json={"body": body})
        assert r.status_code == 202
    first = (await paperclip_client.get(f"{base}/messages", params={"limit": 2})).json()
    assert [m["body"] for m in first["items"]] == ["one", "two"]
    rest = (
        await paperclip_client.get(
            f"{base}/messages", params={"limit": 2, "cursor": first["next_cursor"]}
        )
    ).json()
    assert [m["body"] for m in rest["items"]] == ["three"] and rest["next_cursor"] is None
    r = await paperclip_client.get(f"{base}/messages", params={"cursor": "forged.cursor"})
    assert r.status_code == 422 and r.json()["code"] == "invalid_cursor"
    seqs = [m["seq"] for m in first["items"]]
    r = await paperclip_client.get(
        f"{base}/messages/stream", params={"after_seq": seqs[0], "wait": 0}
    )
    assert r.status_code == 200
    assert "event: state" in r.text and '"state":"active"' in r.text
    assert "event: message" in r.text
    assert '"body":"one"' not in r.text and '"body":"three"' in r.text
    assert f"id: {seqs[1]}" in r.text


async def test_bad_chat_input_gets_a_4xx_with_a_code(paperclip_client, company, agent, issue, chat):
    base = f"/api/companies/{company['id']}"
    r = await paperclip_client.post(f"{base}/conversations/{chat['id']}/messages", json={})
    assert r.status_code == 400 or r.status_code == 422
    assert "code" in r.json()
    r = await paperclip_client.post(
        f"{base}/conversations/{uuid.uuid4()}/messages", json={"body": "x"}
    )
    assert r.status_code == 404 and r.json()["code"] == "conversation_not_found"
    r = await paperclip_client.post(
        f"{base}/conversations", json={"issue_id": str(uuid.uuid4()), "agent_id": agent["id"]}
    )
    assert r.status_code == 422 and r.json()["code"] == "issue_not_found"
    other = await paperclip_client.post(
        f"{base}/agents", json={"name": "reviewer", "provider": "fixture"}
    )
    r = await paperclip_client.post(
        f"{base}/conversations", json={"issue_id": issue["id"], "agent_id": other.json()["id"]}
    )
    assert r.status_code == 409 and r.json()["code"] == "conversation_agent_not_assignee"
    r = await paperclip_client.post(
        f"{base}/issues/{issue['id']}/interactions", json={"kind": "question", "title": "Q?"}
    )
    assert r.status_code in (400, 422) and "code" in r.json()


async def test_a_foreign_company_sees_no_conversation(paperclip_client, company, chat):
    r = await paperclip_client.post("/api/companies", json={"name": "Other", "issue_prefix": "OTH"})
    other = r.json()["id"]
    r = await paperclip_client.get(f"/api/companies/{other}/conversations/{chat['id']}")
    assert r.status_code == 404 and r.json()["code"] == "conversation_not_found"
    r = await paperclip_client.get(f"/api/companies/{other}/conversations/{chat['id']}/messages")
    assert r.status_code == 404


async def test_an_approval_is_approved_rejected_revised_and_resubmitted_once_each(
    paperclip_client, company, issue, chat
):
    base = f"/api/companies/{company['id']}"
    r = await paperclip_client.post(
        f"{base}/issues/{issue['id']}/interactions",
        json={"kind": "approval", "title": "Hire Ada", "conversation_id": chat["id"]},
    )
    assert r.status_code == 201, r.text
    approval = r.json()

    async def act(action: str, **extra):
        return await paperclip_client.post(
            f"{base}/interactions/{approval['id']}/actions", json={"action": action, **extra}
        )

    r = await act("request_revision", note="A lower salary, please.")
    assert r.json()["status"] == "revision_requested"
    assert r.json()["response"] == {"action": "request_revision", "note": "A lower salary, please."}
    r = await act("approve")
    assert r.status_code == 409 and r.json()["code"] == "interaction_not_pending"
    r = await act("resubmit")
    assert (r.json()["status"], r.json()["revision"]) == ("pending", 2)
    r = await act("answer", answer="yes")
    assert r.status_code == 409 and r.json()["code"] == "interaction_action_not_allowed"
    r = await act("approve")
    assert r.json()["status"] == "approved" and r.json()["resolved_by"]
    r = await act("reject")
    assert r.status_code == 409 and r.json()["code"] == "interaction_not_pending"
    r = await act("dance")
    assert r.status_code in (400, 422)
    listed = (await paperclip_client.get(f"{base}/issues/{issue['id']}/interactions")).json()
    assert [(i["kind"], i["status"]) for i in listed["items"]] == [("approval", "approved")]
    # Deciding the approval woke the agent: the wake is the conversation's next turn.
    conversation = (await paperclip_client.get(f"{base}/conversations/{chat['id']}")).json()
    assert conversation["state"] == "active" and conversation["current_wake_id"]


async def test_a_retried_message_with_its_idempotency_key_is_written_once(
    paperclip_client, paperclip_container, company, issue, chat
):
    """A client that lost the answer to its POST sends it again with the same key: one
    message, one comment on the task, one turn; the database's unique index holds it."""
    base = f"/api/companies/{company['id']}"
    messages = f"{base}/conversations/{chat['id']}/messages"
    sent = {"body": "Who do we hire?", "idempotency_key": "msg-1"}
    first = await paperclip_client.post(messages, json=sent)
    assert first.status_code == 202, first.text
    again = await paperclip_client.post(messages, json=sent)
    assert again.status_code == 200, again.text
    assert again.json() == first.json()

    reused = await paperclip_client.post(
        messages, json={"body": "Someone else?", "idempotency_key": "msg-1"}
    )
    assert reused.status_code == 409, reused.text
    assert reused.json()["code"] == "idempotency_key_reused"
    assert reused.json()["details"][0]["field"] == "idempotency_key"
    second = await paperclip_client.post(messages, json={"body": "Someone else?"})
    assert second.status_code == 202, second.text

    listed = (await paperclip_client.get(messages)).json()["items"]
    assert [m["body"] for m in listed] == ["Who do we hire?", "Someone else?"]
    comments = (await paperclip_client.get(f"{base}/issues/{issue['id']}/comments")).json()
    assert [c["body"] for c in comments["items"]].count("Who do we hire?") == 1
    turns = (await paperclip_client.get(f"{base}/conversations/{chat['id']}/turns")).json()
    assert len(turns["items"]) == 1  # the second message folded into the queued wake

    async with paperclip_container.sessions().begin() as session:
        with pytest.raises(IntegrityError):  # the database, not only the check, refuses it
            session.add(
                ConversationMessage(
                    company_id=uuid.UUID(company["id"]),
                    conversation_id=uuid.UUID(chat["id"]),
                    role="user",
                    author_ref="user:someone",
                    body="Who do we hire?",
                    delivery="turn",
                    idempotency_key="msg-1",
                )
            )
            await session.flush()

    r = await paperclip_client.post(messages, json={"body": "x", "idempotency_key": ""})
    assert r.status_code in (400, 422) and "code" in r.json()
