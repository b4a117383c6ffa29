"""``GET /metrics``: Prometheus's text format, from prometheus_client.

Two sources. What a process observes itself (request and search latency) comes from the
instruments in ``core.instruments`` (added up across the web processes when
``PROMETHEUS_MULTIPROC_DIR`` is set). What lives in the database -- compressions and their
durations and tokens, sessions held back by a guard, the task queue, sizes -- is read at scrape
time by ``DatabaseCollector`` with a few aggregate queries: compressions run in the worker
process, possibly on another host, and the event trail already records each one with its trigger,
outcome, tokens and duration, so reading it gives every web process the same answer without a
second bookkeeping path that could disagree with the trail. Each part's reading is kept for 100
times what it cost (``Part``): a part that costs 2 ms is read on every scrape, one that costs a
second at size is kept for 100 s, so scrapes never take more than about 1% of the process.

Access: with ``server.metrics_token`` set, a bearer token; without, loopback clients only.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.db import connection
from django.db.models import Count, Q, Sum
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from compression.models import CompressionEvent
from core import instruments  # noqa: F401 - registers the in-process instruments
from core.config import get_config
from sessions_app.models import Session

logger = logging.getLogger(__name__)

LOOPBACK = frozenset({"127.0.0.1", "::1", "::ffff:127.0.0.1"})
# A request that came through a proxy has the proxy's address, loopback if it runs on this host:
# it is not a local client.
PROXY_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")

# Summary (compression) durations, seconds: a local fallback is milliseconds, a model call with
# retries minutes.
SUMMARY_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
# Outcomes that wrote (or tried to write) a summary: their durations are summary latency.
TIMED_OUTCOMES = (
    CompressionEvent.Outcome.COMPRESSED,
    CompressionEvent.Outcome.FALLBACK,
    CompressionEvent.Outcome.FAILED,
    CompressionEvent.Outcome.INEFFECTIVE,
)
WRITTEN = (CompressionEvent.Outcome.COMPRESSED, CompressionEvent.Outcome.FALLBACK)

COST_FACTOR = 100  # a reading is kept 100 times what it cost: at most ~1% of a process
MAX_KEEP_SECONDS = 900.0


class Part:
    """One group of database metrics and how long its last reading may be served again."""

    def __init__(
        self, name: str, read: Callable[[], list[Metric]], min_keep_seconds: float = 0.0
    ) -> None:
        self.name = name
        self.read = read
        self.min_keep_seconds = min_keep_seconds
        self.metrics: list[Metric] = []
        self.cost = 0.0
        self.until = 0.0
        self.lock = threading.Lock()

    def collect(self) -> list[Metric]:
        with self.lock:
            now = time.monotonic()
            if now >= self.until:
                started = time.perf_counter()
                try:
                    self.metrics = self.read()
                except Exception:
                    # One part failing (the broker away, a table missing) must not fail the page;
                    # its families are missing until it reads again, and the log says why.
                    logger.exception("metrics: reading %s failed", self.name)
                    self.metrics = []
                self.cost = time.perf_counter() - started
                keep = max(self.min_keep_seconds, self.cost * COST_FACTOR)
                self.until = time.monotonic() + min(MAX_KEEP_SECONDS, keep)
            return self.metrics

    def forget(self) -> None:
        with self.lock:
            self.until = 0.0


def _compressions() -> list[Metric]:
    """Events by trigger, outcome and path (a repeated decision counts each repeat), the tokens
    before and after written summaries, fallbacks and failures: one grouped query."""
    events = CounterMetricFamily(
        "hermes_compression_events",
        "Compression events by trigger, outcome and path: each compression attempt, and each "
        "trigger decision not to compress (skipped, locked), repeats included.",
        labels=["trigger", "outcome", "path"],
    )
    before = CounterMetricFamily(
        "hermes_compression_tokens_before",
        "Live tokens of sessions before the compressions that wrote a summary, by trigger.",
        labels=["trigger"],
    )
    after = CounterMetricFamily(
        "hermes_compression_tokens_after",
        "Live tokens of sessions after the compressions that wrote a summary, by trigger.",
        labels=["trigger"],
    )
    fallbacks = CounterMetricFamily(
        "hermes_compression_fallbacks",
        "Compressions that wrote the local fallback summary (the model failed or none is set).",
        labels=["trigger"],
    )
    failures = CounterMetricFamily(
        "hermes_compression_failures", "Compressions that failed, by trigger.", labels=["trigger"]
    )
    rows = (
        CompressionEvent.objects.order_by()
        .values("trigger", "outcome", "path")
        .annotate(
            n=Coalesce(Sum(Coalesce("repeats", 1)), 0),
            before=Coalesce(Sum("tokens_before"), 0),
            after=Coalesce(Sum("tokens_after"), 0),
        )
    )
    tokens: dict[str, list[int]] = {}
    by_outcome: dict[tuple[str, str], int] = {}
    for row in rows:
        events.add_metric([row["trigger"], row["outcome"], row["path"]], row["n"])
        key = (row["trigger"], row["outcome"])
        by_outcome[key] = by_outcome.get(key, 0) + row["n"]
        if row["outcome"] in WRITTEN:
            sums = tokens.setdefault(row["trigger"], [0, 0])
            sums[0] += row["before"]
            sums[1] += row["after"]
    for trigger, (b, a) in sorted(tokens.items()):
        before.add_metric([trigger], b)
        after.add_metric([trigger], a)
    # Every trigger, 0 included: an alert on "any failure" needs a series before the first one.
    for trigger in CompressionEvent.Trigger.values:
        fallbacks.add_metric([trigger], by_outcome.get((trigger, "fallback"), 0))
        failures.add_metric([trigger], by_outcome.get((trigger, "failed"), 0))
    return [events, before, after, fallbacks, failures]


def _durations() -> list[Metric]:
    """Summary latency: the recorded duration of every compression attempt, as a histogram by
    outcome, counted per bucket by the database (one grouped query)."""
    family = HistogramMetricFamily(
        "hermes_compression_duration_seconds",
        "Time one compression attempt took (selection, summary model call or local fallback, "
        "write-back), by outcome; read from the event trail, so the worker's runs count.",
        labels=["outcome"],
    )
    counts = {
        f"le{i}": Count("id", filter=Q(duration_ms__lte=int(bound * 1000)))
        for i, bound in enumerate(SUMMARY_BUCKETS)
    }
    rows = (
        CompressionEvent.objects.filter(outcome__in=TIMED_OUTCOMES, duration_ms__isnull=False)
        .order_by()
        .values("outcome")
        .annotate(total=Count("id"), ms=Coalesce(Sum("duration_ms"), 0), **counts)
    )
    for row in rows:
        buckets = [(str(float(b)), row[f"le{i}"]) for i, b in enumerate(SUMMARY_BUCKETS)]
        buckets.append(("+Inf", row["total"]))
        family.add_metric([row["outcome"]], buckets, row["ms"] / 1000)
    return [family]


RETENTION_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)


def _retention() -> list[Metric]:
    """Summary scores: the share of its span's salient items each written summary kept
    (compression.engine.retention), by outcome -- a local fallback's against a model's -- and
    how many fell under compression.scoring.floor. One grouped query."""
    family = HistogramMetricFamily(
        "hermes_summary_retention_ratio",
        "Share of the replaced span's salient items (identifiers, paths, URLs, numbers, codes, "
        "recurring CJK terms) a written summary, its head and its tail still carry, by outcome.",
        labels=["outcome"],
    )
    flagged = CounterMetricFamily(
        "hermes_summary_below_floor",
        "Written summaries scored under compression.scoring.floor, by outcome.",
        labels=["outcome"],
    )
    counts = {
        f"le{i}": Count("id", filter=Q(retention__lte=bound))
        for i, bound in enumerate(RETENTION_BUCKETS)
    }
    rows = (
        CompressionEvent.objects.filter(outcome__in=WRITTEN, retention__isnull=False)
        .order_by()
        .values("outcome")
        .annotate(
            total=Count("id"),
            sum=Coalesce(Sum("retention"), 0.0),
            low=Count("id", filter=Q(below_floor=True)),
            **counts,
        )
    )
    seen = set()
    for row in rows:
        buckets = [(str(float(b)), row[f"le{i}"]) for i, b in enumerate(RETENTION_BUCKETS)]
        buckets.append(("+Inf", row["total"]))
        family.add_metric([row["outcome"]], buckets, row["sum"])
        flagged.add_metric([row["outcome"]], row["low"])
        seen.add(row["outcome"])
    for outcome in WRITTEN:  # a series before the first one: an alert can watch it
        if outcome not in seen:
            flagged.add_metric([outcome], 0)
    return [family, flagged]


def _guards() -> list[Metric]:
    """Sessions held back right now, by what holds them: one pass over the sessions table."""
    from compression.policy.triggers import AUTO_QUEUE_STALE

    now = timezone.now()
    held = GaugeMetricFamily(
        "hermes_sessions_held",
        "Sessions held back now: cooldown (after a failed summary), thrash_lock (anti-thrash), "
        "compressing (a compression has claimed it), queued (an automatic compression waits).",
        labels=["state"],
    )
    counts = Session.objects.aggregate(
        sessions=Count("id"),
        cooldown=Count("id", filter=Q(cooldown_until__gt=now)),
        thrash_lock=Count("id", filter=Q(thrash_lock_until__gt=now)),
        compressing=Count("id", filter=Q(compressing_until__gt=now)),
        queued=Count("id", filter=Q(auto_queued_at__gt=now - AUTO_QUEUE_STALE)),
    )
    for state in ("cooldown", "thrash_lock", "compressing", "queued"):
        held.add_metric([state], counts[state])
    total = GaugeMetricFamily("hermes_sessions", "Sessions in the store (live and archived).")
    total.add_metric([], counts["sessions"])
    return [held, total]


def _queue() -> list[Metric]:
    """The django-q2 queue: tasks waiting, taken but not finished (ORM broker), and the age of
    the oldest waiting one (from the enqueue time each task package carries)."""
    from django_q.brokers import get_broker
    from django_q.conf import Conf
    from django_q.models import OrmQ
    from django_q.signing import SignedPackage

    depth = GaugeMetricFamily(
        "hermes_task_queue_depth", "Background tasks waiting for a worker.", labels=["broker"]
    )
    oldest = GaugeMetricFamily(
        "hermes_task_queue_oldest_age_seconds",
        "Age of the oldest background task still waiting (0 when none waits).",
        labels=["broker"],
    )
    raw: Any = None
    if Conf.ORM:  # the ORM broker: a table in this database
        # Read here rather than through the broker, whose connection helper closes the
        # request's database connection when it is past its age (at once with the default 0).
        kind, now = "orm", timezone.now()
        tasks = OrmQ.objects.using(Conf.ORM).filter(key=Conf.CLUSTER_NAME)
        counts = tasks.aggregate(
            waiting=Count("id", filter=Q(lock__lte=now)), taken=Count("id", filter=Q(lock__gt=now))
        )
        depth.add_metric([kind], counts["waiting"])
        taken = GaugeMetricFamily(
            "hermes_task_queue_in_progress",
            "Background tasks a worker has taken and not finished (ORM broker only).",
            labels=["broker"],
        )
        taken.add_metric([kind], counts["taken"])
        raw = None
        if counts["waiting"]:
            first = tasks.filter(lock__lte=now).order_by("id").values_list("payload", flat=True)
            raw = first.first()
        extra = [taken]
    else:  # Redis: tasks are pushed on the right and taken from the left
        kind, broker = "redis", get_broker()
        depth.add_metric([kind], broker.queue_size() or 0)
        raw, extra = broker.connection.lindex(broker.list_key, 0), []
    age = 0.0
    if raw is not None:
        try:
            started = SignedPackage.loads(raw).get("started")
        except Exception:  # a package another secret key signed: no age, not an error
            started = None
        if started is not None:
            age = max(0.0, (timezone.now() - started).total_seconds())
    oldest.add_metric([kind], age)
    return [depth, oldest, *extra]


def _sizes() -> list[Metric]:
    """The database's size and each table's and index's (SQLite: dbstat, which reads every
    page, hence kept for a while at size; PostgreSQL: the catalogue's sizes, cheap)."""
    database = GaugeMetricFamily("hermes_database_size_bytes", "Size of the database.")
    relations = GaugeMetricFamily(
        "hermes_relation_size_bytes",
        "Size of each table and index (SQLite: the FTS5 indexes' shadow tables by name).",
        labels=["name", "kind"],
    )
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_database_size(current_database())")
            database.add_metric([], cursor.fetchone()[0])
            cursor.execute(
                "SELECT c.relname, c.relkind, pg_relation_size(c.oid) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i', 'm')"
            )
            kinds = {"r": "table", "i": "index", "m": "table"}
            for name, kind, size in cursor.fetchall():
                relations.add_metric([name, kinds[kind]], size)
        else:
            cursor.execute("PRAGMA page_count")
            pages = cursor.fetchone()[0]
            cursor.execute("PRAGMA page_size")
            database.add_metric([], pages * cursor.fetchone()[0])
            cursor.execute(
                "SELECT d.name, COALESCE(m.type, 'table'), d.pgsize FROM dbstat d "
                "LEFT JOIN sqlite_master m ON m.name = d.name WHERE d.aggregate = TRUE"
            )
            for name, kind, size in cursor.fetchall():
                relations.add_metric([name, "index" if kind == "index" else "table"], size)
    return [database, relations]


PARTS = [
    Part("compressions", _compressions),
    Part("durations", _durations),
    Part("retention", _retention),
    Part("guards", _guards),
    Part("queue", _queue),
    # Sizes move slowly, and SQLite's dbstat reads every page: once a minute is plenty.
    Part("sizes", _sizes, min_keep_seconds=60.0),
]


class DatabaseCollector(Collector):
    """Reads the database's metrics at scrape time (each part kept 100 times its cost)."""

    def describe(self) -> Iterable[Metric]:
        return []  # registering must not query the database

    def collect(self) -> Iterator[Metric]:
        cost = GaugeMetricFamily(
            "hermes_metrics_part_seconds",
            "What reading each group of database metrics last cost (the reading is kept for "
            "100 times that; sizes at least 60 s).",
            labels=["part"],
        )
        for part in PARTS:
            yield from part.collect()
            cost.add_metric([part.name], part.cost)
        yield cost


def forget() -> None:
    """Read every part afresh at the next scrape (tests, and after an erasure)."""
    for part in PARTS:
        part.forget()


_DATABASE = CollectorRegistry(auto_describe=False)
_DATABASE.register(DatabaseCollector())


def _in_process() -> CollectorRegistry:
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    from prometheus_client import multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry


def _refuse(status: int, detail: str) -> HttpResponse:
    response = HttpResponse(
        json.dumps({"detail": detail}), status=status, content_type="application/json"
    )
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="hermes-metrics"'
    return response


def _denied(request: HttpRequest) -> HttpResponse | None:
    token = get_config().server.metrics_token
    if token:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return _refuse(
                401,
                "GET /metrics needs 'Authorization: Bearer <token>' with the token set as "
                "server.metrics_token in the config.",
            )
        if not hmac.compare_digest(given.strip().encode(), token.encode()):
            return _refuse(401, "Wrong metrics token: it must equal server.metrics_token.")
        return None
    proxied = any(request.META.get(header) for header in PROXY_HEADERS)
    if request.META.get("REMOTE_ADDR") in LOOPBACK and not proxied:
        return None
    return _refuse(
        403,
        "GET /metrics answers only clients on this machine (loopback) while no token is set. "
        "To scrape it from elsewhere or through a proxy, set server.metrics_token in the config "
        "and send 'Authorization: Bearer <token>'.",
    )


@require_GET
@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    refused = _denied(request)
    if refused is not None:
        return refused
    body = generate_latest(_in_process()) + generate_latest(_DATABASE)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
