"""Append throughput and counter-read cost, on a real SQLite file with the service's settings.

    .venv/bin/python bench/append.py [--messages 100000] [--batch 50]

Measures, in one run:
* appending N messages to one session through the service layer (validation, token counting,
  counters, one transaction per batch), against a baseline of raw ``bulk_create`` of the same rows
  with none of that;
* reading the per-session counters at 100 and at N messages, against a baseline of recounting by
  scanning the rows. The counter read must not grow with the session; the scan does.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _timing import median_us, setup_service  # noqa: E402 - after the path is set


def _messages(start: int, count: int) -> list[dict]:
    out = []
    for i in range(start, start + count):
        if i % 2 == 0:
            out.append({"role": "user", "content": f"Question {i}: 为什么 migration {i} 失败了?"})
        else:
            out.append(
                {"role": "assistant", "content": f"Answer {i}: the column default was missing."}
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--reads", type=int, default=2_000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        setup_service(Path(tmp))
        from django.db import transaction

        from sessions_app import tokens
        from sessions_app.keys import create_channel
        from sessions_app.models import Message, Session
        from sessions_app.services import append_messages, open_session, recount

        channel, _ = create_channel("bench")
        session = open_session(channel, model="gpt-4o").session
        baseline_session = open_session(channel, model="gpt-4o").session

        def read_counters() -> int:
            return Session.objects.only("live_messages").get(pk=session.pk).live_messages

        def scan() -> int:
            return recount(Session(pk=session.pk)).live_messages

        # Warm up encodings so the first batch does not pay for loading them.
        tokens.count_message({"role": "user", "content": "warm"}, "gpt-4o")

        written = 0
        rows_small = {}
        append_start = time.perf_counter()
        while written < args.messages:
            count = min(args.batch, args.messages - written)
            append_messages(session, _messages(written, count))
            written += count
            if written == 100:
                append_start_pause = time.perf_counter()
                rows_small["read"] = median_us(read_counters, args.reads)
                rows_small["scan"] = median_us(scan, max(50, args.reads // 20))
                append_start += time.perf_counter() - append_start_pause
        append_seconds = time.perf_counter() - append_start

        base_start = time.perf_counter()
        for start in range(0, args.messages, args.batch):
            batch = _messages(start, min(args.batch, args.messages - start))
            with transaction.atomic():
                Message.objects.bulk_create(
                    Message(
                        session=baseline_session,
                        channel_id=baseline_session.channel_id,
                        position=start + i,
                        role=m["role"],
                        content=m["content"],
                    )
                    for i, m in enumerate(batch)
                )
        base_seconds = time.perf_counter() - base_start

        read_large = median_us(read_counters, args.reads)
        scan_large = median_us(scan, max(20, args.reads // 100))
        assert read_counters() == args.messages == recount(session).live_messages
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    n = args.messages
    print(f"Append benchmark: {n:,} messages, batches of {args.batch}, SQLite WAL file\n")
    print(f"| {'measure':<48} | {'value':>14} |")
    print(f"|{'-' * 50}|{'-' * 16}|")
    rows = [
        ("service append, messages/s", f"{n / append_seconds:,.0f}"),
        ("baseline raw bulk_create, messages/s", f"{n / base_seconds:,.0f}"),
        ("service cost vs baseline (x)", f"{append_seconds / base_seconds:.2f}"),
        ("counter read at 100 messages, µs (median)", f"{rows_small['read']:.1f}"),
        (f"counter read at {n:,} messages, µs (median)", f"{read_large:.1f}"),
        ("counter read growth 100 -> N (x)", f"{read_large / rows_small['read']:.2f}"),
        ("baseline recount scan at 100, µs", f"{rows_small['scan']:.1f}"),
        (f"baseline recount scan at {n:,}, µs", f"{scan_large:.1f}"),
        ("recount scan growth 100 -> N (x)", f"{scan_large / rows_small['scan']:.1f}"),
        (f"counter read vs scan at {n:,} (x faster)", f"{scan_large / read_large:.0f}"),
        ("peak RSS, MiB", f"{peak_mib:.0f}"),
    ]
    for label, value in rows:
        print(f"| {label:<48} | {value:>14} |")


if __name__ == "__main__":
    main()
