"""What SQLite's page cache and memory map cost a search when other connections write between
searches, as gateways' appends do: the default (server.sqlite_cache_mib, sqlite_mmap_mib)
beside larger caches and a map.

    .venv/bin/python bench/sqlite_cache.py                  # 1,000,000 messages
    .venv/bin/python bench/sqlite_cache.py --size 100000

Loads bench/search.py's corpus (240 rare facts in 12 kinds among common text) into a fresh
SQLite file, builds its indexes and reads the file into the OS cache (the prewarm). Then, for
each set-up of cache and map, alternating over two rounds: one connection, with that cache and
map, answers a few common queries (a web process's connection after some searches), then
each fact's first lookup and some common words' within one channel (20 hits, windows of 2),
each right after another connection wrote a row -- and once more without writes. SQLite drops
a connection's whole page cache, and unmaps its whole map, on its first read after another
connection wrote: what that costs is the difference between the two columns. The ratio is
each set-up's p95 with writes over the default's.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._timing import percentile  # noqa: E402 - after the path

# (label, cache MiB, map MiB); the first is the service's default.
SETUPS = [
    ("default: 8 MiB cache, no map", 8, 0),
    ("2 MiB cache, no map", 2, 0),
    ("64 MiB cache, no map", 64, 0),
    ("64 MiB cache, 2 GiB map", 64, 2048),
]
COMMON = ["deploy", "缓存", "upstream timed", "restart nginx"]


def _pragmas(cache_mib: int, map_mib: int) -> None:
    from django.db import connection

    connection.close()  # a new connection: an empty cache, nothing mapped
    with connection.cursor() as cursor:
        cursor.execute(f"PRAGMA cache_size=-{cache_mib * 1024}")
        cursor.execute(f"PRAGMA mmap_size={map_mib * 2**20}")


def _round(queries: list[str], writer: sqlite3.Connection | None) -> list[float]:
    from search import ranked
    from search.filters import Filters
    from search.service import search
    from sessions_app.models import Channel

    api = Filters(channel_id=Channel.objects.order_by("pk").values_list("pk", flat=True)[0])
    for q in ("warm", "up", "数据", "zz", *COMMON):  # a web process's connection, in use
        search(q, api, limit=20, window=2)
    ranked.drain(30)
    samples = []
    for q in queries:
        if writer is not None:
            writer.execute("INSERT INTO bench_writes VALUES (1)")
        samples.append(search(q, api, limit=20, window=2).total_seconds * 1000)
        ranked.drain(30)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-cache-bench-") as tmp:
        data = Path(tmp)
        from bench import search as corpus

        corpus.build_sqlite_corpus(data, args.size)
        from django.db import connection

        from search import ranked
        from search.warm import prewarm_file

        prewarm_file(data / "hermes.sqlite3", 1 << 20)
        writer = sqlite3.connect(data / "hermes.sqlite3", isolation_level=None, timeout=30)
        writer.execute("CREATE TABLE bench_writes (x)")
        facts = [q for kind in corpus.FACTS.values() for _, q in kind]
        queries = facts + COMMON * 5
        found: dict[str, dict[bool, list[list[float]]]] = {}  # each round's samples
        for order in (SETUPS, SETUPS[::-1]):
            for label, cache_mib, map_mib in order:
                for writes in (True, False):
                    with connection.cursor() as cursor:
                        ranked.clear(cursor)  # every lookup a first one again
                    _pragmas(cache_mib, map_mib)
                    samples = _round(queries, writer if writes else None)
                    found.setdefault(label, {}).setdefault(writes, []).append(samples)
        writer.close()
        connection.close()
    print(
        "\nFirst answers within one channel (20 hits, windows of 2), each right after another "
        "connection's write, and without writes (2 rounds, alternated), ms; the ratio is the "
        "p95 with writes over the default's:\n"
    )
    print(
        "| cache and map | queries | with writes p50 | with writes p95 | without p50 "
        "| without p95 | ratio (x) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    groups = {
        f"{len(facts)} rare facts": slice(0, len(facts)),
        f"{len(COMMON)} common queries x 5": slice(len(facts), None),
    }
    for group, part in groups.items():

        def of(label: str, writes: bool, part: slice = part) -> list[float]:
            return [ms for samples in found[label][writes] for ms in samples[part]]

        base = percentile(of(SETUPS[0][0], True), 0.95)
        for label, _, _ in SETUPS:
            w, n = of(label, True), of(label, False)
            print(
                f"| {label} | {group} | {percentile(w, 0.5):.2f} | {percentile(w, 0.95):.2f} "
                f"| {percentile(n, 0.5):.2f} | {percentile(n, 0.95):.2f} "
                f"| {percentile(w, 0.95) / base:.2f} |"
            )


if __name__ == "__main__":
    main()
