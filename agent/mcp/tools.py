"""The tools: each a thin call into the services and selectors the JSON API calls, under the
same key scopes and size limits. A tool's refusals are ``ToolError`` (the client sees
``isError`` with the text); the store's own errors (not found, a state conflict, bad input) say
the same as the API's ``detail`` would."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar
from uuid import UUID

from mcp.server.mcpserver import Context as ToolContext
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from agent.mcp import answers
from agent.mcp.caller import Caller
from agent.recall import row_text
from compression.models import CompressionEvent
from compression.policy import waiting
from compression.policy.triggers import enqueue_manual
from search.api import SearchBody
from search.filters import Filters
from search.query import MAX_QUERY_CHARS, InvalidQuery
from search.service import search as run_search
from sessions_app.models import MemoryBlock, Message, Scope, Session
from sessions_app.selectors.context import live_context
from sessions_app.selectors.messages import (
    conversation_between,
    conversation_near,
    summaries_at,
)
from sessions_app.selectors.sessions import channel_sessions
from sessions_app.services import get_session_for_channel
from sessions_app.services.memory import LABEL_PATTERN, Owner, blocks_for, delete_block, set_block
from sessions_app.services.pins import set_pinned

T = TypeVar("T")
CallerOf = Callable[[ToolContext], Caller]

SessionRef = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="A session id (from list_sessions or a search hit) or its external id.",
    ),
]
Position = Annotated[int, Field(ge=0, le=2**31, description="A message's position.")]
Label = Annotated[
    str, Field(pattern=LABEL_PATTERN, description="The block's name, e.g. 'user_prefs'.")
]

READS = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
WRITES = ToolAnnotations(
    readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
ERASES = ToolAnnotations(
    readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False
)


def _result(model: Any, text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=model.model_dump(mode="json"),
    )


def _session(caller: Caller, ref: str) -> Session:
    """By id or by external id; another channel's session is not found, as in the API."""
    try:
        UUID(ref)
    except ValueError:
        found = channel_sessions(caller.channel, external_id=ref).first()
    else:
        return get_session_for_channel(caller.channel, ref)
    if found is None:
        raise ToolError(f"no session {ref!r} for this channel (list_sessions shows them)")
    return found


def _rows(session: Session, rows: list[Message]) -> list[answers.Row]:
    covers = summaries_at(session, {r.summarized_by_id for r in rows if r.summarized_by_id})
    return [
        answers.Row(
            position=r.position,
            role=r.role,
            kind=r.kind,
            created_at=r.created_at,
            text=row_text(r),
            covered_by=covers.get(r.summarized_by_id) if r.summarized_by_id else None,
        )
        for r in rows
    ]


def register(server: Any, caller_of: CallerOf) -> None:
    """Add every tool to ``server`` (an ``MCPServer``); ``caller_of`` names the caller of a
    call from its context (the HTTP key, or the key stdio was started with)."""

    @server.tool(annotations=READS, title="Search everything said")
    def search(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_QUERY_CHARS,
                description='Words, "a phrase", prefix*; Chinese and code work too.',
            ),
        ],
        ctx: ToolContext,
        session: SessionRef | None = None,
        role: Literal["system", "user", "assistant", "tool"] | None = None,
        kind: Literal["live", "summary", "archived"] | None = None,
        since: Annotated[
            datetime | None, Field(description="Only messages from this time (ISO 8601).")
        ] = None,
        until: Annotated[datetime | None, Field(description="Only messages before it.")] = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
        offset: Annotated[int, Field(ge=0, le=10_000)] = 0,
        window: Annotated[int, Field(ge=0, le=20, description="Rows either side of a hit.")] = 2,
    ) -> Annotated[CallToolResult, answers.SearchAnswer]:
        """Search every message of this channel's conversations, originals that a summary
        replaced included: each hit says whether it is live, a summary or archived, and for an
        archived one which summary replaced it, with the rows around it."""
        caller = caller_of(ctx)
        caller.need(Scope.READ)
        target = _session(caller, session) if session else None
        try:
            # The API's own rules for the same request (since before until, 32 terms).
            SearchBody.model_validate(
                {"q": query, "since": since, "until": until, "limit": limit, "offset": offset}
            )
        except ValidationError as exc:
            raise ToolError(readable(exc)) from None
        filters = Filters(
            session_id=target.pk if target else None,
            channel_id=caller.channel.pk,
            role=role,
            kind=kind,
            since=since,
            until=until,
        )
        try:
            found = run_search(query, filters, limit=limit, offset=offset, window=window)
        except InvalidQuery as exc:
            raise ToolError(str(exc)) from None
        # Which summary replaced each archived hit: one query per session among the hits.
        wanted: dict[Any, set[int]] = {}
        for hit in found.hits:
            if hit.message.summarized_by_id:
                wanted.setdefault(hit.session, set()).add(hit.message.summarized_by_id)
        covers: dict[int, int] = {}
        for owner, ids in wanted.items():
            covers |= summaries_at(owner, ids)
        hits = [
            answers.Hit(
                session_id=hit.session.pk,
                session_title=hit.session.title,
                external_id=hit.session.external_id,
                position=hit.message.position,
                role=hit.message.role,
                kind=hit.message.kind,
                created_at=hit.message.created_at,
                excerpt=answers.plain_excerpt(hit.excerpt_html),
                covered_by=covers.get(hit.message.summarized_by_id or 0),
                window=[
                    answers.Row(
                        position=r.position,
                        role=r.role,
                        kind=r.kind,
                        created_at=r.created_at,
                        text=r.lead,
                    )
                    for r in hit.window
                ],
                first_position=hit.bookmarks.start.position,
                last_position=hit.bookmarks.end.position,
            )
            for hit in found.hits
        ]
        answer = answers.SearchAnswer(
            query=query,
            index=found.index,
            total=found.total,
            total_exact=found.total_exact,
            has_more=found.has_more,
            offset=offset,
            hits=hits,
        )
        return _result(answer, answers.search_text(answer))

    @server.tool(annotations=READS, title="Read messages")
    def read_messages(
        session: SessionRef,
        ctx: ToolContext,
        around: Annotated[
            Position | None, Field(description="Rows around this position (with radius).")
        ] = None,
        radius: Annotated[int, Field(ge=0, le=50)] = 4,
        start: Annotated[Position | None, Field(description="A range's first position.")] = None,
        end: Annotated[Position | None, Field(description="A range's last position.")] = None,
    ) -> Annotated[CallToolResult, answers.Messages]:
        """The original messages of a session: around a position, or a range of at most 200
        positions. Archived originals say which summary replaced them."""
        caller = caller_of(ctx)
        caller.need(Scope.READ)
        target = _session(caller, session)
        if (around is None) == (start is None):
            raise ToolError("give either 'around' (a position) or 'start' (and 'end'), not both")
        if around is not None:
            rows = conversation_near(target, around, radius)
        elif start is not None:
            last = start + 199 if end is None else end
            if last < start or last - start >= 200:
                raise ToolError("'end' must be from 'start' to 'start' + 199")
            rows = conversation_between(target, start, last)
        answer = answers.Messages(
            session_id=target.pk,
            rows=_rows(target, rows),
            last_position=max(target.next_position - 1, 0),
        )
        return _result(answer, answers.messages_text(answer))

    @server.tool(annotations=READS, title="List sessions")
    def list_sessions(
        ctx: ToolContext,
        archived: Literal["false", "true", "all"] = "false",
        limit: Annotated[int, Field(ge=1, le=200)] = 50,
        offset: Annotated[int, Field(ge=0, le=100_000)] = 0,
    ) -> Annotated[CallToolResult, answers.Sessions]:
        """This channel's sessions, most recently active first, with their ids, external ids
        and titles."""
        caller = caller_of(ctx)
        caller.need(Scope.READ)
        found = list(
            channel_sessions(caller.channel, archived=archived)[offset : offset + limit + 1]
        )
        answer = answers.Sessions(
            sessions=[
                answers.SessionItem(
                    id=s.pk,
                    external_id=s.external_id,
                    title=s.title,
                    model=s.model,
                    live_messages=s.live_messages,
                    live_tokens=s.live_tokens,
                    total_messages=s.total_messages,
                    compressions=s.compressions,
                    last_activity_at=s.last_activity_at,
                    archived=s.archived_at is not None,
                )
                for s in found[:limit]
            ],
            has_more=len(found) > limit,
        )
        return _result(answer, answers.sessions_text(answer))

    @server.tool(annotations=READS, title="Get the live context")
    def get_context(
        session: SessionRef, ctx: ToolContext
    ) -> Annotated[CallToolResult, answers.Context]:
        """The session's live context as the model sees it: head, summary, tail and memory."""
        caller = caller_of(ctx)
        caller.need(Scope.READ)
        target = _session(caller, session)
        answer = answers.Context(
            session_id=target.pk, messages=live_context(target), live_tokens=target.live_tokens
        )
        return _result(answer, answers.context_text(answer))

    def _pin(ctx: ToolContext, session: str, position: int, pinned: bool) -> CallToolResult:
        caller = caller_of(ctx)
        caller.need(Scope.WRITE)
        target = _session(caller, session)
        row = set_pinned(target, position, pinned)
        answer = answers.Pinned(session_id=target.pk, position=row.position, pinned=row.pinned)
        verb = "Pinned" if pinned else "Unpinned"
        return _result(answer, f"{verb} #{row.position}.")

    @server.tool(annotations=WRITES, title="Pin a message")
    def pin(
        session: SessionRef, position: Position, ctx: ToolContext
    ) -> Annotated[CallToolResult, answers.Pinned]:
        """Keep a live message in the context, in its place, across every compression."""
        return _pin(ctx, session, position, True)

    @server.tool(annotations=WRITES, title="Unpin a message")
    def unpin(
        session: SessionRef, position: Position, ctx: ToolContext
    ) -> Annotated[CallToolResult, answers.Pinned]:
        """Let the next compression summarise a pinned message (the original is kept)."""
        return _pin(ctx, session, position, False)

    def _owner(caller: Caller, session: str | None) -> Owner:
        return (
            Owner(session=_session(caller, session)) if session else Owner(channel=caller.channel)
        )

    def _block(block: MemoryBlock) -> answers.Block:
        return answers.Block(
            label=block.label,
            text=block.text,
            scope="session" if block.session_id else "channel",
            token_count=block.token_count,
        )

    @server.tool(annotations=READS, title="Read memory blocks")
    def memory_read(
        ctx: ToolContext, session: SessionRef | None = None
    ) -> Annotated[CallToolResult, answers.Memory]:
        """The memory blocks every request carries: the channel's, or with 'session' the ones
        that session sees (its own replace the channel's of the same label)."""
        caller = caller_of(ctx)
        caller.need(Scope.READ)
        if session:
            blocks = blocks_for(_session(caller, session))
        else:
            blocks = list(Owner(channel=caller.channel).blocks())
        answer = answers.Memory(
            blocks=[_block(b) for b in blocks], memory_tokens=sum(b.token_count for b in blocks)
        )
        return _result(answer, answers.memory_text(answer))

    @server.tool(annotations=WRITES, title="Write a memory block")
    def memory_write(
        label: Label,
        text: Annotated[str, Field(description="The block's whole text (replaces what was).")],
        ctx: ToolContext,
        session: SessionRef | None = None,
    ) -> Annotated[CallToolResult, answers.Block]:
        """Create or replace a memory block: the channel's (every session sees it), or with
        'session' that session's own. Needs the write scope."""
        caller = caller_of(ctx)
        caller.need(Scope.WRITE)
        block, created = set_block(_owner(caller, session), label, text)
        answer = _block(block)
        return _result(answer, f"{'Created' if created else 'Replaced'} block {label!r}.")

    @server.tool(annotations=ERASES, title="Delete a memory block")
    def memory_delete(
        label: Label, ctx: ToolContext, session: SessionRef | None = None
    ) -> Annotated[CallToolResult, answers.Deleted]:
        """Delete a memory block. Needs the write scope."""
        caller = caller_of(ctx)
        caller.need(Scope.WRITE)
        delete_block(_owner(caller, session), label)
        answer = answers.Deleted(
            label=label, scope="session" if session else "channel", deleted=True
        )
        return _result(answer, f"Deleted block {label!r}.")

    @server.tool(
        annotations=ToolAnnotations(
            readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=True
        ),
        title="Compress a session",
    )
    def compress(
        session: SessionRef,
        ctx: ToolContext,
        focus: Annotated[
            str | None,
            Field(max_length=500, description="What the summary must keep in detail."),
        ] = None,
        wait_seconds: Annotated[float, Field(ge=0, le=120)] = 30,
        confirm: Annotated[
            bool, Field(description="Go on if the pre-compact checkpoint fails.")
        ] = False,
    ) -> Annotated[CallToolResult, answers.Compressed]:
        """Summarise the middle of a session now (the originals stay searchable). Needs the
        operate scope. Waits up to wait_seconds for the result; after that it says 'queued'.
        One already running for the session is refused, as in the API."""
        caller = caller_of(ctx)
        caller.need(Scope.OPERATE)
        target = _session(caller, session)
        waiting.refuse_while_running(target)
        trigger = CompressionEvent.Trigger.MANUAL_MCP
        task_id = enqueue_manual(target, trigger, focus, confirm=confirm)
        body = waiting.manual_result(task_id, target, wait_seconds)
        if body is None:
            answer = answers.Compressed(session_id=target.pk, outcome="queued", task_id=task_id)
            return _result(answer, f"Queued (task {task_id}); the result lands in the events.")
        answer = answers.Compressed(
            session_id=target.pk,
            outcome=body.get("outcome", "failed"),
            live_tokens=body.get("live_tokens"),
            live_messages=body.get("live_messages"),
            continued_in=body.get("continued_in"),
            error=body.get("error"),
        )
        scored = [p for p in body.get("passes") or () if p.get("retention") is not None]
        said = f"{answer.outcome}"
        if answer.live_tokens is not None:
            said += f": {answer.live_tokens:,} live tokens in {answer.live_messages} messages"
        if scored:
            last = scored[-1]
            answer.retention, answer.salient_missed = last["retention"], last["salient_missed"]
            said += (
                f"; the summary kept {last['salient_kept']} of {last['salient_items']} salient "
                "items"
            )
        if answer.error:
            said += f" ({answer.error})"
        return _result(answer, said[:1].upper() + said[1:] + ".")


def readable(exc: ValidationError) -> str:
    """pydantic's errors as one line a person can act on: ``limit: must be ≤ 100``."""
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p not in ("body",)) or "arguments"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "invalid arguments: " + "; ".join(parts)
