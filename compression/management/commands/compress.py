"""``manage.py compress SESSION [--around POSITION] [--focus TEXT] [--confirm]``: manual
compression now."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from compression.engine.compress import AlreadyRunning, compress
from compression.models import CompressionEvent
from compression.policy.triggers import check_around
from sessions_app.services import NotFound, get_session_for_channel


class Command(BaseCommand):
    help = "Compress a session now (ignores cooldown and anti-thrash), in this process."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session", help="Session id.")
        parser.add_argument("--around", type=int, help="Compress only near this position.")
        parser.add_argument("--focus", help="Topic the summary should keep in most detail.")
        parser.add_argument(
            "--confirm",
            action="store_true",
            help="Compress even if a pre-compact hook fails (compression.checkpoint_required).",
        )

    def handle(
        self,
        *args,
        session: str,
        around: int | None,
        focus: str | None,
        confirm: bool = False,
        **options,
    ):
        try:
            target = get_session_for_channel(None, session)
        except NotFound as exc:
            raise CommandError(exc.message) from None
        try:
            check_around(target, around)
        except NotFound as exc:
            raise CommandError(exc.message) from None
        try:
            result = compress(
                target,
                trigger=CompressionEvent.Trigger.MANUAL_CLI,
                focus=focus,
                around_position=around,
                confirmed=confirm,
            )
        except AlreadyRunning as exc:
            raise CommandError(exc.message) from None
        for n, step in enumerate(result.passes, 1):
            event = step.event
            saved = ""
            if event.tokens_after is not None and event.tokens_before:
                saved = f", {event.tokens_before:,} -> {event.tokens_after:,} tokens"
            self.stdout.write(
                f"pass {n}: {step.outcome}{saved}, {event.rows_archived} rows archived"
                + (
                    f", kept {event.salient_kept} of {event.salient_items} salient items"
                    if event.retention is not None
                    else ""
                )
                + (f" ({event.reason})" if event.reason else "")
                + (f" [{event.error}]" if event.error else "")
            )
        if result.needs_confirmation:
            raise CommandError(
                "The pre-compact checkpoint failed and compression.checkpoint_required is set, "
                "so nothing was changed; run again with --confirm to compress without it."
            )
        if result.continued_in:
            self.stdout.write(f"continued in session {result.continued_in.pk}")
        self.stdout.write(
            f"session {target.pk}: {result.session.live_messages} live messages, "
            f"{result.session.live_tokens:,} live tokens"
        )
