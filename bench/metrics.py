"""What a ``/metrics`` scrape costs at size: each database part read afresh, and a whole scrape.

    .venv/bin/python bench/metrics.py                          # 1,000,000 messages
    .venv/bin/python bench/metrics.py --messages 100000 --events 20000

In a fresh SQLite file with the service's settings: the search benchmark's corpus (sessions of
500 messages, the three FTS5 indexes and their recent twins built), and ``--events`` compression
events spread over the sessions (70% trigger decisions repeated a few times, 25% written
summaries with tokens and durations, 5% failures). Then each part of the database collector is
read ``--repeat`` times with nothing kept (median, and the first, cold, read), and the whole page
is scraped through the view: once with every part read afresh, then as a scrape finds it (dear
parts kept).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._timing import median_us  # noqa: E402


def add_events(count: int) -> None:
    from django.db import connection, transaction
    from django.utils import timezone

    rng = random.Random(7)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM sessions_app_session")
        sessions = [row[0] for row in cursor.fetchall()]
    now = timezone.now().isoformat(sep=" ")
    triggers = ["threshold_pre", "threshold_post", "manual_api", "idle", "hygiene"]
    rows = []
    for n in range(count):
        roll = rng.random()
        if roll < 0.70:
            outcome, repeats = rng.choice(["skipped", "locked"]), 5
            before, after, ms = 1, None, None
        elif roll < 0.95:
            outcome, repeats = rng.choice(["compressed", "fallback"]), 1
            before, after, ms = 90_000, 20_000, rng.randint(50, 60_000)
        else:
            outcome, repeats, before, after, ms = "failed", 1, 90_000, None, rng.randint(50, 9_000)
        rows.append(
            (
                sessions[n % len(sessions)],
                "engine",
                rng.choice(triggers),
                outcome,
                before,
                after,
                ms,
                now,
                repeats,
                now,
            )
        )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO compression_compressionevent (session_id, path, trigger, outcome, reason,"
            " tokens_before, tokens_after, rows_archived, summary_model, error, duration_ms,"
            " attempt, created_at, repeats, last_at) VALUES (%s, %s, %s, %s, '', %s, %s, 0, '',"
            " '', %s, 1, %s, %s, %s)",
            rows,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-metrics-bench-") as tmp:
        from bench import search as corpus

        corpus._setup(Path(tmp))
        from django.core.management import call_command
        from django.db import connection
        from django.test import Client

        call_command("migrate", verbosity=0)
        t0 = time.perf_counter()
        corpus.load(args.messages)
        corpus._build_indexes(args.messages)
        add_events(args.events)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        mib = corpus._database_mib(Path(tmp))
        print(
            f"{args.messages:,} messages, {args.events:,} events, database {mib:,.0f} MiB "
            f"(built in {time.perf_counter() - t0:.0f} s)\n"
        )
        from hermes_site import metrics

        print(f"| part | first read, ms | median of {args.repeat}, ms | kept for, s |")
        print("|---|---:|---:|---:|")
        for part in metrics.PARTS:
            t1 = time.perf_counter()
            part.read()
            first = (time.perf_counter() - t1) * 1000
            median = median_us(part.read, args.repeat) / 1000
            part.forget()
            part.collect()
            kept = max(0.0, part.until - time.monotonic())
            print(f"| {part.name} | {first:,.1f} | {median:,.1f} | {kept:,.0f} |")
        client = Client()

        def scrape() -> None:
            response = client.get(
                "/metrics", HTTP_HOST="localhost", HTTP_X_REQUEST_ID=uuid.uuid4().hex
            )
            assert response.status_code == 200, response.status_code

        def fresh() -> None:
            metrics.forget()
            scrape()

        afresh = median_us(fresh, args.repeat) / 1000
        found = median_us(scrape, args.repeat) / 1000
        print(f"\nwhole scrape, every part read afresh: {afresh:,.1f} ms")
        print(f"whole scrape, as found (readings kept): {found:,.1f} ms")


if __name__ == "__main__":
    main()
