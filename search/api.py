"""``GET /api/v1/search``: recall for gateways, limited to the key's own channel."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from ninja import Query, Router, Schema
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from search.filters import storable_time
from search.query import MAX_QUERY_CHARS, MAX_TERMS, NOT_BLANK
from search.service import Filters, InvalidQuery, SearchResult, search
from sessions_app.api.auth import READ, ChannelRequest
from sessions_app.api.schemas import ErrorOut, only_declared
from sessions_app.services import InvalidInput

router = Router(tags=["search"])


class SearchQuery(Schema):
    q: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        pattern=NOT_BLANK,
        description='Words, "a phrase", prefix*; everything else is plain text. At least one '
        f"character that is not a space; at most {MAX_TERMS} terms (a word, a quoted phrase or a "
        "run of CJK letters each count as one): more answer 422.",
    )
    # Optional parameters, not nullable ones: a query string cannot say null. (So the default,
    # None, is not of the type: the type checker is told to let it pass.)
    session: UUID = None  # type: ignore[assignment]
    role: Literal["system", "user", "assistant", "tool"] = None  # type: ignore[assignment]
    kind: Literal["live", "summary", "archived"] = None  # type: ignore[assignment]
    since: datetime = Field(  # type: ignore[assignment]
        None,
        description="Only messages from this time on (ISO 8601; without a zone, UTC). Must be "
        "earlier than `until`: otherwise 422.",
    )
    until: datetime = Field(  # type: ignore[assignment]
        None, description="Only messages before this time."
    )
    window: int = Field(2, ge=0, le=20, description="Messages before and after each hit.")
    limit: int = Field(20, ge=1, le=100)
    offset: int = Field(0, ge=0, le=10_000)
    before: int = Field(  # type: ignore[assignment]
        None,
        ge=1,
        le=2**63 - 1,
        description="Only messages older than this message id: continues a scan that stopped "
        "(`next_before` of the previous answer).",
    )
    model_config = ConfigDict(extra="forbid")

    @field_validator("since", "until")
    @classmethod
    def _storable(cls, value: datetime | None) -> datetime | None:
        return storable_time(value)

    @model_validator(mode="after")
    def _range(self) -> SearchQuery:
        if self.since and self.until and self.since >= self.until:
            raise ValueError("'since' must be earlier than 'until'")
        return self


class MessageRef(BaseModel):
    id: int
    position: int
    role: str
    kind: str
    is_summary: bool
    created_at: datetime


class SessionRef(BaseModel):
    id: UUID
    title: str
    channel: str


class WindowRowOut(BaseModel):
    id: int
    position: int
    role: str
    kind: str
    lead: str
    created_at: datetime
    is_hit: bool


class BookmarkOut(BaseModel):
    position: int
    of: int = Field(description="Messages in the whole conversation.")
    timestamp: datetime
    role: str
    lead: str


class Bookmarks(BaseModel):
    start: BookmarkOut
    end: BookmarkOut


class HitOut(BaseModel):
    message: MessageRef
    session: SessionRef
    score: float | None = Field(description="BM25 (lower is better); null for scan hits.")
    excerpt_html: str = Field(description="Escaped text; matches wrapped in <mark>.")
    window: list[WindowRowOut]
    bookmarks: Bookmarks
    rolled_back: bool


class SearchOut(BaseModel):
    query: str
    index: str | None = Field(description="words, bigram, trigram or scan; null if none matched.")
    tried: list[str]
    hits: list[HitOut]
    has_more: bool
    total: int = Field(
        description="Messages that matched: exact when total_exact, else at least this many "
        "(the indexes count up to their rank window; the scan to one past this page). A carried "
        "copy and the row it repeats count as two and show as one."
    )
    total_exact: bool
    scan_reached: int | None = Field(
        description="Set when the scan (the answer of last resort) stopped before reading every "
        "message: the oldest message id it read. Older messages were not searched."
    )
    next_before: int | None = Field(
        description="Pass as `before` to go on searching older messages; null when nothing is "
        "left unread."
    )
    ranked_within: int | None = Field(
        description="Set when this page was ranked within the newest this-many matches only: the "
        "query matched more, and the best rows the worker keeps for ranking it over every match "
        "are not ready yet (asked for; try again shortly) or this page lies past them. Null: "
        "ranked over every match."
    )
    limit: int
    offset: int


def serialize(result: SearchResult, limit: int, offset: int) -> dict:
    def bookmark(b) -> dict:
        return {
            "position": b.position,
            "of": b.of,
            "timestamp": b.timestamp,
            "role": b.role,
            "lead": b.lead,
        }

    return {
        "query": result.query.text,
        "index": result.index,
        "tried": result.tried,
        "has_more": result.has_more,
        "total": result.total,
        "total_exact": result.total_exact,
        "scan_reached": result.scan_reached,
        "next_before": result.next_before,
        "ranked_within": result.ranked_within,
        "limit": limit,
        "offset": offset,
        "hits": [
            {
                "message": {
                    "id": hit.message.pk,
                    "position": hit.message.position,
                    "role": hit.message.role,
                    "kind": hit.message.kind,
                    "is_summary": hit.message.is_summary,
                    "created_at": hit.message.created_at,
                },
                "session": {
                    "id": hit.session.pk,
                    "title": hit.session.title,
                    "channel": hit.session.channel.name,
                },
                "score": hit.score,
                "excerpt_html": hit.excerpt_html,
                "window": [row.__dict__ for row in hit.window],
                "bookmarks": {"start": bookmark(hit.start), "end": bookmark(hit.end)},
                "rolled_back": hit.rolled_back,
            }
            for hit in result.hits
        ],
    }


@router.get(
    "/search",
    response={200: SearchOut, 401: ErrorOut, 403: ErrorOut, 422: ErrorOut, 503: ErrorOut},
    auth=READ,
)
def search_messages(request: ChannelRequest, query: Query[SearchQuery]):
    """Full-text recall over live, summary and archived messages of this channel's sessions."""
    only_declared(request, SearchQuery)
    filters = Filters(
        session_id=query.session,
        channel_id=request.auth.pk,
        role=query.role,
        kind=query.kind,
        since=query.since,
        until=query.until,
        before_id=query.before,
    )
    try:
        result = search(
            query.q, filters, limit=query.limit, offset=query.offset, window=query.window
        )
    except InvalidQuery as exc:
        raise InvalidInput(str(exc)) from None
    return serialize(result, query.limit, query.offset)
