"""Erasing a large session while a gateway keeps appending, on a real SQLite file.

    .venv/bin/python bench/erase.py [--messages 100000]

Fills two sessions of N messages each (one to erase, one that stays), starts a second process
that appends one message every 50 ms to a third session, erases the first session through the
service (sessions_app.services.erase, as ``manage.py erase`` does), and reports: the whole
erasure, the longest batch (its write transaction), the index purge after the batches, and the
appender's slowest append -- what a gateway waits while an erasure runs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _timing import setup_service  # noqa: E402 - after the path is set


def _fill(channel, n: int, label: str):
    from sessions_app.services import append_messages, open_session

    session = open_session(channel, model="gpt-4o", external_id=label).session
    for start in range(0, n, 2_000):
        rows = [
            {"role": "user", "content": f"message {i} about 数据库 migrations, {label} {i % 977}"}
            for i in range(start, min(n, start + 2_000))
        ]
        append_messages(session, rows, run_hooks=False)
    return session


def appender(seconds: float) -> None:
    """The second process: append every 50 ms for ``seconds``; print the slowest, in ms."""
    import django

    django.setup()
    from sessions_app.models import Channel
    from sessions_app.services import append_messages, open_session

    session = open_session(Channel.objects.get(name="bench"), model="gpt-4o").session
    slowest, end = 0.0, time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.perf_counter()
        append_messages(session, [{"role": "user", "content": "ping"}], run_hooks=False)
        slowest = max(slowest, time.perf_counter() - t0)
        time.sleep(0.05)
    print(f"{slowest * 1000:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--appender", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.appender is not None:
        return appender(args.appender)

    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        setup_service(Path(tmp))
        from sessions_app.keys import create_channel
        from sessions_app.services import erase

        channel, _ = create_channel("bench")
        t0 = time.perf_counter()
        victim = _fill(channel, args.messages, "victim")
        _fill(channel, args.messages, "other")
        print(f"filled 2 x {args.messages:,} messages in {time.perf_counter() - t0:.0f} s")

        plan = erase.plan_sessions([victim.pk])
        batches: list[float] = []
        real_batch = erase._delete_batch

        def timed_batch(*a, **kw) -> int:
            """One batch: its write transaction (and the pause after it)."""
            t = time.perf_counter()
            n = real_batch(*a, **kw)
            if n:
                batches.append(time.perf_counter() - t - erase.PAUSE_SECONDS)
            mark[0] = time.perf_counter()
            return n

        erase._delete_batch = timed_batch
        mark = [time.perf_counter()]

        budget = max(60.0, args.messages / 500)
        writer = subprocess.Popen(
            [sys.executable, __file__, "--appender", str(budget)],
            env=os.environ.copy(),
            stdout=subprocess.PIPE,
            text=True,
        )
        time.sleep(3)  # the appender is writing
        started = time.perf_counter()
        erase.erase(plan, "bench")
        total = time.perf_counter() - started
        purge = time.perf_counter() - mark[0]
        slowest_append = writer.communicate(timeout=budget + 120)[0].strip()
        print(f"erased {args.messages:,} messages in {total:.1f} s: {len(batches)} batches")
        median = sorted(batches)[len(batches) // 2]
        print(f"  longest batch {max(batches):.2f} s, median {median:.2f} s")
        print(f"  the last step and the index purge after the batches: {purge:.1f} s")
        print(f"  the appender's slowest append beside it: {slowest_append} ms")


if __name__ == "__main__":
    main()
