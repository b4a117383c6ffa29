"""``manage.py setup_demo``: an operator login, a demo channel key and demo conversations.

The long conversation is lived through the automatic triggers at the times it tells of
(``compression.demo``), so it arrives compressed as it would have been; the short one is loaded
as an import of past history. Safe to run again: existing users, channels and demo sessions
are kept; each run issues a fresh demo key (older ones stay valid) because a key's plaintext can
only ever be shown once.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction
from django.utils import timezone

from compression.demo import play
from sessions_app.demo.conversation import build_demo_conversation, build_small_conversation
from sessions_app.keys import issue_key
from sessions_app.models import Channel, Message, Session
from sessions_app.services import append_messages, open_session

DEMO_CHANNEL = "demo"
BATCH = 200
DEMO_DAYS = 14  # the long conversation is two weeks of work; the short one, a day
# The long conversation's gateway caps its model's context at 32K tokens (declared, as a gateway
# may): its ~130K tokens then cross the threshold several times as it grows.
DEMO_WINDOW = 32_768


def _spread_over(session: Session, days: float) -> None:
    """Date the loaded messages as the history they are: evenly over the last ``days``, in
    order, the newest now (the timeline and its token chart then show two weeks, not a
    second)."""
    rows = list(Message.objects.filter(session=session).order_by("position").only("id"))
    if len(rows) < 2:
        return
    end = timezone.now()
    start = end - timedelta(days=days)
    step = (end - start) / (len(rows) - 1)
    for i, row in enumerate(rows):
        row.created_at = start + step * i
    Message.objects.bulk_update(rows, ["created_at"], batch_size=500)
    Session.objects.filter(pk=session.pk).update(created_at=start, last_activity_at=end)


class Command(BaseCommand):
    help = "Create an operator login, a demo channel key and load demo conversations."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="operator")

    def handle(self, *args, username: str, **options) -> None:
        lines = [self._operator(username), *self._channel_key()]
        for external_id, build in (
            ("demo-main", build_demo_conversation),
            ("demo-small", build_small_conversation),
        ):
            lines.append(self._load(external_id, build()))
        width = max(len(line) for line in lines) + 4
        self.stdout.write("=" * width)
        for line in lines:
            self.stdout.write(f"  {line}")
        self.stdout.write("=" * width)

    def _operator(self, username: str) -> str:
        users = get_user_model()
        if users.objects.filter(username=username).exists():
            return (
                f"Operator login: {username} (exists; forgot the password? "
                f"manage.py changepassword {username})"
            )
        password = secrets.token_urlsafe(12)
        users.objects.create_superuser(username=username, email="", password=password)
        return f"Operator login (shown once): {username} / {password}"

    def _channel_key(self) -> list[str]:
        with transaction.atomic():
            channel, _ = Channel.objects.get_or_create(
                name=DEMO_CHANNEL, defaults={"description": "Demo gateway created by setup_demo"}
            )
            issued = issue_key(channel, label="setup_demo")
        return [f"Demo channel key (shown once): {issued.plaintext}"]

    def _load(self, external_id: str, conversation: dict) -> str:
        channel = Channel.objects.get(name=DEMO_CHANNEL)
        existing = Session.objects.filter(channel=channel, external_id=external_id).first()
        if existing is not None:
            return f"Demo session {existing.id} already loaded ({existing.total_messages} messages)"
        if external_id == "demo-main":
            session = open_session(
                channel,
                model=conversation["model"],
                context_window=DEMO_WINDOW,
                system_prompt=conversation["system_prompt"],
                title=conversation["title"],
                external_id=external_id,
            ).session
            # Turn by turn, each its own transaction, so the triggers' tasks run as they would.
            play(session, conversation["messages"], days=DEMO_DAYS)
            session.refresh_from_db()
            return (
                f"Demo session {session.id}: {session.total_messages} messages, "
                f"{session.compressions} compressions, {session.live_tokens:,} live tokens"
            )
        with transaction.atomic():
            session = open_session(
                channel,
                model=conversation["model"],
                system_prompt=conversation["system_prompt"],
                title=conversation["title"],
                external_id=external_id,
            ).session
            messages = conversation["messages"]
            for start in range(0, len(messages), BATCH):
                # An import of past history, not a live conversation: no automatic triggers.
                append_messages(session, messages[start : start + BATCH], run_hooks=False)
            _spread_over(session, 1)
        return (
            f"Demo session {session.id}: {session.total_messages} messages, "
            f"{session.live_tokens:,} tokens"
        )
