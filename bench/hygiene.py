"""The gateway hygiene check's cost against the size of the session (it must not grow).

    .venv/bin/python bench/hygiene.py [--sizes 100 10000 1000000] [--reads 2000]

For each size, one session of that many messages in a SQLite file (rows inserted with plain SQL;
that is not what is measured). Measured: the check a gateway runs before every inbound message --
read the session row, decide with ``compression.policy.hygiene.hygiene_needed`` (counters and the
threshold, no message scan, no network) -- as a median over ``--reads`` runs; beside it, the
baseline a counter-less design would need: recounting the session's messages and tokens.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _timing import median_us  # noqa: E402 - after the path is set


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 10_000, 1_000_000])
    parser.add_argument("--reads", type=int, default=2_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-hygiene-bench-") as tmp:
        config = Path(tmp) / "hermes.yaml"
        config.write_text(f"server:\n  data_dir: {tmp}\n", encoding="utf-8")
        os.environ["HERMES_CONFIG"] = str(config)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hermes_site.settings")
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection, transaction
        from django.utils import timezone

        from compression.policy.hygiene import hygiene_needed
        from search import fts
        from sessions_app.keys import create_channel
        from sessions_app.models import Session
        from sessions_app.services import recount

        call_command("migrate", verbosity=0)
        channel, _ = create_channel("bench")
        with connection.cursor() as cursor:  # the indexes are not what this measures
            for statement in fts.drop_statements():
                cursor.execute(statement)
        rows = []
        for size in args.sizes:
            sid = uuid.uuid4()
            now = timezone.now()
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO sessions_app_session (id, channel_id, title, model,"
                    " context_window, context_window_source, live_messages, live_tokens,"
                    " total_messages, compressions, next_position, failure_streak,"
                    " ineffective_streak, created_at, updated_at, last_activity_at) VALUES"
                    " (%s, %s, '', 'gpt-4o', 128000, 'catalog', %s, %s, %s, 0, %s, 0, 0, %s, %s,"
                    " %s)",
                    [sid.hex, channel.pk, size, size * 12, size, size, now, now, now],
                )
                batch = 50_000
                for start in range(0, size, batch):
                    cursor.executemany(
                        "INSERT INTO sessions_app_message (session_id, channel_id, position, role,"
                        " content, token_count, active, compressed, is_summary,"
                        " is_fallback_summary, created_at, rollback_reason) VALUES (%s, %s, %s,"
                        " 'user', %s, 12, 1, 0, 0, 0, %s, '')",
                        [
                            (sid.hex, channel.pk, p, f"message {p}", now)
                            for p in range(start, min(size, start + batch))
                        ],
                    )

            def check(sid=sid):
                return hygiene_needed(Session.objects.get(pk=sid))

            check()
            ours = median_us(check, args.reads)
            scan = median_us(
                lambda sid=sid: recount(Session(pk=sid)), max(5, args.reads // (1 + size // 1_000))
            )
            rows.append((size, ours, scan, check() is not None))

    print("Gateway hygiene check vs a recount (SQLite WAL file)\n")
    print(
        "| messages in the session | hygiene check µs (median) | forces compression "
        "| recount scan µs (median) |"
    )
    print("|---:|---:|:---:|---:|")
    for size, ours, scan, force in rows:
        print(f"| {size:,} | {ours:.1f} | {'yes' if force else 'no'} | {scan:,.0f} |")
    smallest, largest = rows[0], rows[-1]
    print(
        f"\nhygiene check, largest / smallest session: {largest[1] / smallest[1]:.2f}x "
        f"(recount: {largest[2] / smallest[2]:,.0f}x)"
    )


if __name__ == "__main__":
    main()
