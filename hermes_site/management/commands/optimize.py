"""``manage.py optimize``: merge the search indexes' segments and refresh planner statistics."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError
from tqdm import tqdm

from hermes_site.upkeep.storage import optimize_steps


class Command(BaseCommand):
    help = (
        "SQLite: merge each FTS5 index (and its recent twin) into one segment, then ANALYZE and "
        "PRAGMA optimize. PostgreSQL: VACUUM ANALYZE every table of the service. Safe while the "
        "service runs: on SQLite the indexes are merged in short transactions."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, no_progress: bool, **options) -> None:
        steps = list(optimize_steps())
        timings = []
        with tqdm(total=len(steps), unit="step", disable=no_progress, file=self.stderr) as bar:
            for label, run in steps:
                bar.set_description(label)
                started = time.perf_counter()
                held: list[float] = []

                def tick(seconds: float, held: list[float] = held) -> None:
                    held.append(seconds)
                    if len(held) > 1:
                        bar.set_postfix_str(f"{len(held)} transactions")

                try:
                    run(tick)
                except DatabaseError as exc:
                    raise CommandError(f"{label} failed: {exc}") from None
                timings.append((label, time.perf_counter() - started, held))
                bar.update()
        for label, seconds, held in timings:
            more = (
                f" ({len(held)} transactions, the longest {max(held) * 1000:.0f} ms)"
                if len(held) > 1
                else ""
            )
            self.stdout.write(f"  {seconds:7.2f} s  {label}{more}")
        total = sum(seconds for _, seconds, _ in timings)
        self.stdout.write(f"Optimized in {total:.1f} s ({len(steps)} steps).")
