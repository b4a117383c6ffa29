"""The three SQLite FTS5 indexes and the triggers that keep them in step with the messages table.

The indexes are *contentless* (the text lives once, in the messages table) and are written only by
triggers, so every write path -- services, admin, bulk ``QuerySet.update`` that archives thousands
of rows, a raw SQL statement run by a Django connection -- keeps them in sync. A row is indexed
while it is live, a summary or archived (``active OR compressed``); rolling it back removes it.
Archiving changes neither condition nor text, so it costs the triggers nothing.

Each index has a *recent* twin holding only the rows above a floor (the newest
``search.recent_rows``, kept there by the same triggers and trimmed by the worker): FTS5's
``bm25()`` counts every match of each query term across its table on every query, so scoring the
newest matches of a common term in a table a fraction of the size is that much cheaper.

The triggers call ``hermes_index_text`` (search.text.index_text), registered on every Django
SQLite connection. A connection without it (the sqlite3 shell) can read and back up the database
but cannot write messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from django.db.backends.base.base import BaseDatabaseWrapper

from search.text import TEXT_VERSION, index_text

MESSAGE_TABLE = "sessions_app_message"
INDEXES: dict[str, str] = {
    "words": "unicode61 remove_diacritics 2",
    "bigram": "unicode61 remove_diacritics 2",
    "trigram": "trigram",
}
INDEXED = "(%(row)s.active OR %(row)s.compressed)"
TEXT_CHANGED = "(old.content IS NOT new.content OR old.tool_calls IS NOT new.tool_calls)"
# A gateway's search keeps the matches of its channel. Checked on the message row, each FTS5
# match costs a read of the row's table page (a few rows per 4 KiB page: thousands of pages
# for a common word's window, most not cached on a query's first lookup); checked here (SQLite
# keeps the rowid after each key), it costs a lookup in an index of ~10 MiB at 1,000,000
# messages. Read with INDEXED BY: the planner prefers the primary key for ``m.id = rowid``. A
# migration that rebuilds the messages table drops it with the triggers; every migrate puts
# both back (search.apps).
CHANNEL_INDEX = "search_message_channel"
CREATE_CHANNEL_INDEX = f"CREATE INDEX IF NOT EXISTS {CHANNEL_INDEX} ON {MESSAGE_TABLE} (channel_id)"


def ensure_channel_index(cursor) -> bool:
    """Create the channel index where the messages have a channel and it is missing; whether
    it had to be."""
    cursor.execute(
        "SELECT (SELECT count(*) FROM pragma_table_info(%s) WHERE name = 'channel_id'),"
        " (SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = %s)",
        [MESSAGE_TABLE, CHANNEL_INDEX],
    )
    column, index = cursor.fetchone()
    if not column or index:
        return False
    cursor.execute(CREATE_CHANNEL_INDEX)
    return True


# One row: ``floor`` -- messages with a greater id are in the recent indexes too (NULL: the
# recent indexes are off); ``text_version`` -- the search.text.TEXT_VERSION the indexes hold.
STATE_TABLE = "search_fts_state"
FLOOR = f"(SELECT floor FROM {STATE_TABLE} WHERE id = 1)"


class StaleIndex(RuntimeError):
    """The indexes hold text computed by another version of search.text: rows cannot be taken
    out of a contentless index by recomputing their text until ``manage.py reindex`` runs."""


def table(index: str, recent: bool = False) -> str:
    return f"search_fts_{index}_recent" if recent else f"search_fts_{index}"


def tables() -> Iterator[tuple[str, str, bool]]:
    """(index, table, recent) for every FTS5 table, full ones first."""
    for recent in (False, True):
        for index in INDEXES:
            yield index, table(index, recent), recent


def register_functions(connection: BaseDatabaseWrapper) -> None:
    raw = connection.connection
    raw.create_function("hermes_index_text", 3, index_text, deterministic=True)


def _text(index: str, row: str) -> str:
    return f"hermes_index_text('{index}', {row}.content, {row}.tool_calls)"


def _insert(index: str, t: str, recent: bool, row: str, where: str) -> str:
    if recent:
        where += f" AND {row}.id > {FLOOR}"
    return f"INSERT INTO {t}(rowid, text) SELECT {row}.id, {_text(index, row)} WHERE {where};"


def _delete(index: str, t: str, recent: bool, row: str, where: str) -> str:
    if recent:
        where += f" AND {row}.id > {FLOOR}"
    return (
        f"INSERT INTO {t}({t}, rowid, text) "
        f"SELECT 'delete', {row}.id, {_text(index, row)} WHERE {where};"
    )


def create_statements() -> Iterator[str]:
    for index, t, _ in tables():
        yield (
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {t} USING fts5("
            f"text, content='', tokenize='{INDEXES[index]}')"
        )
    yield (
        f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} "
        "(id INTEGER PRIMARY KEY CHECK (id = 1), floor INTEGER, text_version INTEGER NOT NULL)"
    )
    # Created with indexes built by this code (or by a version whose migration reindexes).
    yield (
        f"INSERT OR IGNORE INTO {STATE_TABLE} (id, floor, text_version) "
        f"VALUES (1, 0, {TEXT_VERSION})"
    )
    old_indexed = INDEXED % {"row": "old"}
    new_indexed = INDEXED % {"row": "new"}
    on_insert = "".join(_insert(*spec, "new", new_indexed) for spec in tables())
    # One trigger per event, statements in a fixed order: the old text leaves before the new
    # text enters (trigger firing order between separate triggers is not guaranteed).
    on_update = "".join(
        _delete(*spec, "old", f"{old_indexed} AND (NOT {new_indexed} OR {TEXT_CHANGED})")
        for spec in tables()
    ) + "".join(
        _insert(*spec, "new", f"{new_indexed} AND (NOT {old_indexed} OR {TEXT_CHANGED})")
        for spec in tables()
    )
    on_delete = "".join(_delete(*spec, "old", old_indexed) for spec in tables())
    yield (
        f"CREATE TRIGGER IF NOT EXISTS search_fts_ai AFTER INSERT ON {MESSAGE_TABLE} "
        f"BEGIN {on_insert} END"
    )
    yield (
        f"CREATE TRIGGER IF NOT EXISTS search_fts_au AFTER UPDATE OF active, compressed, "
        f"content, tool_calls ON {MESSAGE_TABLE} BEGIN {on_update} END"
    )
    yield (
        f"CREATE TRIGGER IF NOT EXISTS search_fts_ad AFTER DELETE ON {MESSAGE_TABLE} "
        f"BEGIN {on_delete} END"
    )


TRIGGERS = ("search_fts_ai", "search_fts_au", "search_fts_ad")


def state_present(cursor) -> bool:
    cursor.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = %s", [STATE_TABLE]
    )
    return cursor.fetchone()[0] == 1


def triggers_present(cursor) -> bool:
    cursor.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (%s, %s, %s)",
        list(TRIGGERS),
    )
    return cursor.fetchone()[0] == len(TRIGGERS)


def drop_statements() -> Iterator[str]:
    for trigger in TRIGGERS:
        yield f"DROP TRIGGER IF EXISTS {trigger}"
    for _, t, _ in tables():
        yield f"DROP TABLE IF EXISTS {t}"
    yield f"DROP TABLE IF EXISTS {STATE_TABLE}"


def recent_rows() -> int:
    from core.config import get_config

    return get_config().search.recent_rows


def install(cursor, keep: int | None = None) -> None:
    """Create the indexes and triggers if missing and fill the indexes from the messages."""
    for statement in create_statements():
        cursor.execute(statement)
    rebuild(cursor, keep)


def indexed_count(cursor, above: int = 0) -> int:
    cursor.execute(
        f"SELECT count(*) FROM {MESSAGE_TABLE} WHERE id > %s AND (active OR compressed)", [above]
    )
    return cursor.fetchone()[0]


def _add(cursor, index: str, t: str, low: int, high: int | None = None) -> None:
    """Index the indexed messages with ``low < id <= high`` into ``t``."""
    cursor.execute(
        f"INSERT INTO {t}(rowid, text) "
        f"SELECT id, hermes_index_text('{index}', content, tool_calls) FROM {MESSAGE_TABLE} "
        "WHERE id > %s AND id <= %s AND (active OR compressed)",
        [low, high if high is not None else 2**63 - 1],
    )


def _top(cursor) -> int:
    cursor.execute(f"SELECT coalesce(max(id), 0) FROM {MESSAGE_TABLE}")
    return cursor.fetchone()[0]


def floor(cursor) -> int | None:
    cursor.execute(f"SELECT floor FROM {STATE_TABLE} WHERE id = 1")
    return cursor.fetchone()[0]


def stale(cursor) -> int | None:
    """The text version the indexes were built with, if it is not this code's; else None."""
    cursor.execute(f"SELECT text_version FROM {STATE_TABLE} WHERE id = 1")
    version = cursor.fetchone()[0]
    return None if version == TEXT_VERSION else version


def fill_recent(cursor, keep: int | None = None) -> int | None:
    """Empty the recent indexes and refill them with the newest ``keep`` ids (0: leave them
    empty and off); returns the new floor."""
    keep = recent_rows() if keep is None else keep
    low = max(0, _top(cursor) - keep) if keep else None
    cursor.execute(f"UPDATE {STATE_TABLE} SET floor = %s WHERE id = 1", [low])
    for index, t, recent in tables():
        if recent:
            cursor.execute(f"INSERT INTO {t}({t}) VALUES('delete-all')")
            if low is not None:
                _add(cursor, index, t, low)
                _optimize(cursor, t)
    return low


def rebuild(
    cursor,
    keep: int | None = None,
    batch: int = 5_000,
    progress: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Empty every index and re-add every indexed row, in id batches, then the recent indexes;
    returns rows per (full) index."""
    for index in INDEXES:
        t = table(index)
        cursor.execute(f"INSERT INTO {t}({t}) VALUES('delete-all')")
    top = _top(cursor)
    start = 0
    while start < top:
        end = start + batch
        for index in INDEXES:
            _add(cursor, index, table(index), start, end)
        if progress is not None:
            progress(min(end, top) - start)
        start = end
    for index in INDEXES:
        _optimize(cursor, table(index))
    fill_recent(cursor, keep)
    cursor.execute(f"UPDATE {STATE_TABLE} SET text_version = %s WHERE id = 1", [TEXT_VERSION])
    return index_counts(cursor)


def _optimize(cursor, t: str) -> None:
    """Merge a freshly filled index into one segment: a query then reads one doclist per term
    instead of one per segment (as rows arrive, FTS5's automerge keeps the count low, not one)."""
    cursor.execute(f"INSERT INTO {t}({t}) VALUES('optimize')")


def trim_step(cursor, keep: int | None = None, batch: int = 2_000) -> int:
    """Raise the floor by at most ``batch`` ids towards the newest ``keep``, taking those rows out
    of the recent indexes; returns how far it moved (0: nothing to trim, or the recent indexes
    are off). Run it inside a write transaction: the floor and the recent indexes must change
    together."""
    keep = recent_rows() if keep is None else keep
    low = floor(cursor)
    if low is None or keep == 0:
        return 0
    if (version := stale(cursor)) is not None:
        raise StaleIndex(
            f"The search indexes hold text version {version}, this code computes "
            f"{TEXT_VERSION}: run manage.py reindex."
        )
    high = min(_top(cursor) - keep, low + batch)
    if high <= low:
        return 0
    for index in INDEXES:
        t = table(index, recent=True)
        # Contentless FTS5 deletes need the indexed text: the triggers keep it equal to the
        # row's current text, so recomputing it removes exactly what was added.
        cursor.execute(
            f"INSERT INTO {t}({t}, rowid, text) "
            f"SELECT 'delete', id, hermes_index_text('{index}', content, tool_calls) "
            f"FROM {MESSAGE_TABLE} WHERE id > %s AND id <= %s AND (active OR compressed)",
            [low, high],
        )
    cursor.execute(f"UPDATE {STATE_TABLE} SET floor = %s WHERE id = 1", [high])
    return high - low


def index_counts(cursor, recent: bool = False) -> dict[str, int]:
    counts = {}
    for index in INDEXES:
        cursor.execute(f"SELECT count(*) FROM {table(index, recent)}")
        counts[index] = cursor.fetchone()[0]
    return counts


def count_mismatches(cursor) -> dict[str, tuple[int, int]]:
    """Tables whose row count differs from the messages they should hold: {table: (rows,
    expected)}. Empty when every index is complete."""
    low = floor(cursor)
    expected = {
        False: indexed_count(cursor),
        True: 0 if low is None else indexed_count(cursor, above=low),
    }
    wrong = {}
    for recent in (False, True):
        for index, rows in index_counts(cursor, recent).items():
            if rows != expected[recent]:
                wrong[table(index, recent)] = (rows, expected[recent])
    return wrong


def integrity_check(cursor) -> None:
    """FTS5's own structural check; raises django.db.DatabaseError on a corrupt index."""
    for _, t, _ in tables():
        cursor.execute(f"INSERT INTO {t}({t}) VALUES('integrity-check')")
