"""What the store occupies (``manage.py storage``) and keeping it compact (``manage.py optimize``).

Sizes come from the database itself: SQLite's ``dbstat`` virtual table (bytes of every b-tree,
the FTS5 shadow tables grouped under the search index they belong to), PostgreSQL's
``pg_relation_size`` / ``pg_total_relation_size``. Rows by kind and by channel are one pass over
the messages table: a scan, bounded by the table's size, for an operator's command (never a
request path); the report says how long it took.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from search import fts
from search.backends.common import KIND_SQL, ROLLED_BACK
from sessions_app.models import Channel

EVENTS_TABLE = "compression_compressionevent"
SESSION_TABLE = "sessions_app_session"
KINDS = {**KIND_SQL, "rolled_back": ROLLED_BACK, "notice": "(m.is_notice)"}
# An FTS5 table's shadow tables: search_fts_words_data, ..._idx, ..._docsize, ..._config.
_NAMES = "|".join(fts.INDEXES)
_SHADOW = re.compile(rf"^(search_fts_(?:{_NAMES})(?:_recent)?)_[a-z]+$")


def _kinds_select() -> str:
    return ", ".join(f"sum(CASE WHEN {sql} THEN 1 ELSE 0 END)" for sql in KINDS.values())


def rows_by_channel() -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Messages by kind in all, and per channel (with its sessions, archived ones apart)."""
    names: dict[int | None, str] = dict(Channel.objects.values_list("pk", "name"))
    per: dict[int | None, dict[str, Any]] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.channel_id, count(*), {_kinds_select()} FROM {fts.MESSAGE_TABLE} m "
            "GROUP BY m.channel_id"
        )
        for channel_id, total, *kinds in cursor.fetchall():
            per[channel_id] = {
                "messages": total,
                **{k: int(v or 0) for k, v in zip(KINDS, kinds, strict=True)},
            }
        cursor.execute(
            f"SELECT channel_id, count(*), count(archived_at) FROM {SESSION_TABLE} "
            "GROUP BY channel_id"
        )
        sessions = {cid: (n, archived) for cid, n, archived in cursor.fetchall()}
    channels = []
    for cid in sorted(set(per) | set(sessions), key=lambda c: names.get(c, "")):
        row = per.get(cid) or {"messages": 0, **dict.fromkeys(KINDS, 0)}
        n, archived = sessions.get(cid, (0, 0))
        channels.append(
            {
                "channel": names.get(cid, "(none)"),
                "sessions": n,
                "archived_sessions": archived,
                **row,
            }
        )
    totals = {"messages": sum(c["messages"] for c in channels)}
    for kind in KINDS:
        totals[kind] = sum(c[kind] for c in channels)
    return totals, channels


def _sqlite_relations() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    path = Path(settings.DATABASES["default"]["NAME"])
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA page_size")
        page_size = cursor.fetchone()[0]
        cursor.execute("PRAGMA page_count")
        pages = cursor.fetchone()[0]
        cursor.execute("PRAGMA freelist_count")
        free = cursor.fetchone()[0]
        cursor.execute("SELECT type, name, tbl_name FROM sqlite_master")
        schema = {name: (kind, table) for kind, name, table in cursor.fetchall()}
        cursor.execute("SELECT name, pgsize FROM dbstat WHERE aggregate = TRUE")
        sizes = cursor.fetchall()
    wal = Path(f"{path}-wal")
    database = {
        "file": str(path),
        "bytes": pages * page_size,
        "free_bytes": free * page_size,
        "wal_bytes": wal.stat().st_size if wal.exists() else 0,
    }
    relations: dict[str, dict[str, Any]] = {}
    for name, size in sizes:
        shadow = _SHADOW.match(name)
        if shadow:
            key, entry = shadow.group(1), {"kind": "search index", "table": fts.MESSAGE_TABLE}
        elif schema.get(name, ("table",))[0] == "index":
            key, entry = name, {"kind": "index", "table": schema[name][1]}
        else:
            key, entry = name, {"kind": "table", "table": name}
        relation = relations.setdefault(key, {"name": key, **entry, "bytes": 0})
        relation["bytes"] += size
    return database, list(relations.values())


def _postgres_relations() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database(), pg_database_size(current_database())")
        name, size = cursor.fetchone()
        cursor.execute(
            "SELECT c.relname, c.relkind, t.relname, pg_relation_size(c.oid), "
            "pg_total_relation_size(c.oid) FROM pg_class c "
            "LEFT JOIN pg_index i ON i.indexrelid = c.oid "
            "LEFT JOIN pg_class t ON t.oid = i.indrelid "
            "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'i')"
        )
        rows = cursor.fetchall()
    from search import pg

    search_indexes = set(pg.INDEX_NAMES.values())
    relations = []
    for rel, kind, table, own, total in rows:
        if kind == "r":
            entry = {"kind": "table", "table": rel, "bytes": own, "total_bytes": total}
        else:
            label = "search index" if rel in search_indexes else "index"
            entry = {"kind": label, "table": table, "bytes": own}
        relations.append({"name": rel, **entry})
    return {"name": name, "bytes": size}, relations


def report() -> dict[str, Any]:
    """Everything ``manage.py storage`` shows, as plain data (its ``--json``)."""
    started = time.perf_counter()
    if connection.vendor == "postgresql":
        database, relations = _postgres_relations()
    else:
        database, relations = _sqlite_relations()
    relations.sort(key=lambda r: (-r["bytes"], r["name"]))
    sized = time.perf_counter()
    totals, channels = rows_by_channel()
    counted = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {EVENTS_TABLE}")
        events = cursor.fetchone()[0]
    event_bytes = sum(
        r.get("total_bytes", r["bytes"]) if connection.vendor == "postgresql" else r["bytes"]
        for r in relations
        if r["table"] == EVENTS_TABLE and (r["kind"] == "table" or connection.vendor == "sqlite")
    )
    return {
        "backend": connection.vendor,
        "database": database,
        "relations": relations,
        "messages": totals,
        "channels": channels,
        "events": {"table": EVENTS_TABLE, "rows": events, "bytes": event_bytes},
        "seconds": {
            "sizes": round(sized - started, 3),
            "rows": round(counted - sized, 3),
            "total": round(time.perf_counter() - started, 3),
        },
    }


# --- optimize -----------------------------------------------------------------------------------

Tick = Callable[[float], None]  # called after each transaction with how long it held the lock
Step = tuple[str, Callable[[Tick], None]]
MERGE_PAGES = 250  # FTS5 leaf pages (~4 KB) written per merge transaction: ~50-100 ms
# After each merge transaction the merge pauses as long as the transaction took (at least this):
# a writer waiting at the write gate polls for it every few milliseconds, and a merge that took
# the gate again at once would keep it from ever getting in.
MERGE_PAUSE = 0.02


def _execute(*statements: str, write: bool = True) -> Callable[[Tick], None]:
    def run(tick: Tick) -> None:
        started = time.perf_counter()
        if write:
            # Under the write gate (one BEGIN IMMEDIATE): appends wait for this step only.
            with transaction.atomic(), connection.cursor() as cursor:
                for sql in statements:
                    cursor.execute(sql)
        else:
            with connection.cursor() as cursor:
                for sql in statements:
                    cursor.execute(sql)
        tick(time.perf_counter() - started)

    return run


def _merge(table: str) -> Callable[[Tick], None]:
    """FTS5's 'optimize' (every segment merged into one) done incrementally: FTS5's 'merge'
    command, ``MERGE_PAGES`` at a time, each in its own short write transaction, until a call
    finds nothing left to merge (fewer than two changes). A single 'optimize' rewrites the
    whole index in one transaction -- a quarter of a gigabyte at a million messages -- and
    every append would wait for it. The first call's negative argument gathers all segments
    for one merge; the later ones carry that merge on (FTS5's documented procedure)."""

    def run(tick: Tick) -> None:
        pages = -MERGE_PAGES
        while True:
            started = time.perf_counter()
            with transaction.atomic(), connection.cursor() as cursor:
                before = connection.connection.total_changes
                cursor.execute(f"INSERT INTO {table}({table}, rank) VALUES('merge', %s)", [pages])
                done = connection.connection.total_changes - before < 2
            held = time.perf_counter() - started
            tick(held)
            if done:
                return
            time.sleep(max(held, MERGE_PAUSE))
            pages = MERGE_PAGES

    return run


def optimize_steps() -> Iterator[Step]:
    """The steps of ``manage.py optimize``; each write is short, so it runs while the service
    runs."""
    if connection.vendor == "postgresql":
        # VACUUM cannot run inside a transaction; it takes no lock that stops writers.
        for table in sorted(connection.introspection.table_names()):
            yield (
                f"VACUUM ANALYZE {table}",
                _execute(f"VACUUM ANALYZE {connection.ops.quote_name(table)}", write=False),
            )
        return
    for _, table, _ in fts.tables():
        # Merge the index's segments into one: a query reads one doclist per term.
        yield f"merge {table}", _merge(table)
    # Approximate statistics (a sample of each index), so ANALYZE is bounded at any size.
    yield "ANALYZE", _execute("PRAGMA analysis_limit=1000", "ANALYZE")
    yield "PRAGMA optimize", _execute("PRAGMA optimize", write=False)
