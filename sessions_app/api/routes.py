"""Gateway endpoints for the store. Thin: parse, call a service, shape the answer."""

from __future__ import annotations

from typing import Annotated, Literal

from ninja import Query, Router, Status
from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.answers import json_answer
from core.bodies import NO_NUL, NUL, NUL_MESSAGE
from sessions_app import selectors, services
from sessions_app.api.auth import OPERATE, READ, WRITE, ChannelRequest
from sessions_app.api.schemas import (
    ERRORS,
    AppendIn,
    AppendOut,
    ContextOut,
    MessageOut,
    MessagePage,
    ResetIn,
    ResetOut,
    RollbackIn,
    RollbackOut,
    SequenceErrorOut,
    SessionCreateIn,
    SessionOut,
    only_declared,
)
from sessions_app.models import Session
from sessions_app.selectors.messages import rows_page
from sessions_app.selectors.sessions import channel_sessions

router = Router(tags=["sessions"])


def _session(request: ChannelRequest, session_id: str) -> Session:
    return services.get_session_for_channel(request.auth, session_id)


@router.post("/sessions", response={200: SessionOut, 201: SessionOut, **ERRORS}, auth=WRITE)
def open_session(request: ChannelRequest, payload: SessionCreateIn):
    """Open a session (201), or return the one already open under this `external_id` (200)."""
    result = services.open_session(request.auth, **payload.dict())
    return Status(201 if result.created else 200, SessionOut.of(result.session))


class SessionListQuery(BaseModel):  # not a Schema: see search.api.SearchQuery
    limit: int = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0, le=1_000_000)
    # Optional parameters, not nullable ones: a query string cannot say null. (So the default,
    # None, is not of the type: the type checker is told to let it pass.)
    external_id: Annotated[
        str, Field(min_length=1, max_length=200, json_schema_extra={"pattern": NO_NUL})
    ] = None  # type: ignore[assignment]
    archived: Literal["false", "true", "all"] = Field(
        "false",
        description="Sessions archived by retention: left out (false), only them (true), or "
        "both (all). A lookup by external_id finds an archived session whatever this says.",
    )
    model_config = ConfigDict(extra="forbid")

    @field_validator("external_id")
    @classmethod
    def _storable(cls, value: str | None) -> str | None:
        # As a body's strings (core.bodies): PostgreSQL cannot compare a NUL, and no stored
        # external_id holds one.
        if value is not None and NUL in value:
            raise ValueError(NUL_MESSAGE)
        return value


@router.get("/sessions", response={200: list[SessionOut], **ERRORS}, auth=READ)
def list_sessions(request: ChannelRequest, query: Query[SessionListQuery]):
    """This channel's sessions, most recently active first; archived ones on request."""
    only_declared(request, SessionListQuery)
    sessions = channel_sessions(
        request.auth, external_id=query.external_id, archived=query.archived
    )
    return [SessionOut.of(s) for s in sessions[query.offset : query.offset + query.limit]]


@router.get("/sessions/{session_id}", response={200: SessionOut, **ERRORS}, auth=READ)
def get_session(request: ChannelRequest, session_id: str):
    """The session with its counters and guard state (one row read; no message scan)."""
    return SessionOut.of(_session(request, session_id))


@router.post(
    "/sessions/{session_id}/messages",
    response={200: AppendOut, 201: AppendOut, **ERRORS, 409: SequenceErrorOut},
    auth=WRITE,
)
def append_messages(request: ChannelRequest, session_id: str, payload: AppendIn):
    """Append messages in order, all or nothing, optionally with the usage the model reported.
    201 when something was stored; 200 when a `sequence` says all of it was stored before."""
    session = _session(request, session_id)
    messages = [m.model_dump(exclude_unset=True) for m in payload.messages]
    usage = payload.usage.model_dump(exclude_none=True) if payload.usage else None
    result = services.append_messages(
        session, messages, usage=usage, sequence=payload.sequence, defer=payload.defer
    )
    return Status(
        201 if result.messages else 200,
        {
            "session": SessionOut.of(result.session),
            "messages": [MessageOut.of(m) for m in result.messages],
            "decisions": result.decisions,
            "next_sequence": result.session.next_sequence,
            "duplicates": result.duplicates,
        },
    )


class MessageListQuery(BaseModel):  # not a Schema: see search.api.SearchQuery
    # Optional, not nullable (as SessionListQuery's): the type checker lets the None pass.
    kind: Literal["live", "summary", "archived", "rolled_back", "notice"] = None  # type: ignore[assignment]
    after: int = Field(  # type: ignore[assignment]
        None, ge=-1, le=2**31, description="Return rows after this position."
    )
    limit: int = Field(100, ge=1, le=1000)
    model_config = ConfigDict(extra="forbid")


@router.get("/sessions/{session_id}/messages", response={200: MessagePage, **ERRORS}, auth=READ)
def list_messages(request: ChannelRequest, session_id: str, query: Query[MessageListQuery]):
    """Every row of the session in order, including archived and rolled-back ones."""
    only_declared(request, MessageListQuery)
    session = _session(request, session_id)
    page, more = rows_page(session, kind=query.kind, after=query.after, limit=query.limit)
    return {
        "items": [MessageOut.of(m) for m in page],
        "next_after": page[-1].position if more else None,
    }


@router.get("/sessions/{session_id}/context", response={200: ContextOut, **ERRORS}, auth=READ)
def get_context(request: ChannelRequest, session_id: str):
    """The live context as an OpenAI `messages` array: head + summary + tail."""
    # Written as it is: the messages are JSON's own types already, and validating a thousand of
    # them against ContextOut and dumping them again took 0.7 ms for nothing.
    session = _session(request, session_id)
    return json_answer(context_answer(session, selectors.live_context(session)))


def context_answer(session: Session, messages: list[dict]) -> dict:
    """``GET .../context``'s answer in ContextOut's fields and order, in JSON's own types."""
    return {
        "session_id": str(session.id),
        "messages": messages,
        "message_count": len(messages),
        "live_tokens": session.live_tokens,
    }


@router.post("/sessions/{session_id}/rollback", response={200: RollbackOut, **ERRORS}, auth=WRITE)
def rollback(request: ChannelRequest, session_id: str, payload: RollbackIn | None = None):
    """Undo or regenerate: the last `count` live messages become rolled back (kept, unindexed)."""
    payload = payload or RollbackIn()
    session = _session(request, session_id)
    rows = services.rollback_messages(session, payload.count, reason=payload.mode)
    return {"session": SessionOut.of(session), "rolled_back": [MessageOut.of(m) for m in rows]}


@router.post("/sessions/{session_id}/reset", response={200: ResetOut, **ERRORS}, auth=OPERATE)
def reset(request: ChannelRequest, session_id: str, payload: ResetIn | None = None):
    """Archive every live message (the system prompt stays unless asked); nothing is deleted."""
    payload = payload or ResetIn()
    session = _session(request, session_id)
    archived = services.reset_session(session, keep_system_prompt=payload.keep_system_prompt)
    return {"session": SessionOut.of(session), "archived": archived}
