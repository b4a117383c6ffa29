"""``manage.py restore PATH``: put a backup back, with the service stopped."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from core.text import counted
from hermes_site.upkeep import backup


class Command(BaseCommand):
    help = (
        "Replace the database with a backup taken by manage.py backup. Stop the web server and "
        "the worker first. The file is verified before anything changes; on SQLite the old "
        "database is moved aside (DB.before-restore-TIME), never deleted."
    )
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="a file written by manage.py backup")
        parser.add_argument(
            "--force",
            action="store_true",
            help="restore even though other processes have the database open",
        )

    def handle(self, *args, path: str, force: bool, **options) -> None:
        source = Path(path).expanduser().absolute()
        db = settings.DATABASES["default"]
        try:
            if connection.vendor == "postgresql":
                verification = backup.pg_restore(source, db, force=force)
                aside = None
            else:
                connection.close()
                verification, aside = backup.sqlite_restore(source, Path(db["NAME"]), force=force)
        except backup.BackupError as exc:
            raise CommandError(f"restore failed: {exc}") from None
        for check in verification.checks:
            self.stdout.write(f"  ok  {check}")
        if aside is not None and aside.exists():
            self.stdout.write(f"The previous database was moved to {aside}.")
        self.stdout.write(
            f"Restored {source}: {counted(verification.messages, 'message')}, "
            f"{counted(verification.sessions, 'session')}. Run manage.py migrate if the backup "
            "is older than this version, then start the service."
        )
