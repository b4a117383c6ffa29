"""The operator console's timeline at real sizes: a session of a million messages compressed
several times, opened at the tail, at the head and at a search hit on message #10.

    .venv/bin/python bench/console.py [--messages 1000000] [--summaries 5] [--repeat 5]

Two sessions in one SQLite file with the service's settings: the baseline of 1,000 messages and
one of ``--messages``, each compressed ``--summaries`` times (every summary replacing an equal
block of originals, which stay archived under it, with its compression event), a system prompt
at the head and 1,000 live rows at the tail. Each page is rendered through Django's test client
(server time, no network), ``--repeat`` times; the median and the HTML size are printed beside
the baseline's, with the ratio and the target (under 300 ms and 300 KB at any size).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _timing import setup_service  # noqa: E402 - after the path is set

LIVE_TAIL = 1_000
TARGET_MS, TARGET_KB = 300, 300


def _load(channel, messages: int, summaries: int):
    """A compressed session, written with plain SQL (the search triggers dropped: the console
    does not read the search indexes, and they would make a million rows take minutes)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from compression.models import CompressionEvent
    from sessions_app.models import Session

    now = timezone.now()
    stamp = now.isoformat(sep=" ")
    sid = uuid.uuid4()
    archived = messages - LIVE_TAIL - 1
    block = archived // summaries
    with transaction.atomic(), connection.cursor() as cursor:
        for name in ("search_fts_ai", "search_fts_au", "search_fts_ad"):
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
        cursor.execute(
            "INSERT INTO sessions_app_session (id, channel_id, title, model, context_window,"
            " context_window_source, live_messages, live_tokens, total_messages, compressions,"
            " next_position, failure_streak, ineffective_streak, created_at, updated_at,"
            " last_activity_at) VALUES (%s, %s, %s, 'gpt-4o', 128000, 'catalog', %s, %s, %s, %s,"
            " %s, 0, 0, %s, %s, %s)",
            [
                sid.hex,
                channel.pk,
                f"{messages:,} messages",
                1 + summaries + LIVE_TAIL,
                (1 + summaries + LIVE_TAIL) * 40,
                messages + summaries,
                summaries,
                messages,
                stamp,
                stamp,
                stamp,
            ],
        )
        insert = (
            "INSERT INTO sessions_app_message (session_id, channel_id, position, role, content,"
            " token_count, active, compressed, is_summary, is_fallback_summary, summarized_by_id,"
            " covers_from_position, covers_to_position, archive_reason, created_at,"
            " rollback_reason) VALUES (%s, %s, %s, %s, %s, 40, %s, %s, %s, 0, %s, %s, %s, %s,"
            " %s, '')"
        )

        def row(position, role, content, flags, under=None, covers=(None, None), why=""):
            return (
                sid.hex,
                channel.pk,
                position,
                role,
                content,
                *flags,
                under,
                *covers,
                why,
                stamp,
            )

        live, archive, summary = (1, 0, 0), (0, 1, 0), (1, 0, 1)
        cursor.execute(insert, row(0, "system", "You are the agent.", live))
        for s in range(summaries):
            first, last = 1 + s * block, s * block + block
            text = f"[summary {s}] " + "goal " * 200
            cursor.execute(insert, row(first, "user", text, summary, covers=(first, last)))
            summary_id = cursor.lastrowid
            rows = [
                row(
                    p,
                    "user" if p % 2 else "assistant",
                    f"message {p}: the deploy of build {p % 97} needs a cache flush",
                    archive,
                    summary_id,
                    why="compression",
                )
                for p in range(first, last + 1)
            ]
            for start in range(0, len(rows), 50_000):
                cursor.executemany(insert, rows[start : start + 50_000])
            CompressionEvent.objects.create(
                session_id=sid,
                trigger="threshold_pre",
                outcome="compressed",
                reason="bench",
                tokens_before=100_000,
                tokens_after=20_000,
                rows_archived=block,
                summary_message_id=summary_id,
                repeats=1,
                last_at=now,
            )
        tail = summaries * block + 1
        cursor.executemany(
            insert,
            [
                row(p, "user" if p % 2 else "assistant", f"live {p}", live)
                for p in range(tail, tail + LIVE_TAIL)
            ],
        )
    return Session.objects.get(pk=sid)


def _pages(session) -> dict[str, str]:
    from django.urls import reverse

    from sessions_app.models import Message

    hit = Message.objects.get(session=session, position=10, is_summary=False)
    timeline = reverse("console:timeline", args=[session.pk])
    return {
        "tail": timeline,
        "head": f"{timeline}?at=head",
        "hit on #10": reverse("console:message", args=[hit.pk]),
    }


def _measure(client, url: str, repeat: int) -> tuple[float, int]:
    samples, size = [], 0
    for _ in range(repeat + 1):  # the first run warms the caches
        started = time.perf_counter()
        response = client.get(url, follow=True)
        samples.append(time.perf_counter() - started)
        assert response.status_code == 200, (url, response.status_code)
        size = len(response.content)
    return statistics.median(samples[1:]) * 1000, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--summaries", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-console-bench-") as tmp:
        setup_service(Path(tmp))
        from django.contrib.auth import get_user_model
        from django.test import Client

        from sessions_app.keys import create_channel

        channel, _ = create_channel("bench")
        started = time.perf_counter()
        small = _load(channel, 1_000 + LIVE_TAIL, args.summaries)
        large = _load(channel, args.messages, args.summaries)
        load_s = time.perf_counter() - started
        admin = get_user_model().objects.create_superuser("bench", "bench@example.com", "x")
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(admin)
        rows = []
        for (name, small_url), large_url in zip(
            _pages(small).items(), _pages(large).values(), strict=True
        ):
            base_ms, base_size = _measure(client, small_url, args.repeat)
            ms, size = _measure(client, large_url, args.repeat)
            rows.append((name, base_ms, base_size, ms, size))
    print(
        f"Timeline pages: {small.total_messages:,} vs {large.total_messages:,} messages, "
        f"{args.summaries} summaries each (loaded in {load_s:.0f} s); median of {args.repeat}\n"
    )
    print(
        f"| page | {small.total_messages:,} msgs ms | KB | {large.total_messages:,} msgs ms | KB "
        "| time ratio (x) | target (<300 ms, <300 KB) |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, base_ms, base_size, ms, size in rows:
        met = ms < TARGET_MS and size < TARGET_KB * 1024
        print(
            f"| {name} | {base_ms:.1f} | {base_size / 1024:.0f} | {ms:.1f} | {size / 1024:.0f} "
            f"| {ms / base_ms:.2f} | {'met' if met else 'NOT met'} |"
        )


if __name__ == "__main__":
    main()
