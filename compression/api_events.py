"""``GET /api/v1/sessions/{id}/events``: a session's compression trail, for gateways and the
Hermes plugin (the console and the admin show the same rows)."""

from __future__ import annotations

from datetime import datetime

from ninja import Query, Router, Schema
from pydantic import BaseModel, ConfigDict, Field

from compression.events import events_page
from compression.models import CompressionEvent
from sessions_app.api.auth import READ, ChannelRequest
from sessions_app.api.schemas import ERRORS, only_declared
from sessions_app.services import get_session_for_channel

router = Router(tags=["compression"])


class EventListQuery(BaseModel):  # not a Schema: see search.api.SearchQuery
    before: int = Field(  # type: ignore[assignment]  # optional, not nullable (a query string)
        None,
        ge=1,
        le=2**63 - 1,
        description="Only events older than this event id: `next_before` of the previous page.",
    )
    limit: int = Field(50, ge=1, le=200)
    decisions: bool = Field(
        False,
        description="Also the triggers' decisions on appends (`skipped`, `locked`; a repeated "
        "decision is one event with `repeats`). Without it, what compressed, fell back, failed, "
        "pruned, reset or changed nothing.",
    )
    model_config = ConfigDict(extra="forbid")


class ScoreOut(Schema):
    """A written summary's score and what was masked on its way out (compression.engine.retention,
    compression.redaction); null where they do not apply."""

    retention: float | None = Field(
        None,
        description="A written summary's score: the share of the replaced span's salient items "
        "(identifiers, paths, URLs, numbers with units, versions, error codes, quoted strings, "
        "recurring CJK terms) that the summary, head and tail still carry (0-1).",
    )
    salient_items: int | None = Field(None, description="How many salient items were scored.")
    salient_kept: int | None = Field(None, description="How many of them were carried.")
    salient_missed: list[str] | None = Field(
        None, description="The items missed, most salient first (at most 25)."
    )
    below_floor: bool | None = Field(
        None, description="Scored under compression.scoring.floor: worth compressing again."
    )
    redactions: dict[str, int] | None = Field(
        None, description="Secrets masked in what left for compaction, by kind (never values)."
    )


class EventOut(ScoreOut):
    id: int
    trigger: str = Field(description="What started it: " + ", ".join(CompressionEvent.Trigger))
    outcome: str = Field(description="What came of it: " + ", ".join(CompressionEvent.Outcome))
    path: str = Field(description="Which path ran: " + ", ".join(CompressionEvent.Path))
    reason: str
    error: str = Field(description="Why it failed, or the model error a fallback followed.")
    tokens_before: int | None
    tokens_after: int | None
    threshold_tokens: int | None
    messages_before: int | None
    messages_after: int | None
    rows_archived: int
    summary_message_id: int | None = Field(description="The summary it wrote, if any.")
    summary_model: str
    duration_ms: int | None
    attempt: int
    repeats: int = Field(description="How many times a repeated decision happened.")
    created_at: datetime
    last_at: datetime = Field(description="When it last happened (a repeated decision).")

    @staticmethod
    def of(event: CompressionEvent) -> dict:
        return {
            **{name: getattr(event, name) for name in EventOut.model_fields},
            "repeats": event.repeats or 1,
            "last_at": event.last_at or event.created_at,
        }


class EventPage(Schema):
    items: list[EventOut] = Field(description="Newest first.")
    next_before: int | None = Field(
        description="Pass as `before` for the next (older) page; null at the end."
    )


@router.get("/sessions/{session_id}/events", response={200: EventPage, **ERRORS}, auth=READ)
def list_events(request: ChannelRequest, session_id: str, query: Query[EventListQuery]):
    """The session's compression events, newest first: trigger, outcome, reason, the tokens
    and messages before and after, the summary written and how long it took."""
    only_declared(request, EventListQuery)
    session = get_session_for_channel(request.auth, session_id)
    page, more = events_page(
        session, before=query.before, limit=query.limit, decisions=query.decisions
    )
    return {
        "items": [EventOut.of(e) for e in page],
        "next_before": page[-1].pk if more else None,
    }
