"""Reading the live context and appending a tool result, with a small and a huge archive.

    .venv/bin/python bench/context.py [--archived 1000 1000000] [--live 1200] [--repeat 200]
                                      [--backend both|sqlite|postgres]

Two sessions with the same live rows (about ``--live``: turns with tool calls and results) and
different archives (``--archived`` rows each, archived as a compression leaves them). Measured in
one run with the service's settings, on a real SQLite file and (``--backend both``, the default,
where it answers) a fresh PostgreSQL database: ``live_context`` (what ``GET
/sessions/{id}/context`` sends) and appending an assistant tool call then its result through the
service (the result is checked against the pending calls under the write lock). On PostgreSQL
twice: as loaded (no planner statistics: autovacuum has not run, as after a bulk load or a
restore), then analyzed. The baseline is the smallest archive; the target is the largest within
1.2x of it.
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

from _timing import median_us, run_on_scratch_postgres, setup_service  # noqa: E402 - after the path


def _archive(session, count: int) -> None:
    """``count`` archived rows at the start of the session, as a compression leaves them."""
    from django.db import transaction

    from sessions_app.models import Message, Session

    with transaction.atomic():
        batch = []
        for i in range(count):
            batch.append(
                Message(
                    session=session,
                    channel_id=session.channel_id,
                    position=i,
                    role="user" if i % 2 == 0 else "assistant",
                    content=f"archived message {i} about the deploy of service {i % 97}",
                    active=False,
                    compressed=True,
                    archive_reason=Message.ArchiveReason.COMPRESSION,
                )
            )
            if len(batch) == 5_000:
                Message.objects.bulk_create(batch)
                batch = []
        Message.objects.bulk_create(batch)
        Session.objects.filter(pk=session.pk).update(next_position=count, total_messages=count)
    session.refresh_from_db()


def _live(session, turns: int) -> None:
    from sessions_app.services import append_messages

    for t in range(turns):
        call = f"call_{t}"
        append_messages(
            session,
            [
                {"role": "user", "content": f"question {t}"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call,
                            "type": "function",
                            "function": {"name": "shell", "arguments": '{"cmd": "ls"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call, "content": f"file_{t}.py"},
                {"role": "assistant", "content": f"answer {t}"},
            ],
            run_hooks=False,
        )


def measure(session, repeat: int) -> tuple[float, float]:
    from sessions_app.selectors import live_context
    from sessions_app.services import append_messages

    def read() -> None:
        live_context(session)

    counter = iter(range(10**9))

    def append_result() -> None:
        n = next(counter)
        call = f"bench_{n}"
        append_messages(
            session,
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call,
                            "type": "function",
                            "function": {"name": "shell", "arguments": "{}"},
                        }
                    ],
                }
            ],
            run_hooks=False,
        )
        started = time.perf_counter()
        append_messages(
            session, [{"role": "tool", "tool_call_id": call, "content": "ok"}], run_hooks=False
        )
        timings.append(time.perf_counter() - started)

    timings: list[float] = []
    context_us = median_us(read, repeat)
    for _ in range(repeat):
        append_result()
    timings.sort()
    return context_us, timings[len(timings) // 2] * 1e6


POSTGRES = os.environ.get("HERMES_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/hermes")


def run(archived_sizes: list[int], live: int, repeat: int) -> None:
    """One backend, the one the environment names (Django is set up once per process)."""
    from django.db import connection

    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        setup_service(Path(tmp))
        from sessions_app.keys import create_channel
        from sessions_app.services import open_session

        channel, _ = create_channel("bench")
        sessions = []
        for archived in archived_sizes:
            session = open_session(channel, model="gpt-4o").session
            started = time.perf_counter()
            _archive(session, archived)
            _live(session, live // 4)
            sessions.append((archived, time.perf_counter() - started, session))
        states = [("", None)]
        if connection.vendor == "postgresql":
            states = [("as loaded, no statistics", None), ("analyzed", "ANALYZE")]
        name = "PostgreSQL" if connection.vendor == "postgresql" else "SQLite"
        for state, statement in states:
            if statement:
                with connection.cursor() as cursor:
                    cursor.execute(statement)
            results = []
            for archived, loaded, session in sessions:
                context_us, append_us = measure(session, repeat)
                results.append((archived, loaded, session.live_messages, context_us, append_us))
            _print(f"{name}, {state}" if state else name, results)


def _print(title: str, results: list[tuple]) -> None:
    base = results[0]
    print(f"\n{title}\n")
    print(f"{'measure':52}|{'value':>14}")
    print("-" * 52 + "|" + "-" * 14)
    for archived, loaded, live, context_us, append_us in results:
        print(f"{f'archived rows {archived:,} (load {loaded:.0f} s)':52}|{live:>10,} live")
        print(f"{'  live context read, µs (median)':52}|{context_us:>14,.0f}")
        print(f"{'  tool-result append, µs (median)':52}|{append_us:>14,.0f}")
        print(f"{'  context read vs smallest archive (x)':52}|{context_us / base[3]:>14.2f}")
        print(f"{'  tool-result append vs smallest archive (x)':52}|{append_us / base[4]:>14.2f}")
    print(f"{'load average (1 min)':52}|{os.getloadavg()[0]:>14.2f}")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archived", type=int, nargs="+", default=[1_000, 1_000_000])
    parser.add_argument("--live", type=int, default=1_200)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--backend", choices=("both", "sqlite", "postgres"), default="both")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run(args.archived, args.live, args.repeat)
        return
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    env = {k: v for k, v in os.environ.items() if k != "HERMES_DATABASE_URL"}
    command = [sys.executable, __file__, "--child", "--live", str(args.live)]
    command += ["--repeat", str(args.repeat), "--archived", *map(str, args.archived)]
    if "sqlite" in backends:
        subprocess.run(command, check=True, env=env)
    if "postgres" not in backends:
        return
    from tests.processes import _admin_connection

    try:
        _admin_connection(POSTGRES).close()
    except Exception as exc:  # no PostgreSQL: say so
        if args.backend == "postgres":
            raise SystemExit(f"PostgreSQL at {POSTGRES} does not answer: {exc}") from None
        print(f"\n(PostgreSQL at {POSTGRES} does not answer, measured SQLite only: {exc})")
        return
    run_on_scratch_postgres(command, env, POSTGRES, "hermes_context_bench")


if __name__ == "__main__":
    main()
