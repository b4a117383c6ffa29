"""Server-rendered SVG charts for the console (no chart library, no CDN, no script).

Coordinates are computed here; templates only place the numbers, so message text never reaches
the SVG."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from django.db.models import Count
from django.db.models.functions import TruncHour
from django.utils import timezone

from compression.models import CompressionEvent
from sessions_app.models import Session
from sessions_app.selectors.messages import lifetimes

WIDTH, HEIGHT, PAD = 720, 220, 36
MAX_POINTS = 400


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class Marker:
    x: float
    y: float
    label: str
    outcome: str


@dataclass(frozen=True)
class TokenChart:
    points: str  # SVG polyline points
    threshold_y: float | None
    markers: list[Marker]
    max_tokens: int
    start: datetime | None
    end: datetime | None
    width: int = WIDTH
    height: int = HEIGHT
    pad: int = PAD
    exact: bool = True  # rebuilt from every row (else drawn from the event trail)
    ticks: tuple[Tick, ...] = ()  # times along the x axis
    threshold: int = 0
    outcomes: tuple[str, ...] = ()  # the kinds of marker shown, for the legend


def live_tokens_series(session: Session) -> list[tuple[datetime, int]]:
    """Live tokens over time, rebuilt exactly from the rows: a row counts from its creation until
    it was archived or rolled back."""
    changes: list[tuple[datetime, int]] = []
    for created, archived, rolled_back, tokens in lifetimes(session):
        changes.append((created, tokens))
        ended = archived or rolled_back
        if ended is not None:
            changes.append((ended, -tokens))
    changes.sort(key=lambda change: change[0])
    series, total = [], 0
    for when, delta in changes:
        total += delta
        series.append((when, total))
    if len(series) > MAX_POINTS:  # keep the shape: every n-th point plus every local extreme
        step = len(series) / MAX_POINTS
        keep = {int(i * step) for i in range(MAX_POINTS)} | {len(series) - 1}
        series = [p for i, p in enumerate(series) if i in keep]
    return series


# Up to this many rows the chart is rebuilt exactly from them; beyond, from the event trail
# (a bounded number of points), so the page's cost does not grow with the session.
EXACT_SERIES_ROWS = 10_000
EVENT_POINTS = 200


def events_series(session: Session) -> list[tuple[datetime, int]]:
    """Live tokens over time from what the trail recorded: before and after each of the newest
    compressions and resets, what each decision saw, and the session's size now. Between those
    points the line is straight, where the exact series steps with every append."""
    events = (
        CompressionEvent.objects.filter(session=session, tokens_before__isnull=False)
        .order_by("-created_at")
        .values("created_at", "last_at", "duration_ms", "tokens_before", "tokens_after")[
            :EVENT_POINTS
        ]
    )
    series = [(session.created_at, 0), (timezone.now(), session.live_tokens)]
    for e in events:
        before = cast(int, e["tokens_before"])  # not null: filtered above
        if e["tokens_after"] is not None:
            started = e["created_at"] - timedelta(milliseconds=e["duration_ms"] or 0)
            series += [(started, before), (e["created_at"], e["tokens_after"])]
        else:
            series.append((e["last_at"] or e["created_at"], before))
    return sorted(series, key=lambda point: point[0])


def token_chart(session: Session, threshold: int) -> TokenChart:
    exact = session.total_messages <= EXACT_SERIES_ROWS
    series = live_tokens_series(session) if exact else events_series(session)
    events = list(
        CompressionEvent.objects.filter(
            session=session, outcome__in=("compressed", "fallback", "reset")
        ).order_by("-created_at")[:EVENT_POINTS]
    )[::-1]
    if not series:
        return TokenChart("", None, [], 0, None, None)
    start, end = series[0][0], series[-1][0]
    span = max((end - start).total_seconds(), 1.0)
    top = max(max(v for _, v in series), threshold) * 1.1 or 1

    def x(when: datetime) -> float:
        return round(PAD + (WIDTH - 2 * PAD) * (when - start).total_seconds() / span, 1)

    def y(value: float) -> float:
        return round(HEIGHT - PAD - (HEIGHT - 2 * PAD) * value / top, 1)

    points = " ".join(f"{x(w)},{y(v)}" for w, v in series)
    markers = []
    for event in events:
        if event.tokens_before and event.tokens_after is not None:
            saved = 1 - event.tokens_after / event.tokens_before
            label = f"{event.get_trigger_display()}: {event.tokens_before:,} → "
            label += f"{event.tokens_after:,} tokens (saved {saved:.0%})"
        else:
            label = event.get_trigger_display()
        if event.outcome == "reset":
            label = f"reset ({event.get_trigger_display()}): {event.reason}"
        markers.append(
            Marker(
                x(min(max(event.created_at, start), end)),
                y(event.tokens_after or 0),
                label,
                event.outcome,
            )
        )
    return TokenChart(
        points,
        y(threshold),
        markers,
        int(top),
        start,
        end,
        exact=exact,
        ticks=time_ticks(start, end, x),
        threshold=threshold,
        outcomes=tuple(o for o in MARKER_OUTCOMES if any(m.outcome == o for m in markers)),
    )


MARKER_OUTCOMES = ("compressed", "fallback", "reset")
TICKS = 5


def time_ticks(start: datetime, end: datetime, x) -> tuple[Tick, ...]:
    """Up to five times spread along the axis, each told as finely as the span needs: the time
    of day within a day, the day and time within a week, the date beyond."""
    span = (end - start).total_seconds()
    if span < 1:  # the axis is at least a second long (token_chart): one time, at its start
        return (Tick(x(start), f"{timezone.localtime(start):%H:%M:%S}"),)
    if span <= 3_600:
        shape = "%H:%M:%S"
    elif span <= 86_400:
        shape = "%H:%M"
    else:
        shape = "%m-%d %H:%M" if span <= 7 * 86_400 else "%Y-%m-%d"
    moments = [start + (end - start) * n / (TICKS - 1) for n in range(TICKS)]
    return tuple(Tick(x(m), f"{timezone.localtime(m):{shape}}") for m in moments)


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    height: float
    label: str
    css: str


OUTCOMES = ("compressed", "fallback", "failed")
# Triggers as an operator thinks of them; the stacking order of the by-trigger chart.
TRIGGER_GROUPS = {
    "threshold": ("threshold_pre", "threshold_post", "preflight"),
    "hygiene": ("hygiene",),
    "idle": ("idle",),
    "manual": (
        "manual_api",
        "manual_cli",
        "manual_channel",
        "manual_acp",
        "manual_admin",
    ),
}
TRIGGER_GROUP = {t: group for group, ts in TRIGGER_GROUPS.items() for t in ts}
GROUPS = (*TRIGGER_GROUPS, "other")  # other: model errors, plugins, exhaustion, server paths


def hourly_counts(hours: int = 24) -> list[dict]:
    """Compressions of the last ``hours`` counted by hour, outcome and trigger: one query that
    both charts of the dashboard read."""
    since = timezone.now() - timedelta(hours=hours)
    return list(
        CompressionEvent.objects.filter(created_at__gte=since, outcome__in=OUTCOMES)
        .annotate(hour=TruncHour("created_at"))
        .values("hour", "outcome", "trigger")
        .annotate(n=Count("id"))
    )


def hourly_compressions(
    hours: int = 24, by: str = "outcome", rows: list[dict] | None = None
) -> tuple[list[Bar], int, list[Tick]]:
    """Compressions per hour over the last ``hours``, one bar segment per outcome (``by``
    "outcome") or per kind of trigger ("trigger"); the x-axis ticks (every sixth hour, UTC).
    ``rows``: ``hourly_counts(hours)``, when already read."""
    if rows is None:
        rows = hourly_counts(hours)
    per_hour: dict[datetime, dict[str, int]] = {}
    for row in rows:
        key = row["outcome"] if by == "outcome" else TRIGGER_GROUP.get(row["trigger"], "other")
        per_hour.setdefault(row["hour"], {}).setdefault(key, 0)
        per_hour[row["hour"]][key] += row["n"]
    top = max((sum(v.values()) for v in per_hour.values()), default=0) or 1
    first = (timezone.now() - timedelta(hours=hours - 1)).replace(minute=0, second=0, microsecond=0)
    slot = (WIDTH - 2 * PAD) / hours
    bars = []
    ticks = [
        Tick(round(PAD + i * slot + slot / 2, 1), f"{first + timedelta(hours=i):%H}:00")
        for i in range(0, hours, 6)
    ]
    for i in range(hours):
        hour = first + timedelta(hours=i)
        counts = per_hour.get(hour, {})
        base: float = HEIGHT - PAD
        for key in OUTCOMES if by == "outcome" else GROUPS:
            n = counts.get(key, 0)
            if not n:
                continue
            h = (HEIGHT - 2 * PAD) * n / top
            base -= h
            bars.append(
                Bar(
                    round(PAD + i * slot + 1, 1),
                    round(base, 1),
                    round(h, 1),
                    f"{hour:%H}:00 — {n} {key}",
                    f"{by}-{key}",
                )
            )
    return bars, top, ticks
