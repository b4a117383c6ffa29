"""Bring a Hermes Agent home across: ``manage.py import_hermes ~/.hermes``."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from hermes_import.run import ImportError_, run


class Command(BaseCommand):
    help = (
        "Import a Hermes Agent home (a folder with state.db, config.yaml, memories/) or a "
        "state.db file. Re-running imports only what Hermes wrote since."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="a Hermes home folder or a state.db file")
        parser.add_argument("--channel", default="hermes", help="channel the sessions land in")
        parser.add_argument("--profile", help="import PATH/profiles/NAME/state.db instead")
        parser.add_argument(
            "--dry-run", action="store_true", help="say what would be imported; change nothing"
        )
        parser.add_argument(
            "--memories",
            action="store_true",
            help="make memories/MEMORY.md and USER.md the channel's memory blocks 'memory' and "
            "'user' (every session of the channel then carries them after its system prompt)",
        )

    def handle(self, *args, **options) -> None:
        bar = None

        def progress(done: int, total: int) -> None:
            nonlocal bar
            if bar is None:
                bar = tqdm(total=total, unit="conversation", file=self.stderr, disable=total < 50)
            bar.update(1)

        try:
            report = run(
                Path(options["path"]),
                channel_name=options["channel"],
                profile=options["profile"],
                dry_run=options["dry_run"],
                memories=options["memories"],
                progress=progress,
            )
        except ImportError_ as exc:
            raise CommandError(str(exc)) from None
        finally:
            if bar is not None:
                bar.close()
        for line in report.lines():
            self.stdout.write(line)
        if report.failed:
            raise CommandError(f"{len(report.failed)} conversations could not be imported")
