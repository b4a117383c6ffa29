"""``GET /api/v1/search`` (and ``POST``, for long queries): recall for gateways, limited to the
key's own channel."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Annotated, Any, Literal, get_type_hints
from uuid import UUID

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse
from ninja import Query, Router
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    create_model,
    field_validator,
)

from core.answers import add_server_timing, json_answer
from core.bodies import StorableBody
from search.filters import storable_time
from search.query import MAX_QUERY_CHARS, MAX_TERMS, NOT_BLANK
from search.results import Bookmark
from search.service import Filters, Hit, InvalidQuery, SearchResult, search
from sessions_app.api.auth import READ, ChannelRequest
from sessions_app.api.schemas import ERRORS, Integral, only_declared
from sessions_app.services import InvalidInput

router = Router(tags=["search"])


# Query-string parameters are a plain pydantic model, not django-ninja's Schema: a Schema that
# forbids extra fields validates its input twice, the second time through DjangoGetter (made to
# read ORM objects, which a query string never is). 17 µs per request against 6 here.
class SearchQuery(BaseModel):
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

    @field_validator("until")
    @classmethod
    def _after_since(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        # On the field, not the model: the error then names `until`, not the whole request.
        since = info.data.get("since")  # absent when since itself was refused
        if since and value and since >= value:
            raise ValueError("'since' must be earlier than 'until'")
        return value


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


def _answer(name: str, result: type, **shown_as: Any) -> type[BaseModel]:
    """The schema of an answer made from a result dataclass: its fields in their order, with
    their types and descriptions, every one required (an answer carries them all); ``shown_as``
    gives a field the form the answer shows it in, or None to leave it out, and adds a field
    the dataclass does not have after the others."""
    hints = get_type_hints(result, include_extras=True)
    fields = {f.name: hints[f.name] for f in dataclasses.fields(result)} | shown_as
    shown = {n: (t, ...) for n, t in fields.items() if t is not None}
    return create_model(name, **shown)  # type: ignore[call-overload]  # fields made at run time


HitOut = _answer("HitOut", Hit, message=MessageRef, session=SessionRef)
SearchOut = _answer(
    "SearchOut",
    SearchResult,
    query=str,
    hits=list[HitOut],  # type: ignore[valid-type]  # a model made at run time
    lookup_seconds=None,
    total_seconds=None,
    limit=int,
    offset=int,
)


_ENCODER = DjangoJSONEncoder()


def _time(moment: datetime) -> str:
    """A time as the API's encoder writes it: ISO 8601, milliseconds, UTC as "Z"."""
    return _ENCODER.default(moment)


def _bookmark(mark: Bookmark) -> dict:
    return {
        "position": int(mark.position),
        "of": int(mark.of),
        "timestamp": _time(mark.timestamp),
        "role": mark.role,
        "lead": mark.lead,
    }


def serialize(result: SearchResult, limit: int, offset: int) -> dict:
    """The answer in JSON's own types, its fields in ``SearchOut``'s order and each of its type:
    what validating against the schema and encoding would give (tests/test_search_answer.py
    holds the two equal), built once instead of three times -- a page of 20 hits with windows
    is some 40 KB, and that was most of an answer's time."""
    return {
        "query": result.query.text,
        "index": result.index,
        "tried": list(result.tried),
        "hits": [
            {
                "message": {
                    "id": int(hit.message.pk),
                    "position": int(hit.message.position),
                    "role": hit.message.role,
                    "kind": str(hit.message.kind),
                    "is_summary": bool(hit.message.is_summary),
                    "created_at": _time(hit.message.created_at),
                },
                "session": {
                    "id": str(hit.session.pk),
                    "title": hit.session.title,
                    "channel": hit.session.channel.name,
                },
                "score": None if hit.score is None else float(hit.score),
                "excerpt_html": hit.excerpt_html,
                "window": [
                    {
                        "id": int(row.id),
                        "position": int(row.position),
                        "role": row.role,
                        "kind": str(row.kind),
                        "lead": row.lead,
                        "created_at": _time(row.created_at),
                        "is_hit": bool(row.is_hit),
                    }
                    for row in hit.window
                ],
                "bookmarks": {
                    "start": _bookmark(hit.bookmarks.start),
                    "end": _bookmark(hit.bookmarks.end),
                },
                "rolled_back": bool(hit.rolled_back),
            }
            for hit in result.hits
        ],
        "has_more": bool(result.has_more),
        "total": int(result.total),
        "total_exact": bool(result.total_exact),
        "scan_reached": result.scan_reached,
        "next_before": result.next_before,
        "ranked_within": result.ranked_within,
        "limit": limit,
        "offset": offset,
    }


@router.get(
    "/search",
    response={200: SearchOut, **{code: ERRORS[code] for code in (401, 403, 422, 503)}},
    auth=READ,
)
def search_messages(request: ChannelRequest, query: Query[SearchQuery]):
    """Full-text recall over live, summary and archived messages of this channel's sessions.
    A query string is limited to the web server's request line (64 KiB under granian, 8,190
    bytes under gunicorn and most proxies): a long CJK query may go as `POST /search`."""
    only_declared(request, SearchQuery)
    return _search(request, query)


class SearchBody(StorableBody, SearchQuery):
    """`GET /search`'s parameters as a JSON object, its types strict as every body's (`"5"` is
    not 5, `0` is not a time); a filter may also be null (not given)."""

    session: UUID | None = Field(None, strict=False)  # type: ignore[assignment]  # JSON: a string
    role: Literal["system", "user", "assistant", "tool"] | None = None  # type: ignore[assignment]
    kind: Literal["live", "summary", "archived"] | None = None  # type: ignore[assignment]
    since: datetime | None = Field(  # type: ignore[assignment]
        None, strict=False, description=SearchQuery.model_fields["since"].description
    )
    until: datetime | None = Field(  # type: ignore[assignment]
        None, strict=False, description=SearchQuery.model_fields["until"].description
    )
    window: Annotated[int, Field(ge=0, le=20), Integral] = Field(
        2, description="Messages before and after each hit."
    )
    limit: Annotated[int, Field(ge=1, le=100), Integral] = 20
    offset: Annotated[int, Field(ge=0, le=10_000), Integral] = 0
    before: Annotated[int, Field(ge=1, le=2**63 - 1), Integral] | None = Field(  # type: ignore[assignment]
        None, description=SearchQuery.model_fields["before"].description
    )
    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("since", "until", mode="before")
    @classmethod
    def _a_time_is_text(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str):
            raise ValueError("a time is a string in ISO 8601, such as 2026-12-01T09:30:00Z")
        return value


@router.post("/search", response={200: SearchOut, **ERRORS}, auth=READ)
def search_messages_by_body(request: ChannelRequest, payload: SearchBody):
    """The same search with its parameters in a JSON body, for a query too long for a URL (up
    to its 1,000 characters, whatever the script) or a client that builds structured requests.
    Answers as `GET /search` does."""
    return _search(request, payload)


def _search(request: ChannelRequest, query: SearchQuery) -> HttpResponse:
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
    response = json_answer(serialize(result, query.limit, query.offset))
    add_server_timing(response, "search", result.total_seconds)  # the service's whole answer
    return response
