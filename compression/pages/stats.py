"""What the dashboard reads at a glance: the last day's compressions in numbers, the sessions
nearest (or over) their threshold, and each channel's share. Every query is bounded: aggregates,
or the few largest sessions."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, F, Q, Sum

from compression.models import CompressionEvent
from compression.policy.guards import DONE
from compression.policy.threshold import config_overrides, table_overrides, threshold_for
from core.config import get_config
from sessions_app.models import Channel, Session
from sessions_app.selectors.sessions import in_the_live_set

LATENCY_SAMPLE = 5_000  # the newest compressions whose durations make the latency figures
SESSIONS_CHECKED = 25


@dataclass(frozen=True)
class Day:
    compressions: int
    fallbacks: int
    failures: int
    tokens_saved: int
    latency_p50_ms: int | None
    latency_p95_ms: int | None

    @property
    def fallback_rate(self) -> float | None:
        return self.fallbacks / self.compressions if self.compressions else None


def last_day(since: datetime) -> Day:
    recent = CompressionEvent.objects.filter(created_at__gte=since)
    counts = recent.aggregate(
        done=Count("id", filter=Q(outcome__in=DONE)),
        fallbacks=Count("id", filter=Q(outcome="fallback")),
        failures=Count("id", filter=Q(outcome="failed")),
        saved=Sum(
            F("tokens_before") - F("tokens_after"),
            filter=Q(outcome__in=DONE, tokens_before__isnull=False, tokens_after__isnull=False),
        ),
    )
    durations = sorted(
        ms
        for ms in recent.filter(outcome__in=DONE, duration_ms__isnull=False)
        .order_by("-created_at")
        .values_list("duration_ms", flat=True)[:LATENCY_SAMPLE]
        if ms is not None  # as the filter says: for the type checker
    )
    p95 = None
    if len(durations) >= 2:
        p95 = int(statistics.quantiles(durations, n=20)[-1])
    elif durations:
        p95 = durations[0]
    return Day(
        counts["done"],
        counts["fallbacks"],
        counts["failures"],
        max(0, counts["saved"] or 0),
        int(statistics.median(durations)) if durations else None,
        p95,
    )


SCORE_BANDS = 10  # 0-10%, 10-20%, ... 90-100% of salient items kept


@dataclass(frozen=True)
class Band:
    low: int  # percent
    high: int
    model: int  # written summaries in the band: the model's...
    fallback: int  # ...and local fallbacks'
    width_model: int  # bar widths, percent of the widest band
    width_fallback: int


@dataclass(frozen=True)
class Scores:
    bands: list[Band]
    scored: int
    below_floor: int
    floor: float
    median_model: float | None
    median_fallback: float | None


def scores(since: datetime) -> Scores:
    """The distribution of summary scores (compression.engine.retention) over written
    summaries since ``since``: one grouped query, counted per band by the database."""
    bands = {
        f"b{i}": Count(
            "id",
            filter=Q(retention__gte=i / SCORE_BANDS)
            & (Q(retention__lt=(i + 1) / SCORE_BANDS) if i < SCORE_BANDS - 1 else Q()),
        )
        for i in range(SCORE_BANDS)
    }
    rows = {
        row["outcome"]: row
        for row in CompressionEvent.objects.filter(
            created_at__gte=since, outcome__in=DONE, retention__isnull=False
        )
        .order_by()
        .values("outcome")
        .annotate(n=Count("id"), low=Count("id", filter=Q(below_floor=True)), **bands)
    }
    model, local = rows.get("compressed", {}), rows.get("fallback", {})
    counts = [(model.get(f"b{i}", 0), local.get(f"b{i}", 0)) for i in range(SCORE_BANDS)]
    top = max([1, *(max(pair) for pair in counts)])
    return Scores(
        bands=[
            Band(i * 10, (i + 1) * 10, m, f, m * 100 // top, f * 100 // top)
            for i, (m, f) in enumerate(counts)
        ],
        scored=sum(r["n"] for r in rows.values()),
        below_floor=sum(r["low"] for r in rows.values()),
        floor=get_config().compression.scoring.floor,
        median_model=_median_score(since, "compressed") if model else None,
        median_fallback=_median_score(since, "fallback") if local else None,
    )


def _median_score(since: datetime, outcome: str) -> float | None:
    values = list(
        CompressionEvent.objects.filter(
            created_at__gte=since, outcome=outcome, retention__isnull=False
        )
        .order_by("-created_at")
        .values_list("retention", flat=True)[:LATENCY_SAMPLE]
    )
    return statistics.median(v for v in values if v is not None) if values else None


@dataclass(frozen=True)
class Size:
    session: Session
    threshold: int
    percent: int

    @property
    def over(self) -> bool:
        return self.percent >= 100


def nearest_threshold(limit: int = 10) -> list[Size]:
    """The largest sessions by live tokens, with their real share of their own threshold (over
    100% when a guard or a failing summariser holds them back)."""
    largest = in_the_live_set().select_related("channel").order_by("-live_tokens")
    overrides = config_overrides(get_config().compression) + table_overrides()  # read once
    sizes = []
    for session in largest[:SESSIONS_CHECKED]:
        threshold = threshold_for(session, overrides).tokens
        sizes.append(Size(session, threshold, round(100 * session.live_tokens / max(1, threshold))))
    return sorted(sizes, key=lambda s: -s.percent)[:limit]


def per_channel(since: datetime) -> list[dict]:
    """Each channel (the 50 largest): its sessions, their live tokens, its compressions."""
    channels = list(
        Channel.objects.annotate(
            session_count=Count("sessions", distinct=True), live_tokens=Sum("sessions__live_tokens")
        )
        .order_by("-live_tokens", "name")
        .values("pk", "name", "session_count", "live_tokens")[:50]
    )
    done = dict(
        CompressionEvent.objects.filter(created_at__gte=since, outcome__in=DONE)
        .values_list("session__channel")
        .annotate(n=Count("id"))
    )
    for channel in channels:
        channel["compressions"] = done.get(channel["pk"], 0)
        channel["live_tokens"] = channel["live_tokens"] or 0
    return channels
