"""A common query's first lookup with its refresh queued on the request path, and off it.

    .venv/bin/python bench/search_enqueue.py [--words 40] [--writers 1]

The first lookup of a query that fills its rank window asks the worker to keep its best rows
(search.ranked). Queueing that task is a write: on the embedded default's ORM broker, a write
transaction that waits for SQLite's lock behind whatever is being appended. On a real SQLite file
with the service's settings (the queue not synchronous; no worker runs, so every lookup timed is
a first one, ranked within its newest window), ``--words`` distinct common words are looked up
once each through ``search.service.search`` (the API's full answer: 20 hits, windows, bookmarks)
in each of two ways, interleaved:

- *on the request path* -- the refresh queued inside the call, as before (``ranked._enqueue``);
- *off it* -- handed to the process's enqueuer thread (``ranked.flush``, what the service does).

``--writers`` threads append one message at a time to other sessions meanwhile (0: an idle
store). Prints p50 / p95 / max of each in milliseconds and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _timing import percentile, setup_service  # noqa: E402 - after the path

MATCHES = 300  # rows holding each word: three rank windows of 100
PER_ROW = 4


def _fill(words: list[str]):
    from sessions_app import services
    from sessions_app.keys import create_channel

    channel = create_channel("bench-enqueue")[0]
    session = services.open_session(channel, model="gpt-4o").session
    rows = len(words) * MATCHES // PER_ROW
    messages = [
        {
            "role": "user" if n % 2 else "assistant",
            "content": " ".join(words[(n * PER_ROW + k) % len(words)] for k in range(PER_ROW))
            + f" filler{n % 97} note {n}",
        }
        for n in range(rows)
    ]
    for start in range(0, len(messages), 500):
        services.append_messages(session, messages[start : start + 500], run_hooks=False)
    return channel


def _write_until(stop: threading.Event, channel, name: str, counts: list[int]) -> None:
    from django.db import connection

    from sessions_app import services

    session = services.open_session(channel, model="gpt-4o", external_id=name).session
    n = 0
    while not stop.is_set():
        services.append_messages(
            session, [{"role": "user", "content": f"writer {name} says {n}"}], run_hooks=False
        )
        n += 1
    counts.append(n)
    connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=40, help="first lookups in each way")
    parser.add_argument("--writers", type=int, default=1, help="threads appending meanwhile")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        setup_service(Path(tmp))
        from django_q.conf import Conf

        from search import ranked
        from search.service import Filters, search

        assert not Conf.SYNC, "the queue must not be synchronous here"
        words = [f"common{n:03d}" for n in range(2 * args.words)]
        channel = _fill(words)
        filters = Filters(rank_window=100, channel_id=channel.pk)
        search("warmup", filters, limit=20)  # the process's first search: imports, statements

        def inline() -> None:  # the refresh queued inside the call, as before
            asks, ranked._pending.asks = getattr(ranked._pending, "asks", None) or [], []
            ranked._enqueue([(*ask, {}) for ask in asks])

        off_path = ranked.flush  # the service's own

        stop, counts = threading.Event(), []
        writers = [
            threading.Thread(target=_write_until, args=(stop, channel, f"w{n}", counts))
            for n in range(args.writers)
        ]
        for writer in writers:
            writer.start()
        time.sleep(0.2)
        timed: dict[str, list[float]] = {"on the request path": [], "off it (the service)": []}
        try:
            for n in range(args.words):
                for way, flush in (
                    ("on the request path", inline),
                    ("off it (the service)", off_path),
                ):
                    word = words[2 * n + (way != "on the request path")]
                    ranked.flush = flush
                    started = time.perf_counter()
                    answer = search(word, filters, limit=20)
                    timed[way].append((time.perf_counter() - started) * 1000)
                    assert answer.ranked_within == 100 and len(answer.hits) == 20
        finally:
            ranked.flush = off_path
            stop.set()
            for writer in writers:
                writer.join()
        assert ranked.drain(30)
        queued = _queued()
        print(
            f"{len(words) * MATCHES // PER_ROW:,} rows, SQLite, ORM broker, {args.writers} "
            f"writer(s) appending ({sum(counts):,} appends); {args.words} first lookups each way; "
            f"{queued} refreshes queued\n"
        )
        print(f"{'refresh queued':<24} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'p95 ratio':>10}")
        base = percentile(timed["off it (the service)"], 0.95)
        for way, samples in timed.items():
            print(
                f"{way:<24} {statistics.median(samples):>8.2f} {percentile(samples, 0.95):>8.2f} "
                f"{max(samples):>8.2f} {percentile(samples, 0.95) / base:>9.2f}x"
            )


def _queued() -> int:
    from django_q.models import OrmQ

    return OrmQ.objects.count()


if __name__ == "__main__":
    main()
