"""``manage.py create_channel NAME``: a gateway channel and its bearer key, printed once."""

from __future__ import annotations

import re
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone

from sessions_app.audit import os_actor
from sessions_app.keys import InvalidScopes, create_channel, issue_key, parse_scopes
from sessions_app.models import ALL_SCOPES, Channel

UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str) -> timedelta:
    """``90d``, ``12h``, ``30m``, ``2w`` (a bare number is days)."""
    match = re.fullmatch(r"\s*(\d{1,6})\s*([mhdw]?)\s*", text.lower())
    if not match or int(match.group(1)) == 0:
        raise CommandError(
            f"--expires-in {text!r}: give a positive number with a unit, e.g. 90d, 12h, 30m or 2w."
        )
    return timedelta(**{UNITS[match.group(2) or "d"]: int(match.group(1))})


class Command(BaseCommand):
    help = "Create a gateway channel and print its bearer key (shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="Channel name, e.g. telegram or discord-ops.")
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--new-key",
            action="store_true",
            help="If the channel exists, issue it an additional key instead of failing.",
        )
        parser.add_argument("--label", default="", help="A note on who holds the new key.")
        parser.add_argument(
            "--scopes",
            default=ALL_SCOPES,
            help="What the key may do, comma-separated: read (sessions, messages, context, "
            "search), write (open, append, rollback, turn), operate (compress, reset). "
            "Default: all three.",
        )
        parser.add_argument(
            "--expires-in",
            default=None,
            help="The key stops working after this long: 90d, 12h, 30m, 2w. Default: never.",
        )

    def handle(
        self,
        *args,
        name: str,
        description: str,
        new_key: bool,
        label: str,
        scopes: str,
        expires_in: str | None,
        **options,
    ):
        name = name.strip()
        if not name or len(name) > 100:
            raise CommandError("NAME must be 1 to 100 characters.")
        try:
            scopes = parse_scopes(scopes)
        except InvalidScopes as exc:
            raise CommandError(f"--scopes: {exc}.") from None
        expires_at = timezone.now() + parse_duration(expires_in) if expires_in else None
        actor = os_actor()
        with transaction.atomic():
            channel = Channel.objects.filter(name=name).first()
            if channel is not None and not new_key:
                raise CommandError(
                    f"Channel {name!r} exists. Use --new-key to issue it another key."
                )
            if channel is None:
                channel, issued = create_channel(
                    name, description, scopes=scopes, expires_at=expires_at, actor=actor
                )
            else:
                issued = issue_key(
                    channel, label=label, scopes=scopes, expires_at=expires_at, actor=actor
                )
        self.stdout.write(f"Channel: {channel.name}")
        self.stdout.write(f"Scopes: {issued.api_key.scopes}")
        if expires_at is not None:
            self.stdout.write(f"Expires: {expires_at:%Y-%m-%d %H:%M} UTC")
        self.stdout.write(f"Key (shown once, store it now): {issued.plaintext}")
