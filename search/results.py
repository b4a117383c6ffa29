"""The three layers of a hit (SPEC R4): a safely highlighted excerpt, the window of messages
around it, and bookmarks that place the window in the whole conversation."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils.html import escape

from search.text import fold, search_text
from sessions_app.models import Message

EXCERPT_CHARS = 240
LEAD_CHARS = 300
BOOKMARK_LEAD_CHARS = 80
MAX_SPANS = 50


def _spans(text: str, needles: tuple[str, ...]) -> list[tuple[int, int]]:
    folded = fold(text)
    spans: list[tuple[int, int]] = []
    for needle in needles:
        target = fold(needle)
        if len(target) < 2 and target.isascii():
            continue  # a lone Latin letter would light up every word
        start = folded.find(target)
        while start != -1 and len(spans) < MAX_SPANS:
            spans.append((start, start + len(target)))
            start = folded.find(target, start + len(target))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def excerpt_html(text: str, needles: tuple[str, ...], width: int = EXCERPT_CHARS) -> str:
    """An excerpt with matches in ``<mark>``. Every piece of message text is escaped before any
    tag is added, so message text never becomes markup (SPEC R7)."""
    spans = _spans(text, needles)
    if spans:
        first_start, first_end = spans[0]
        start = max(0, first_start - width // 3)
        end = min(len(text), max(start + width, first_end))
    else:
        start, end = 0, min(len(text), width)
    pieces = ["…" if start > 0 else ""]
    cursor = start
    for span_start, span_end in spans:
        if span_end <= start or span_start >= end:
            continue
        span_start, span_end = max(span_start, start), min(span_end, end)
        pieces.append(escape(text[cursor:span_start]))
        pieces.append(f"<mark>{escape(text[span_start:span_end])}</mark>")
        cursor = span_end
    pieces.append(escape(text[cursor:end]))
    pieces.append("…" if end < len(text) else "")
    return "".join(pieces)


def _lead(message: Message, limit: int) -> str:
    text = search_text(message.content, message.tool_calls)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class WindowRow:
    id: int
    position: int
    role: str
    kind: str
    lead: str
    created_at: datetime
    is_hit: bool


@dataclass(frozen=True)
class Bookmark:
    position: int
    of: int
    timestamp: datetime
    role: str
    lead: str


def window(message: Message, size: int, include_rolled_back: bool) -> list[Message]:
    rows = Message.objects.filter(session_id=message.session_id)
    if not include_rolled_back:
        rows = rows.exclude(active=False, compressed=False)
    rows = rows.defer("content_parts", "extra")
    before = list(rows.filter(position__lt=message.position).order_by("-position")[:size])
    after = list(rows.filter(position__gt=message.position).order_by("position")[:size])
    return [*reversed(before), message, *after]


def window_rows(rows: list[Message], hit: Message) -> list[WindowRow]:
    return [
        WindowRow(
            id=row.pk,
            position=row.position,
            role=row.role,
            kind=row.kind,
            lead=_lead(row, LEAD_CHARS),
            created_at=row.created_at,
            is_hit=row.pk == hit.pk,
        )
        for row in rows
    ]


def bookmarks(rows: list[Message], total: int) -> tuple[Bookmark, Bookmark]:
    def mark(row: Message) -> Bookmark:
        return Bookmark(
            position=row.position,
            of=total,
            timestamp=row.created_at,
            role=row.role,
            lead=_lead(row, BOOKMARK_LEAD_CHARS),
        )

    return mark(rows[0]), mark(rows[-1])
