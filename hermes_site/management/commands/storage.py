"""``manage.py storage [--json]``: what the store occupies, and what it holds."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandParser

from hermes_site.upkeep.storage import KINDS, report


def size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


class Command(BaseCommand):
    help = (
        "Report the database's size, each table's, index's and search index's size, messages "
        "by kind (live, summary, archived, rolled back, notice) and by channel, and the "
        "compression events table. Counting reads the whole messages table once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", dest="as_json", help="one JSON document")
        parser.add_argument(
            "--all",
            action="store_true",
            dest="show_all",
            help="every table and index (default: the 20 largest)",
        )

    def handle(self, *args, as_json: bool, show_all: bool, **options) -> None:
        data = report()
        if as_json:
            self.stdout.write(json.dumps(data, indent=2))
            return
        out = self.stdout.write
        db = data["database"]
        if data["backend"] == "sqlite":
            out(
                f"Database {db['file']}: {size(db['bytes'])} "
                f"({size(db['free_bytes'])} free pages, WAL {size(db['wal_bytes'])})"
            )
        else:
            out(f"Database {db['name']} (PostgreSQL): {size(db['bytes'])}")
        out("")
        relations = data["relations"] if show_all else data["relations"][:20]
        out(f"{'size':>10}  {'kind':<12}  name (table)")
        for r in relations:
            on = f" ({r['table']})" if r["kind"] != "table" else ""
            out(f"{size(r['bytes']):>10}  {r['kind']:<12}  {r['name']}{on}")
        if not show_all and len(data["relations"]) > 20:
            out(f"{'':>10}  … {len(data['relations']) - 20} smaller (--all lists them)")
        out("")
        m = data["messages"]
        out(
            f"Messages: {m['messages']:,} — "
            + ", ".join(f"{m[k]:,} {k.replace('_', ' ')}" for k in KINDS)
        )
        header = f"{'channel':<24} {'sessions':>9} {'archived':>9} {'messages':>10}"
        out(header + "".join(f" {k.replace('_', ' '):>11}" for k in KINDS))
        for c in data["channels"]:
            line = (
                f"{c['channel'][:24]:<24} {c['sessions']:>9,} {c['archived_sessions']:>9,} "
                f"{c['messages']:>10,}"
            )
            out(line + "".join(f" {c[k]:>11,}" for k in KINDS))
        e = data["events"]
        out("")
        out(f"Compression events: {e['rows']:,} rows, {size(e['bytes'])} ({e['table']})")
        t = data["seconds"]
        out(f"Took {t['total']:.2f} s (sizes {t['sizes']:.2f} s, counting rows {t['rows']:.2f} s).")
