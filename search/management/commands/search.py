"""``manage.py search QUERY``: recall from the command line, across every channel."""

from __future__ import annotations

import json
import logging
import os
import re
from uuid import UUID

from django.core.management.base import BaseCommand, CommandError, CommandParser

from search.service import Filters, InvalidQuery, search

MARK = re.compile(r"</?mark>")


def _plain(html: str, style) -> str:
    from html import unescape

    parts = re.split(r"(<mark>.*?</mark>)", html)
    return "".join(
        style(unescape(MARK.sub("", p))) if p.startswith("<mark>") else unescape(p) for p in parts
    )


class Command(BaseCommand):
    help = "Search every live, summary and archived message (no LLM involved)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query", nargs="+", help='Words, "a phrase", prefix*.')
        parser.add_argument("--session", type=UUID)
        parser.add_argument("--role", choices=["system", "user", "assistant", "tool"])
        parser.add_argument("--kind", choices=["live", "summary", "archived"])
        parser.add_argument("--limit", type=int, default=10)
        parser.add_argument("--window", type=int, default=0)
        parser.add_argument(
            "--include-rolled-back", action="store_true", help="Also scan rolled-back rows."
        )
        parser.add_argument("--json", action="store_true", help="Print the API's JSON shape.")

    def handle(self, *args, **options) -> None:
        # A search queues its ranking refreshes; the queue's "Enqueued" lines are not output.
        queue_log = logging.getLogger("django-q")
        level = queue_log.level
        queue_log.setLevel(logging.WARNING)
        try:
            self._search(options)
        finally:
            queue_log.setLevel(level)

    def _search(self, options) -> None:
        filters = Filters(
            session_id=options["session"],
            role=options["role"],
            kind=options["kind"],
            include_rolled_back=options["include_rolled_back"],
        )
        if not 1 <= options["limit"] <= 100:
            raise CommandError("--limit must be between 1 and 100.")
        if not 0 <= options["window"] <= 20:
            raise CommandError("--window must be between 0 and 20.")
        text = " ".join(options["query"])
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # The shell passed bytes that are not UTF-8 (Python keeps them as lone surrogates).
            raw = os.fsencode(text)
            raise CommandError(
                f"The query is not valid UTF-8 ({raw!r}); check the terminal's encoding."
            ) from None
        try:
            result = search(
                text,
                filters,
                limit=options["limit"],
                window=options["window"],
            )
        except InvalidQuery as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            from ninja.responses import NinjaJSONEncoder

            from search.api import SearchOut, serialize

            # Through the API's own schema and encoder: the same fields, ISO 8601 times in UTC
            # with "Z", ids as strings.
            answer = SearchOut.model_validate(serialize(result, options["limit"], 0))
            self.stdout.write(
                json.dumps(answer.model_dump(), cls=NinjaJSONEncoder, ensure_ascii=False, indent=2)
            )
            return
        tried = " → ".join(result.tried) or "nothing: the query has no searchable text"
        if result.hits:
            source = f"the {result.index} index" if result.index else "the rolled-back rows"
            self.stdout.write(f"{len(result.hits)} hit(s) from {source}")
        else:
            self.stdout.write(f"No hits (tried {tried})")
        for hit in result.hits:
            m = hit.message
            flag = " [rolled back]" if hit.rolled_back else ""
            total = hit.bookmarks.start.of
            self.stdout.write(
                f"\n{hit.session.pk} #{m.position}/{total} {m.role} {m.kind}{flag} "
                f"{m.created_at:%Y-%m-%d %H:%M}"
            )
            self.stdout.write("  " + _plain(hit.excerpt_html, self.style.WARNING))
            for row in hit.window:
                if not row.is_hit:
                    self.stdout.write(f"    #{row.position} {row.role}: {row.lead[:100]}")
