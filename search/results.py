"""The three layers of a hit (SPEC R4): a safely highlighted excerpt, the window of messages
around it, and bookmarks that place the window in the whole conversation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape  # Django's wraps it in a lazy-aware SafeString: same text, slower
from operator import attrgetter
from typing import Annotated

from django.db import DEFAULT_DB_ALIAS, connections
from pydantic import Field

from search.text import fold, search_text
from sessions_app.models import Message

EXCERPT_CHARS = 240
LEAD_CHARS = 300
BOOKMARK_LEAD_CHARS = 80
MAX_SPANS = 50


def _spans(text: str, needles: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where the needles are. A needle that is part of a longer one found in the text is not
    marked on its own: the query ``用Django写`` marks that whole phrase, not also a lone ``用``
    in ``用户`` (its pieces are needles for texts that hold them apart)."""
    folded = fold(text)
    targets = [fold(n) for n in needles]
    present = [t for t in targets if t and t in folded]
    spans: list[tuple[int, int]] = []
    for target in targets:
        if any(target != longer and target in longer for longer in present):
            continue
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


def _lead(message: Message | Nearby, limit: int) -> str:
    """The start of a message's text on one line. Only a prefix is flattened: flattening a
    prefix gives a prefix of the flattened whole, so when it is longer than the lead the lead
    is the same (a long tool output is not split into words to show 300 characters of it)."""
    text = search_text(message.content, message.tool_calls)
    flat = " ".join(text[: 4 * limit].split())
    if len(flat) <= limit and len(text) > 4 * limit:
        flat = " ".join(text.split())
    return _cut(flat, limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Nearby:
    """A neighbour of a hit, read as a plain row (the fields a window and a bookmark show)."""

    COLUMNS = (
        "id",
        "position",
        "role",
        "content",
        "tool_calls",
        "active",
        "compressed",
        "is_summary",
        "created_at",
    )
    __slots__ = (*COLUMNS, "key")

    def __init__(self, row: Sequence, start: int = 0) -> None:
        """``row[start:]`` holds the COLUMNS, in order."""
        self.id, self.position, self.role, self.content, self.tool_calls = row[start : start + 5]
        self.active, self.compressed = bool(row[start + 5]), bool(row[start + 6])
        self.is_summary = is_summary = row[start + 7]
        self.key = (self.position, 0 if is_summary else 1, self.id)  # order_key, once
        # Read as text: ISO 8601, with its zone on PostgreSQL and without on SQLite (which
        # stores UTC). Every timestamp leaves here with its zone.
        created = row[start + 8]
        if isinstance(created, str):
            created = datetime.fromisoformat(created)
        if isinstance(created, datetime) and created.tzinfo is None:
            created = created.replace(tzinfo=UTC)
        self.created_at = created

    @property
    def pk(self) -> int:
        return self.id

    @property
    def kind(self) -> str:
        if self.active:
            return Message.Kind.SUMMARY if self.is_summary else Message.Kind.LIVE
        return Message.Kind.ARCHIVED if self.compressed else Message.Kind.ROLLED_BACK


# The API answers with these dataclasses as they are (search.api): a field declared here is
# one of the answer's. Not frozen: a frozen dataclass sets each field through
# object.__setattr__, 4-5 times slower to build, and a page builds a hundred of these.
@dataclass
class WindowRow:
    id: int
    position: int
    role: str
    kind: str
    lead: str
    created_at: datetime
    is_hit: bool


@dataclass
class Bookmark:
    position: int
    of: Annotated[int, Field(description="Messages in the whole conversation.")]
    timestamp: datetime
    role: str
    lead: str


@dataclass
class Bookmarks:
    start: Bookmark
    end: Bookmark


def window_slack(size: int) -> int:
    """How far either side of a hit a window's first read reaches: room for a rolled-back row
    inside the range."""
    return size + 1


def windows(
    hits: list[Message],
    size: int,
    include_rolled_back: bool,
    first_read: dict[int, list[Nearby]] | None = None,
) -> dict[int, list[Message]]:
    """Each hit with ``size`` messages before and after it (rolled-back rows skipped unless
    asked; notices, which are not conversation, always), fetched for all hits in one query: a
    window per hit would be two queries each (``first_read``: the rows within
    ``window_slack(size)`` of each hit, already read with the hits, search.rows.read_page). A
    hit whose range held too few rows to show (a block of rolled-back rows beside it) is read
    again over a range four times as wide, with the others in the same case, until its window
    is full or its session ends: a statement per round, each reading about what it needs, never
    the whole session."""
    if not size:
        return {hit.pk: [hit] for hit in hits}
    out: dict[int, list] = {}
    slack = window_slack(size)
    pending = hits
    while pending:
        short = []
        if first_read is not None:
            read = [first_read.get(hit.pk, []) for hit in pending]
            first_read = None
        else:
            read = _nearby(pending, slack)
        for hit, rows in zip(pending, read, strict=True):
            here, hit_pk, last = order_key(hit), hit.id, hit.position + slack
            visible = sorted(
                (
                    r
                    for r in rows
                    if r.id != hit_pk and (include_rolled_back or r.active or r.compressed)
                ),
                key=attrgetter("key"),
            )
            before = [r for r in visible if r.key < here][-size:]
            after = [r for r in visible if r.key > here][:size]
            more_before = hit.position - slack > 0
            more_after = any(r.position == last for r in rows)
            if (len(before) < size and more_before) or (len(after) < size and more_after):
                short.append(hit)
            else:
                out[hit.pk] = [*before, hit, *after]
        pending, slack = short, slack * 4
    return out


def _nearby(hits: list[Message], slack: int) -> list[list[Nearby]]:
    """The rows within ``slack`` positions of each hit, in one statement."""
    if not hits:
        return []
    # A list of (hit, session, low, high) position ranges joined to the messages, each range
    # an index seek of (session, active, position) in msg_live_idx (naming both values of
    # ``active`` lets it seek the positions too, not read the whole session). It plans faster
    # than a UNION ALL of one SELECT per hit (on PostgreSQL 1.7 against 2.4 ms for 20 hits) and
    # rows come back as plain tuples: building model instances for every neighbour cost more
    # than the query.
    db = connections[DEFAULT_DB_ALIAS]
    session_field = Message._meta.get_field("session")
    params: list = []
    for n, hit in enumerate(hits):
        session = session_field.get_db_prep_value(hit.session_id, db)
        params += [n, session, max(0, hit.position - slack), hit.position + slack]
    ranges = ", ".join(["(%s, %s, %s, %s)"] * len(hits))
    columns, join = nearby_join("r.session_id", "r.low", "r.high")
    sql = (
        f"WITH r(n, session_id, low, high) AS (VALUES {ranges}) "
        f"SELECT r.n, {', '.join(columns)} FROM r {join}"
    )
    nearby: list[list[Nearby]] = [[] for _ in hits]
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        for row in cursor.fetchall():
            nearby[row[0]].append(Nearby(row, 1))
    return nearby


def nearby_join(session: str, low: str, high: str) -> tuple[list[str], str]:
    """The select list (Nearby's COLUMNS) and the join that read, for each row of a statement's
    ranges, the rows of its session (``session``, an expression of the range) from position
    ``low`` to ``high``, notices left out: one index seek of (session, active, position) in
    msg_live_idx per range (naming both values of ``active`` lets it seek the positions too,
    not read the whole session)."""
    # The time as text, which Nearby parses with datetime.fromisoformat (C): read as a
    # timestamp, every row went through a parser written in Python (Django's regex one on
    # SQLite, Django's time-zone loader on PostgreSQL), a quarter of this call's time there.
    columns = [f"m.{name}" for name in Nearby.COLUMNS]
    columns[-1] = "CAST(m.created_at AS TEXT)"
    table = Message._meta.db_table
    condition = (
        f"m.session_id = {session} AND m.active IN (FALSE, TRUE) "
        f"AND m.position BETWEEN {low} AND {high} AND NOT m.is_notice"
    )
    if connections[DEFAULT_DB_ALIAS].vendor == "postgresql":
        # As a plain join PostgreSQL may read the whole session and merge (it did, for a
        # session holding most rows); a LATERAL subquery it cannot flatten (OFFSET 0) is
        # sought once per range.
        inner = ", ".join([*columns[:-1], f"{columns[-1]} AS created_at"])
        lateral = f"(SELECT {inner} FROM {table} m WHERE {condition} OFFSET 0) m"
        return [f"m.{name}" for name in Nearby.COLUMNS], f"CROSS JOIN LATERAL {lateral}"
    return columns, f"JOIN {table} m ON {condition}"  # SQLite's plan for it: that nested loop


def order_key(row: Message | Nearby) -> tuple[int, int, int]:
    """Conversation order: a summary shares the position of the first original it replaced and
    comes before the originals it stands for."""
    return (row.position, 0 if row.is_summary else 1, row.id)


def window_rows(rows: list[Message], hit: Message) -> list[WindowRow]:
    hit_id = hit.id  # ``pk`` is a property that looks the primary key up, on every row
    return [
        WindowRow(
            id=row.id,
            position=row.position,
            role=row.role,
            kind=row.kind,
            lead=_lead(row, LEAD_CHARS),
            created_at=row.created_at,
            is_hit=row.id == hit_id,
        )
        for row in rows
    ]


def bookmarks(window: list[WindowRow], total: int) -> Bookmarks:
    """Bookmarks of a window's first and last rows. Their shorter lead is cut from the
    window's (a cut of a cut at a longer length is the same cut): no message is read twice."""

    def mark(row: WindowRow) -> Bookmark:
        return Bookmark(
            position=row.position,
            of=total,
            timestamp=row.created_at,
            role=row.role,
            lead=_cut(row.lead, BOOKMARK_LEAD_CHARS),
        )

    return Bookmarks(start=mark(window[0]), end=mark(window[-1]))
