"""``manage.py backup PATH``: a consistent, verified copy of the store while the service runs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from tqdm import tqdm

from core.text import counted
from hermes_site.upkeep import backup


class Command(BaseCommand):
    help = (
        "Copy the database to PATH while the service runs (SQLite's online backup API, or "
        "pg_dump's custom format on PostgreSQL), then verify the copy: integrity, search "
        "indexes, and the rows of messages and sessions against the source at the snapshot."
    )
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the file to write (must not exist yet)")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, path: str, no_progress: bool, **options) -> None:
        target = Path(path).expanduser().absolute()
        db = settings.DATABASES["default"]
        try:
            partial = backup.check_destination(target)
            try:
                if connection.vendor == "postgresql":
                    expected = backup.pg_backup(partial, db)
                    self.stderr.write("Verifying the dump…")
                    verification = backup.verify_pg(partial, backup.pg_env(db), expected)
                else:
                    expected = self._sqlite(Path(db["NAME"]), partial, no_progress, db)
                    verification = backup.verify_sqlite(partial, expected, shown=target)
            except BaseException:
                partial.unlink(missing_ok=True)
                raise
            backup.publish(partial, target)
        except backup.BackupError as exc:
            raise CommandError(f"backup failed: {exc}") from None
        for check in verification.checks:
            self.stdout.write(f"  ok  {check}")
        size = target.stat().st_size
        self.stdout.write(
            f"Backup written to {target} ({size / 1_048_576:.1f} MiB): "
            f"{counted(verification.messages, 'message')}, "
            f"{counted(verification.sessions, 'session')}."
        )

    def _sqlite(self, source: Path, partial: Path, quiet: bool, db: Mapping) -> tuple[int, int]:
        if not source.is_file():
            raise backup.BackupError(f"no database at {source}: nothing to back up")
        bars: list[tqdm] = []

        def progress(done: int, total: int) -> None:
            if not bars:  # the number of pages is known from the first step
                bars.append(
                    tqdm(total=total, unit="page", desc="Copying", disable=quiet, file=self.stderr)
                )
            bars[0].total = total
            bars[0].update(done - bars[0].n)

        try:
            timeout = float(db.get("OPTIONS", {}).get("timeout", 20))
            return backup.sqlite_backup(source, partial, progress, timeout=timeout)
        finally:
            for bar in bars:
                bar.close()
