"""Agent chat over HTTP: conversations, their messages (pages and a live stream), turns."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated, Any

import msgspec
from litestar import Controller, Response, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import HeaderParameter, Parameter
from litestar.response import ServerSentEvent, ServerSentEventMessage
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_202_ACCEPTED

from paperclip.common.actor import Actor
from paperclip.domain.chat.conversations import ConversationService
from paperclip.domain.runs.steers import Steering
from paperclip.http.access import Access, access
from paperclip.http.cursors import Pages
from paperclip.http.errors import error_responses
from paperclip.http.fields import IdempotencyKey
from paperclip.http.pagination import Page
from paperclip.http.params import PAGE_SIZE_DEFAULT, Limit, PageCursor
from paperclip.models import Conversation, ConversationMessage

log = logging.getLogger(__name__)

SEQ_MAX = 2**53 - 1  # exact in a JSON number: the documented bound is the checked one
POLL_SECONDS = 0.25
RETRY_MS = 1000


class ConversationCreate(msgspec.Struct, forbid_unknown_fields=True):
    issue_id: uuid.UUID
    agent_id: uuid.UUID
    title: Annotated[str, msgspec.Meta(max_length=500)] = ""


class MessageCreate(msgspec.Struct, forbid_unknown_fields=True):
    body: Annotated[str, msgspec.Meta(min_length=1, max_length=100_000)]
    idempotency_key: IdempotencyKey | None = None
    """A retry with the same key is the first message (``200``), never a second one."""


class ConversationOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    issue_id: uuid.UUID
    agent_id: uuid.UUID
    title: str
    state: str
    """``idle``, ``active`` (a turn is unsettled), ``waiting`` (a card of the turn waits)."""
    session_generation: int
    current_wake_id: uuid.UUID | None
    created_at: datetime

    @classmethod
    def of(cls, c: Conversation) -> ConversationOut:
        return msgspec.convert(c, cls, from_attributes=True)


class MessageOut(msgspec.Struct):
    id: uuid.UUID
    seq: int
    conversation_id: uuid.UUID
    role: str
    author: str
    body: str
    run_id: uuid.UUID | None
    """The turn whose answer this is (agent replies)."""
    delivery: str
    """A person's message: ``turn`` (it started one) or ``steer`` (sent into the live turn)."""
    created_at: datetime

    @classmethod
    def of(cls, m: ConversationMessage) -> MessageOut:
        return cls(
            id=m.id,
            seq=m.seq,
            conversation_id=m.conversation_id,
            role=m.role,
            author=m.author_ref,
            body=m.body,
            run_id=m.run_id,
            delivery=m.delivery,
            created_at=m.created_at,
        )


class ConversationController(Controller):
    path = "/companies/{company_id:uuid}/conversations"
    tags = ["chat"]

    @post(
        "/",
        opt=access(Access.WRITE),
        status_code=HTTP_201_CREATED,
        responses=error_responses(404, 409, 422),
    )
    async def create_conversation(
        self,
        company_id: uuid.UUID,
        data: ConversationCreate,
        conversations: ConversationService,
        actor: Actor,
    ) -> ConversationOut:
        """Open a chat with an agent about a task (the agent takes an unassigned task)."""
        created = await conversations.create(
            actor, company_id, issue_id=data.issue_id, agent_id=data.agent_id, title=data.title
        )
        return ConversationOut.of(created)

    @get("/", opt=access(Access.READ), responses=error_responses(422))
    async def list_conversations(
        self,
        company_id: uuid.UUID,
        conversations: ConversationService,
        pages: Pages,
        issue_id: uuid.UUID | None = None,
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[ConversationOut]:
        rows, end = await conversations.list(
            company_id, issue_id=issue_id, after=pages.after(cursor), limit=limit
        )
        return pages.page([ConversationOut.of(r) for r in rows], end)

    @get("/{conversation_id:uuid}", opt=access(Access.READ), responses=error_responses(404))
    async def get_conversation(
        self, company_id: uuid.UUID, conversation_id: uuid.UUID, conversations: ConversationService
    ) -> ConversationOut:
        return ConversationOut.of(await conversations.get(company_id, conversation_id))

    @get("/{conversation_id:uuid}/turns", opt=access(Access.READ), responses=error_responses(404))
    async def list_turns(
        self, company_id: uuid.UUID, conversation_id: uuid.UUID, conversations: ConversationService
    ) -> dict[str, Any]:
        """The conversation's turns, oldest first, each with its run once one was claimed."""
        return {"items": await conversations.turns(company_id, conversation_id)}

    @post(
        "/{conversation_id:uuid}/messages",
        opt=access(Access.WRITE),
        status_code=HTTP_202_ACCEPTED,
        responses={
            200: ResponseSpec(
                data_container=MessageOut,
                description="the idempotency key's first message: nothing was written again",
                generate_examples=False,
            ),
            **error_responses(403, 404, 409, 422),
        },
    )
    async def post_message(
        self,
        company_id: uuid.UUID,
        conversation_id: uuid.UUID,
        data: MessageCreate,
        conversations: ConversationService,
        steering: Steering,
        actor: Actor,
    ) -> Response[MessageOut]:
        """A person's message: it starts a turn, or steers the live one (``delivery``).

        A steer commits with the message, or neither does: ``409 run_not_steerable``
        when the running turn cannot take it now. ``200``: the idempotency key's first
        message, nothing written again.
        """
        posted = await conversations.post(
            actor,
            company_id,
            conversation_id,
            body=data.body,
            steer=functools.partial(steering.steer_in, actor),
            idempotency_key=data.idempotency_key,
        )
        if posted.steered is not None:
            steering.kick(posted.steered)
        status = HTTP_200_OK if posted.replayed else HTTP_202_ACCEPTED
        return Response(MessageOut.of(posted.message), status_code=status)

    @get(
        "/{conversation_id:uuid}/messages",
        opt=access(Access.READ),
        responses=error_responses(404, 422),
    )
    async def list_messages(
        self,
        company_id: uuid.UUID,
        conversation_id: uuid.UUID,
        conversations: ConversationService,
        pages: Pages,
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[MessageOut]:
        rows, end = await conversations.messages(
            company_id, conversation_id, after=pages.after(cursor), limit=limit
        )
        return pages.page([MessageOut.of(r) for r in rows], end)

    @get(
        "/{conversation_id:uuid}/messages/stream",
        opt=access(Access.READ),
        responses=error_responses(404, 429),  # 429: paperclip.api.stream_limits
        media_type="text/event-stream",
    )
    async def follow_conversation(
        self,
        company_id: uuid.UUID,
        conversation_id: uuid.UUID,
        conversations: ConversationService,
        after_seq: Annotated[int, Parameter(ge=0, le=SEQ_MAX)] = 0,
        last_event_id: Annotated[int, HeaderParameter(name="Last-Event-ID", ge=0, le=SEQ_MAX)] = 0,
        wait: Annotated[int, Parameter(ge=0, le=300)] = 60,
    ) -> ServerSentEvent:
        """Follow a conversation live: each message (``message``, its ``seq`` as the SSE id)
        after ``after_seq``/``Last-Event-ID``, and its ``state`` when it changes, for
        ``wait`` seconds (the client then reconnects from its last id)."""
        await conversations.get(company_id, conversation_id)
        start = max(after_seq, last_event_id)
        return ServerSentEvent(_follow(conversations, company_id, conversation_id, start, wait))


async def _follow(
    conversations: ConversationService,
    company_id: uuid.UUID,
    conversation_id: uuid.UUID,
    after: int,
    wait: int,
) -> AsyncIterator[ServerSentEventMessage]:
    deadline = time.monotonic() + wait
    state = None
    yield ServerSentEventMessage(data=None, comment="paperclip conversation", retry=RETRY_MS)
    try:
        while True:
            conversation = await conversations.get(company_id, conversation_id)
            if conversation.state != state:
                state = conversation.state
                yield ServerSentEventMessage(
                    data=msgspec.json.encode({"state": state}).decode(), event="state"
                )
            rows = await conversations.messages_after(company_id, conversation_id, after, 200)
            for row in rows:
                after = row.seq
                yield ServerSentEventMessage(
                    data=msgspec.json.encode(MessageOut.of(row)).decode(),
                    event="message",
                    id=str(row.seq),
                )
            if time.monotonic() >= deadline:
                return
            if not rows:
                await asyncio.sleep(POLL_SECONDS)
    except Exception as error:
        log.warning("conversation stream of %s ended early: %s", conversation_id, error)
