"""``manage.py export_sessions [--channel NAME] [--session ID] OUT``: JSON Lines out."""

from __future__ import annotations

import sys
import uuid

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import QuerySet

from core.text import counted
from sessions_app.models import Session
from sessions_app.services.export import export_lines


class Command(BaseCommand):
    help = (
        "Write sessions as JSON Lines: a line per session (title, model, counters, guards, "
        "memory blocks), one per message with its kind, position, state, summary provenance "
        "and timestamps, one per compression event. import_sessions restores it. OUT is a "
        "file path, or - for standard output."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out", help="file to write, or - for standard output")
        parser.add_argument("--channel", help="only this channel's sessions")
        parser.add_argument(
            "--session", action="append", help="a session's id or external id (repeatable)"
        )

    def handle(self, *args, out: str, channel: str | None, session: list[str] | None, **options):
        sessions: QuerySet[Session] | list[Session]
        sessions = Session.objects.select_related("channel").order_by("created_at", "id")
        if channel:
            sessions = sessions.filter(channel__name=channel)
            if not sessions.exists():
                raise CommandError(f"no sessions on a channel named {channel!r}")
        if session:
            chosen = []
            for key in session:
                match = _find(sessions, key)
                if match is None:
                    raise CommandError(f"no session with id or external id {key!r}")
                chosen.append(match)
            sessions = chosen
        written = 0
        stream = sys.stdout if out == "-" else None
        try:
            handle = stream or open(out, "w", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise CommandError(f"{out}: cannot be written ({exc.strerror})") from None
        try:
            for line in export_lines(sessions):
                handle.write(line)
                written += line.startswith('{"type": "message"')
        finally:
            if stream is None:
                handle.close()
        if out != "-":
            self.stderr.write(f"Wrote {counted(written, 'message')} to {out}")


def _find(sessions, key: str) -> Session | None:
    try:
        match = sessions.filter(pk=uuid.UUID(key)).first()
    except ValueError:
        match = None
    return match or sessions.filter(external_id=key).first()
