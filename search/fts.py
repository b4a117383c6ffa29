"""The three SQLite FTS5 indexes and the triggers that keep them in step with the messages table.

The indexes are *contentless* (the text lives once, in the messages table) and are written only by
triggers, so every write path -- services, admin, bulk ``QuerySet.update`` that archives thousands
of rows, a raw SQL statement run by a Django connection -- keeps them in sync. A row is indexed
while it is live, a summary or archived (``active OR compressed``); rolling it back removes it.
Archiving changes neither condition nor text, so it costs the triggers nothing.

The triggers call ``hermes_index_text`` (search.text.index_text), registered on every Django
SQLite connection. A connection without it (the sqlite3 shell) can read and back up the database
but cannot write messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from django.db.backends.base.base import BaseDatabaseWrapper

from search.text import index_text

MESSAGE_TABLE = "sessions_app_message"
INDEXES: dict[str, str] = {
    "words": "unicode61 remove_diacritics 2",
    "bigram": "unicode61 remove_diacritics 2",
    "trigram": "trigram",
}
INDEXED = "(%(row)s.active OR %(row)s.compressed)"
TEXT_CHANGED = "(old.content IS NOT new.content OR old.tool_calls IS NOT new.tool_calls)"


def table(index: str) -> str:
    return f"search_fts_{index}"


def register_functions(connection: BaseDatabaseWrapper) -> None:
    raw = connection.connection
    raw.create_function("hermes_index_text", 3, index_text, deterministic=True)


def _text(index: str, row: str) -> str:
    return f"hermes_index_text('{index}', {row}.content, {row}.tool_calls)"


def _insert(index: str, row: str, where: str) -> str:
    t = table(index)
    return f"INSERT INTO {t}(rowid, text) SELECT {row}.id, {_text(index, row)} WHERE {where};"


def _delete(index: str, row: str, where: str) -> str:
    t = table(index)
    return (
        f"INSERT INTO {t}({t}, rowid, text) "
        f"SELECT 'delete', {row}.id, {_text(index, row)} WHERE {where};"
    )


def create_statements() -> Iterator[str]:
    for index, tokenizer in INDEXES.items():
        yield (
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table(index)} USING fts5("
            f"text, content='', tokenize='{tokenizer}')"
        )
    old_indexed = INDEXED % {"row": "old"}
    new_indexed = INDEXED % {"row": "new"}
    on_insert = "".join(_insert(i, "new", new_indexed) for i in INDEXES)
    # One trigger per event, statements in a fixed order: the old text leaves before the new
    # text enters (trigger firing order between separate triggers is not guaranteed).
    on_update = "".join(
        _delete(i, "old", f"{old_indexed} AND (NOT {new_indexed} OR {TEXT_CHANGED})")
        for i in INDEXES
    ) + "".join(
        _insert(i, "new", f"{new_indexed} AND (NOT {old_indexed} OR {TEXT_CHANGED})")
        for i in INDEXES
    )
    on_delete = "".join(_delete(i, "old", old_indexed) for i in INDEXES)
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


def triggers_present(cursor) -> bool:
    cursor.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (%s, %s, %s)",
        list(TRIGGERS),
    )
    return cursor.fetchone()[0] == len(TRIGGERS)


def drop_statements() -> Iterator[str]:
    for trigger in TRIGGERS:
        yield f"DROP TRIGGER IF EXISTS {trigger}"
    for index in INDEXES:
        yield f"DROP TABLE IF EXISTS {table(index)}"


def install(cursor) -> None:
    """Create the indexes and triggers if missing and fill the indexes from the messages."""
    for statement in create_statements():
        cursor.execute(statement)
    rebuild(cursor)


def indexed_count(cursor) -> int:
    cursor.execute(f"SELECT count(*) FROM {MESSAGE_TABLE} WHERE active OR compressed")
    return cursor.fetchone()[0]


def rebuild(
    cursor, batch: int = 5_000, progress: Callable[[int], None] | None = None
) -> dict[str, int]:
    """Empty every index and re-add every indexed row, in id batches; returns rows per index."""
    for index in INDEXES:
        t = table(index)
        cursor.execute(f"INSERT INTO {t}({t}) VALUES('delete-all')")
    cursor.execute(f"SELECT coalesce(max(id), 0) FROM {MESSAGE_TABLE}")
    top = cursor.fetchone()[0]
    start = 0
    while start < top:
        end = start + batch
        for index in INDEXES:
            cursor.execute(
                f"INSERT INTO {table(index)}(rowid, text) "
                f"SELECT id, hermes_index_text('{index}', content, tool_calls) "
                f"FROM {MESSAGE_TABLE} WHERE id > %s AND id <= %s AND (active OR compressed)",
                [start, end],
            )
        if progress is not None:
            progress(min(end, top) - start)
        start = end
    return index_counts(cursor)


def index_counts(cursor) -> dict[str, int]:
    counts = {}
    for index in INDEXES:
        cursor.execute(f"SELECT count(*) FROM {table(index)}")
        counts[index] = cursor.fetchone()[0]
    return counts


def integrity_check(cursor) -> None:
    """FTS5's own structural check; raises django.db.DatabaseError on a corrupt index."""
    for index in INDEXES:
        t = table(index)
        cursor.execute(f"INSERT INTO {t}({t}) VALUES('integrity-check')")
