"""``manage.py reindex``: rebuild the three FTS5 indexes from the messages table and verify them."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connection, transaction
from tqdm import tqdm

from search import fts


class Command(BaseCommand):
    help = "Rebuild every full-text index from the messages, then check FTS5 integrity and counts."

    def handle(self, *args, **options) -> None:
        if connection.vendor != "sqlite":
            raise CommandError(
                f"reindex rebuilds SQLite FTS5 indexes; this is {connection.vendor}."
            )
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT coalesce(max(id), 0) FROM {fts.MESSAGE_TABLE}")
            top = cursor.fetchone()[0]
        # One transaction: searches keep seeing the old index until the new one is complete.
        with transaction.atomic(), connection.cursor() as cursor:
            with tqdm(total=top, unit="id", desc="reindex", file=self.stderr) as bar:
                counts = fts.rebuild(cursor, progress=bar.update)
            expected = fts.indexed_count(cursor)
        with connection.cursor() as cursor:
            try:
                fts.integrity_check(cursor)
            except DatabaseError as exc:
                raise CommandError(f"FTS5 integrity check failed: {exc}") from None
        wrong = {name: n for name, n in counts.items() if n != expected}
        if wrong:
            raise CommandError(f"Index row counts {wrong} differ from {expected} indexed messages.")
        self.stdout.write(
            self.style.SUCCESS(
                f"Reindexed {expected:,} messages into {', '.join(counts)}; integrity check passed."
            )
        )
