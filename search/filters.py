from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
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
    # None: the configured search.scan_rows / search.rank_window.
    scan_rows: int | None = None  # the scan reads the newest rows this many at a time
    rank_window: int | None = None  # a lookup reads this many newest matches first (search.ranked)
    scan_seconds: float | None = None  # the scan goes on to older chunks for this long
    before_id: int | None = None  # only messages older than this one (a scan's continuation)

    @property
    def rank_window_size(self) -> int:
        """``rank_window`` of resolved filters (the backends are handed only those)."""
        if self.rank_window is None:
            raise ValueError("unresolved Filters: the backends need Filters.resolved()")
        return self.rank_window

    def resolved(self) -> Filters:
        from dataclasses import replace

        from core.config import get_config

        config = get_config().search
        return replace(
            self,
            scan_rows=self.scan_rows or config.scan_rows,
            rank_window=self.rank_window or config.rank_window,
            scan_seconds=self.scan_seconds
            if self.scan_seconds is not None
            else config.scan_seconds,
        )


def storable_time(value: datetime | None) -> datetime | None:
    """A time bound the database can compare, in UTC: within years 1-9999 once moved there
    (year 1 at +01:00 is year 0 in UTC, which no backend can store; raises ValueError saying
    so), and with no offset left for the database to read (PostgreSQL refuses offsets beyond
    ±15:59, which ISO 8601 and Python allow). A time without a zone is UTC."""
    if value is None:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)  # no zone given: UTC, as documented
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(
            f"{value.isoformat()} is outside the years 1-9999 once converted to UTC"
        ) from None
