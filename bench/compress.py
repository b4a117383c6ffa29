"""Compression write-back cost against raw SQL doing the same rows, on a real SQLite file.

    .venv/bin/python bench/compress.py [--sizes 1000 10000 100000]

For each size: two identical sessions. One is compressed by the engine against the loopback test
model server, which answers at once, so the model call costs nothing; the other gets the same
change from hand-written SQL (one UPDATE archiving the middle, one INSERT of the summary, one
UPDATE of the counters, in one transaction). Both fire the same search-index triggers. Reported:
the engine's write-back transaction alone, the whole engine run (selection, prompt, HTTP, write-
back), and the raw SQL, with the ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _setup(data_dir: Path, base_url: str) -> None:
    config = data_dir / "hermes.yaml"
    config.write_text(
        f"server:\n  data_dir: {data_dir}\n"
        f"auxiliary:\n  compression:\n    model: bench\n    base_url: {base_url}\n"
        "compression:\n  max_attempts: 1\n",
        encoding="utf-8",
    )
    os.environ["HERMES_CONFIG"] = str(config)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hermes_site.settings")
    import django

    django.setup()


def _session(channel, size: int):
    """A session of ``size`` messages, inserted with plain SQL (this is not what is measured)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from sessions_app.models import Session

    now = timezone.now()
    sid = uuid.uuid4()
    rows = [
        (
            sid.hex,
            channel.pk,
            p,
            "user" if p % 2 == 0 else "assistant",
            f"message {p}: the deploy of build {p % 97} needs a cache flush 缓存刷新",
            20,
            now,
        )
        for p in range(size)
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO sessions_app_session (id, channel_id, title, model, context_window,"
            " context_window_source, live_messages, live_tokens, total_messages, compressions,"
            " next_position, failure_streak, ineffective_streak, created_at, updated_at,"
            " last_activity_at) VALUES (%s, %s, '', 'gpt-4o', 128000, 'catalog', %s, %s, %s, 0,"
            " %s, 0, 0, %s, %s, %s)",
            [sid.hex, channel.pk, size, size * 20, size, size, now, now, now],
        )
        cursor.executemany(
            "INSERT INTO sessions_app_message (session_id, channel_id, position, role, content,"
            " token_count, active, compressed, is_summary, is_fallback_summary, created_at,"
            " rollback_reason) VALUES (%s, %s, %s, %s, %s, %s, 1, 0, 0, 0, %s, '')",
            rows,
        )
    return Session.objects.get(pk=sid)


def _raw(session, first: int, last: int) -> float:
    from django.db import connection, transaction
    from django.utils import timezone

    now = timezone.now()
    t0 = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO sessions_app_message (session_id, channel_id, position, role, content,"
            " token_count, active, compressed, is_summary, is_fallback_summary,"
            " covers_from_position, covers_to_position, created_at, rollback_reason) VALUES"
            " (%s, %s, %s, 'user', %s, 100, 1, 0, 1, 0, %s, %s, %s, '')",
            [session.pk.hex, session.channel_id, first, "summary " * 50, first, last, now],
        )
        summary_id = cursor.lastrowid
        cursor.execute(
            "UPDATE sessions_app_message SET active = 0, compressed = 1,"
            " archive_reason = 'compression', archived_at = %s, summarized_by_id = %s"
            " WHERE session_id = %s AND active = 1 AND position BETWEEN %s AND %s AND id != %s",
            [now, summary_id, session.pk.hex, first, last, summary_id],
        )
        archived = cursor.rowcount
        cursor.execute(
            "UPDATE sessions_app_session SET live_messages = live_messages - %s + 1,"
            " live_tokens = live_tokens - %s + 100, total_messages = total_messages + 1,"
            " compressions = compressions + 1 WHERE id = %s",
            [archived, archived * 20, session.pk.hex],
        )
    return time.perf_counter() - t0


def run(size: int) -> None:
    from compression.testing.fake_model import FakeModelServer, Reply

    with (
        tempfile.TemporaryDirectory(prefix="hermes-compress-bench-") as tmp,
        FakeModelServer() as server,
    ):
        server.script.default = Reply("## Goal\nBenchmark summary.", chunks=1)
        _setup(Path(tmp), server.base_url)
        from django.core.management import call_command

        from compression.engine import compress as engine
        from sessions_app import tokens
        from sessions_app.keys import create_channel
        from sessions_app.models import Message

        call_command("migrate", verbosity=0)
        tokens.count_message({"role": "user", "content": "warm up"}, "gpt-4o")  # load encodings
        channel, _ = create_channel("bench")
        ours, baseline = _session(channel, size), _session(channel, size)

        timings = {}
        real_write_back = engine._write_back

        def timed_write_back(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return real_write_back(*args, **kwargs)
            finally:
                timings["write_back"] = time.perf_counter() - t0

        engine._write_back = timed_write_back
        t0 = time.perf_counter()
        result = engine.compress(ours)
        whole = time.perf_counter() - t0
        engine._write_back = real_write_back
        assert result.outcome == "compressed", result.outcome
        summary = Message.objects.get(session=ours, is_summary=True)
        archived = result.events[0].rows_archived
        raw = _raw(baseline, summary.covers_from_position, summary.covers_to_position)
        assert Message.objects.filter(session=baseline, compressed=True).count() == archived

    wb = timings["write_back"]
    print(
        f"| {size:>9,} | {archived:>9,} | {wb * 1000:>10.1f} | {whole * 1000:>10.1f} "
        f"| {raw * 1000:>9.1f} | {wb / raw:>6.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run(args.sizes[0])
        return
    print("Compression write-back vs raw SQL (SQLite WAL file, search triggers on)\n")
    print("| messages | archived | write-back ms | whole run ms | raw SQL ms | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:  # Django is set up once per process: one process per size
        sys.stdout.flush()
        subprocess.run([sys.executable, __file__, "--child", "--sizes", str(size)], check=True)


if __name__ == "__main__":
    main()
