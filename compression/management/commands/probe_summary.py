"""``manage.py probe_summary EVENT [--questions N]``: ask the summariser questions only the
originals can answer, from the summary alone, and check its answers (compression.engine.probe)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from compression.engine.probe import probe
from compression.models import CompressionEvent
from sessions_app.services import ServiceError


class Command(BaseCommand):
    help = (
        "Probe the summary a compression event wrote: N fill-in-the-blank questions built from "
        "the originals, answered by the summary model from the summary alone, checked against "
        "the originals. The result is stored on the event. It calls the model once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("event", type=int, help="Compression event id (the console shows it).")
        parser.add_argument(
            "--questions",
            type=int,
            help="How many questions (default compression.scoring.probe_questions).",
        )

    def handle(self, *args, event: int, questions: int | None, **options):
        if questions is not None and not 1 <= questions <= 50:
            raise CommandError("--questions must be between 1 and 50.")
        found = CompressionEvent.objects.filter(pk=event).first()
        if found is None:
            raise CommandError(f"No compression event {event}.")
        try:
            result = probe(found, questions)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        for n, q in enumerate(result["questions"], 1):
            mark = "right" if q["correct"] else "wrong"
            scored = "missed by the score" if q["missed_by_score"] else "kept by the score"
            self.stdout.write(
                f"{n}. [{mark}; {scored}] {q['question']}\n   expected {q['item']!r}, "
                f"answered {q['answer'] or 'UNKNOWN'!r}"
            )
        self.stdout.write(
            f"event {event}: {result['correct']} of {result['asked']} answered from the summary "
            f"({result['model']})" + (f" [{result['error']}]" if result["error"] else "")
        )
