"""``manage.py import_sessions FILE.jsonl``: restore what ``export_sessions`` wrote, into this
instance (SQLite or PostgreSQL, whichever the export came from)."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.text import counted
from sessions_app.services.restore import RestoreError, restore


class Command(BaseCommand):
    help = (
        "Restore sessions from an export_sessions file (or - for standard input): each with "
        "its id, rows, provenance, pins, memory blocks and compression events. A session "
        "already here is left as it is."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="a file export_sessions wrote, or - for standard input")

    def handle(self, *args, file: str, **options) -> None:
        try:
            handle = sys.stdin if file == "-" else open(file, encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise CommandError(f"{file}: cannot be read ({exc.strerror})") from None
        try:
            done = restore(handle)
        except RestoreError as exc:
            raise CommandError(f"{file}: {exc}; the sessions before it are restored") from None
        except UnicodeDecodeError:
            raise CommandError(f"{file}: not UTF-8 text; is it an export_sessions file?") from None
        finally:
            if handle is not sys.stdin:
                handle.close()
        for name in done.channels_created:
            self.stdout.write(
                f"Created channel {name} (no key yet: manage.py create_channel {name} --new-key)"
            )
        for line in done.skipped:
            self.stdout.write(f"Skipped {line}")
        extras = ", ".join(counted(n, kind) for kind, n in sorted(done.extras.items()))
        self.stdout.write(
            f"Restored {counted(done.sessions, 'session')} and "
            f"{counted(done.messages, 'message')}" + (f" ({extras})" if extras else "") + "."
        )
