"""``manage.py create_channel NAME``: a gateway channel and its bearer key, printed once."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from sessions_app.keys import create_channel, issue_key
from sessions_app.models import Channel


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

    def handle(self, *args, name: str, description: str, new_key: bool, label: str, **options):
        name = name.strip()
        if not name or len(name) > 100:
            raise CommandError("NAME must be 1 to 100 characters.")
        with transaction.atomic():
            channel = Channel.objects.filter(name=name).first()
            if channel is not None and not new_key:
                raise CommandError(
                    f"Channel {name!r} exists. Use --new-key to issue it another key."
                )
            if channel is None:
                channel, issued = create_channel(name, description)
            else:
                issued = issue_key(channel, label=label)
        self.stdout.write(f"Channel: {channel.name}")
        self.stdout.write(f"Key (shown once, store it now): {issued.plaintext}")
