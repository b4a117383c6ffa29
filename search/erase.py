"""What the search indexes need around an erasure (sessions_app.services.erase).

The rows leave every index with their deletion (SQLite: the delete trigger takes them out of
each FTS5 table and its recent twin; PostgreSQL: the GIN indexes are over the table itself), so
no query finds them once the erasure's transaction commits. What is left is on disk: FTS5 keeps
a deleted row's terms in its older segments (cancelled by a delete marker) until the segments
are merged, and freed pages keep their bytes. So, on SQLite, the erasure runs with
``secure_delete`` (freed pages are zeroed) and then merges each FTS5 table step by step, each
step a short write transaction, until one segment is left; on PostgreSQL it vacuums the
messages table, which removes the dead rows and their index entries."""

from __future__ import annotations

import time

from django.db import connection, transaction

from search import fts, pg, ranked
from sessions_app.services.errors import StateConflict

# Pages of work per merge step, each its own write transaction (at most ~0.3 s on a table of a
# million rows), with a pause after it so that waiting writers get in.
MERGE_STEP = 64
PAUSE_SECONDS = 0.01


def before() -> None:
    """Refuse without the delete trigger (rows would leave the table but not the indexes), or
    while the FTS5 indexes hold another text version (a contentless delete must give the exact
    text that was indexed, and a wrong one corrupts the index)."""
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        if not fts.triggers_present(cursor):
            raise StateConflict(
                "The search index triggers are missing, so deleted rows would stay in the "
                "indexes: run `manage.py migrate` (it recreates them) first; nothing was erased."
            )
        if (version := fts.stale(cursor)) is not None:
            raise StateConflict(
                f"The search indexes hold text version {version}, this code computes "
                f"{fts.TEXT_VERSION}: run `manage.py reindex` first; nothing was erased."
            )
        cursor.execute("PRAGMA secure_delete = ON")


def after() -> None:
    # The ranking cache may hold the erased rows' ids, and queries that named their words:
    # it is rebuilt as lookups ask, so it goes whole.
    with transaction.atomic(), connection.cursor() as cursor:
        ranked.clear(cursor)
    if connection.vendor == "sqlite":
        purge_sqlite()
    elif connection.vendor == "postgresql" and not connection.in_atomic_block:
        # ANALYZE too: the planner's statistics list the table's most common words, and so
        # does search.pg.COMMON, made from them; an erased session's own words leave both.
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM (ANALYZE) {fts.MESSAGE_TABLE}")
            pg.refresh_common(cursor)


def purge_sqlite() -> int:
    """Merge every FTS5 table down to one segment, dropping the deleted rows' terms; returns
    the merge steps taken. Each table gets a budget of steps: if writes keep arriving faster
    than it merges, it stops there (the deleted rows are still never found; their terms wait in
    an older segment for the next merge or ``optimize``)."""
    raw = connection
    steps = 0
    for _, t, _ in fts.tables():
        with raw.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {t}_data")  # noqa: S608 - a constant name
            blocks = cursor.fetchone()[0]
        # Rewriting every page twice is plenty for one index; under a steady stream of appends
        # (each a new small segment) the merge would otherwise never run out of work.
        budget = 2 * blocks // MERGE_STEP + 10
        for _ in range(budget):
            with transaction.atomic(), raw.cursor() as cursor:
                before = raw.connection.total_changes
                # A negative step merges every segment, as 'optimize' does, a bit at a time.
                cursor.execute(f"INSERT INTO {t}({t}, rank) VALUES('merge', %s)", [-MERGE_STEP])
                done = raw.connection.total_changes - before < 2
            steps += 1
            if done:
                break
            time.sleep(PAUSE_SECONDS)
    with raw.cursor() as cursor:
        cursor.execute("PRAGMA secure_delete = OFF")
    return steps
