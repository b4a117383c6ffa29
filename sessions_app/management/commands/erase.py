"""``manage.py erase``: delete a person's conversations on request (the only deletion path
besides the session admin's "Erase" action). See docs/operations.md, Erasure."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.text import counted
from sessions_app.audit import os_actor
from sessions_app.services import erase
from sessions_app.services.errors import NotFound, StateConflict

CONFIRM_WORD = "erase"


class Command(BaseCommand):
    help = (
        "Erase sessions for good (with their continuations, every message and every row "
        "hanging off them) from the database and every search index; an audit entry records "
        "who, when, what scope and how many rows, never the content."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--session", action="append", default=[], metavar="ID", help="A session id (repeat)."
        )
        parser.add_argument("--external-id", help="The id a gateway opened the session with.")
        parser.add_argument("--channel", help="The channel of --external-id.")
        parser.add_argument(
            "--resume", action="store_true", help="Finish erasures a crash interrupted."
        )
        parser.add_argument(
            "--yes", action="store_true", help="Do not ask; erase what is listed at once."
        )
        parser.add_argument(
            "--batch",
            type=int,
            default=erase.BATCH,
            help=f"Messages per write transaction (default {erase.BATCH:,}).",
        )

    def handle(self, *args, **options) -> None:
        batch = options["batch"]
        if not 1 <= batch <= 100_000:
            raise CommandError("--batch must be between 1 and 100,000.")
        if options["resume"]:
            return self._resume(batch)
        plan = self._plan(options)
        for line in plan.describe():
            self.stdout.write(line)
        if not options["yes"]:
            self._confirm()
        total = sum(plan.message_counts().values())
        done = 0

        def progress(n: int) -> None:
            nonlocal done
            done += n
            self.stderr.write(f"\r  {done:,} / {total:,} messages erased", ending="")

        try:
            entry = erase.erase(plan, os_actor(), batch=batch, progress=progress)
        except StateConflict as exc:
            raise CommandError(exc.message) from None
        if done:
            self.stderr.write("")
        self._report(entry)

    def _plan(self, options) -> erase.ErasePlan:
        sessions, external_id, channel = (
            options["session"],
            options["external_id"],
            options["channel"],
        )
        if sessions and (external_id or channel):
            raise CommandError("Give either --session or --external-id with --channel, not both.")
        if (external_id is None) != (channel is None):
            raise CommandError("--external-id and --channel go together.")
        if not sessions and external_id is None:
            raise CommandError(
                "Say what to erase: --session ID, or --external-id X --channel C "
                "(or --resume to finish an interrupted erasure)."
            )
        try:
            if sessions:
                return erase.plan_sessions(sessions)
            return erase.plan_external_id(channel, external_id)
        except NotFound as exc:
            raise CommandError(f"{exc.message} Nothing was deleted.") from None

    def _confirm(self) -> None:
        if not sys.stdin.isatty():
            raise CommandError(
                "No terminal to ask for confirmation: check the list above and run again with "
                "--yes. Nothing was deleted."
            )
        answer = input(f"This cannot be undone. Type '{CONFIRM_WORD}' to go ahead: ")
        if answer.strip() != CONFIRM_WORD:
            raise CommandError("Not confirmed. Nothing was deleted.")

    def _resume(self, batch: int) -> None:
        pending = erase.unfinished()
        if not pending:
            self.stdout.write("No unfinished erasure.")
            return
        for entry in pending:
            self.stdout.write(
                f"Resuming the erasure started {entry.created_at:%Y-%m-%d %H:%M} UTC by "
                f"{entry.actor} ({entry.target})."
            )
            try:
                self._report(erase.resume(entry, batch=batch))
            except StateConflict as exc:
                raise CommandError(exc.message) from None

    def _report(self, entry) -> None:
        deleted = dict(entry.details["deleted"])
        messages = deleted.pop("messages")
        self.stdout.write(
            self.style.SUCCESS(
                f"Erased {counted(deleted.pop('sessions'), 'session')} and "
                f"{counted(sum(messages.values()), 'message')} "
                f"({', '.join(f'{n:,} {kind}' for kind, n in messages.items())})"
                + "".join(f", {n:,} {name}" for name, n in deleted.items())
                + f". Audit entry #{entry.pk}."
            )
        )
