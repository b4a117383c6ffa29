"""``manage.py archive_idle [--dry-run]``: what the daily retention task does, now."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from core.text import counted
from sessions_app.upkeep.retention import archive_idle


class Command(BaseCommand):
    help = (
        "Archive live sessions idle for retention.archive_idle_days (or their channel's "
        "override): hidden from the default session lists, every message kept and searchable, "
        "brought back by the next append. Never deletes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="count the sessions, archive nothing"
        )

    def handle(self, *args, dry_run: bool, **options) -> None:
        results = archive_idle(dry_run=dry_run)
        if not results:
            self.stdout.write(
                "Retention is off: set retention.archive_idle_days (or a channel's entry under "
                "retention.channels) to a number of days."
            )
            return
        verb = "would archive" if dry_run else "archived"
        for r in results:
            self.stdout.write(
                f"{r.channel}: {verb} {counted(r.idle, 'session')} idle for more than "
                f"{counted(r.days, 'day')}"
            )
        total = sum(r.idle for r in results)
        self.stdout.write(f"In all: {verb} {counted(total, 'session')}.")
