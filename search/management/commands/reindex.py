"""``manage.py reindex``: rebuild every full-text index from the messages table and verify it."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connection, transaction
from tqdm import tqdm

from search import fts, pg, pg_trigram, ranked, ranked_schema, rows
from sessions_app.analyze import analyze


class Command(BaseCommand):
    help = "Rebuild every full-text index from the messages, then check integrity and counts."

    def handle(self, *args, **options) -> None:
        if connection.vendor == "postgresql":
            self._postgres()
        else:
            self._sqlite()
        # Scores kept for common queries came from the old indexes; lookups ask for new ones.
        with transaction.atomic(), connection.cursor() as cursor:
            ranked.clear(cursor)

    def _sqlite(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT coalesce(max(id), 0) FROM {fts.MESSAGE_TABLE}")
            top = cursor.fetchone()[0]
        # One transaction: searches keep seeing the old index until the new one is complete.
        with transaction.atomic(), connection.cursor() as cursor:
            with tqdm(total=top, unit="id", desc="reindex", file=self.stderr) as bar:
                counts = fts.rebuild(cursor, progress=bar.update)
            expected = fts.indexed_count(cursor)
            low = fts.floor(cursor)
        with connection.cursor() as cursor:
            try:
                fts.integrity_check(cursor)
            except DatabaseError as exc:
                raise CommandError(f"FTS5 integrity check failed: {exc}") from None
            wrong = fts.count_mismatches(cursor)
        if wrong:
            detail = ", ".join(f"{t} has {n:,} rows, expected {e:,}" for t, (n, e) in wrong.items())
            raise CommandError(f"Index row counts differ from the indexed messages: {detail}.")
        twins = (
            "the recent twins are off"
            if low is None
            else f"the messages after id {low:,} also into their recent twins"
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"Reindexed {expected:,} messages into {', '.join(counts)} ({twins}); "
                "integrity check passed."
            )
        )

    def _postgres(self) -> None:
        # PostgreSQL maintains the expression indexes itself; rebuilding is for a damaged or
        # bloated index, or after the functions behind them changed. CONCURRENTLY keeps the
        # table writable meanwhile (it cannot run inside a transaction block).
        with connection.cursor() as cursor:
            pg.install(cursor)  # recreate whatever is missing (functions, extensions, indexes)
            for statement in rows.page_function_statements(cursor.db):  # a page's reads
                cursor.execute(statement)
            for statement in pg_trigram.create_statements():  # a fragment's first step
                cursor.execute(statement)
            for statement in ranked_schema.function_statements():  # a query's first lookup
                cursor.execute(statement)
            names = list(pg.INDEX_NAMES.values())
            for name in tqdm(names, unit="index", desc="reindex", file=self.stderr):
                cursor.execute(f"REINDEX INDEX CONCURRENTLY {name}")
            invalid = pg.invalid_indexes(cursor)
            expected = pg.indexed_count(cursor)
        analyze()  # fresh statistics for the rebuilt indexes' tables
        with connection.cursor() as cursor:
            pg.refresh_common(cursor)  # and the common words read from them
        if invalid:
            raise CommandError(
                f"Indexes {', '.join(invalid)} are not valid after the rebuild; drop them and run "
                "reindex again."
            )
        self.stdout.write(
            self.style.SUCCESS(
                f"Reindexed {expected:,} messages into {', '.join(pg.INDEX_NAMES)}; "
                "integrity check passed (every index valid and ready)."
            )
        )
