from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID


@dataclass(frozen=True)
class Filters:
    """What a search is limited to. ``channel_id`` is set for gateway keys, never by the user."""

    session_id: UUID | None = None
    channel_id: int | None = None
    role: str | None = None
    kind: str | None = None  # live | summary | archived
    since: datetime | None = None
    until: datetime | None = None
    include_rolled_back: bool = False  # operators only
    scan_rows: int = 200_000  # the bounded scan looks at most at this many newest rows
    rank_window: int = 2_000  # BM25 ranks at most this many newest matches
