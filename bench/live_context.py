"""The live context of a long session beside raw SQL reading the same rows, in-process.

    .venv/bin/python bench/live_context.py [--rows 1000] [--repeat 100] [--http]

A session of ``--rows`` live rows (turns of a user ask, an assistant tool call, its result and
a reply; one in ten results long), on a real SQLite file with the service's settings. Timed in
one run: ``live_context`` (what ``GET /sessions/{id}/context`` sends: the rows read, placed and
shaped as OpenAI messages, the memory blocks added) -- its first call in the process, then its
median -- beside the baseline, one ``SELECT`` of every column of the same rows through the
database cursor, fetched (no model objects, no JSON decoded). Issue 33's target: at most 2x
the baseline. ``--http`` then serves the store (``manage.py serve``) and times
``GET /api/v1/sessions/{id}/context`` on one keep-alive connection, from the client: its first
request, then the median and p95 of the rest (the target: p95 under 15 ms).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _timing import setup_service  # noqa: E402 - after the path


def _fill(rows: int):
    from sessions_app import services
    from sessions_app.keys import create_channel

    channel = create_channel("bench-context")[0]
    session = services.open_session(channel, model="gpt-4o", system_prompt="You are terse.")
    session = session.session
    messages = []
    for t in range(rows // 4):
        call = f"call_{t}"
        result = f"file_{t}.py\n" + ("line of output\n" * 200 if t % 10 == 0 else "")
        messages += [
            {"role": "user", "content": f"question {t}: what is in the folder?"},
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
            {"role": "tool", "tool_call_id": call, "name": "shell", "content": result},
            {"role": "assistant", "content": f"answer {t}: one file."},
        ]
    for start in range(0, len(messages), 500):
        services.append_messages(session, messages[start : start + 500], run_hooks=False)
    session.refresh_from_db()
    return session


def _timed(fn, repeat: int) -> tuple[float, float]:
    """(first call, median of the rest) in milliseconds."""
    started = time.perf_counter()
    fn()
    first = (time.perf_counter() - started) * 1000
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return first, statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=100)
    parser.add_argument("--http", action="store_true", help="also GET .../context over HTTP")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        setup_service(Path(tmp))
        from django.db import connection

        from sessions_app.models import Message
        from sessions_app.selectors import live_context

        session = _fill(args.rows)
        table = Message._meta.db_table
        sql = (
            f"SELECT * FROM {table} WHERE session_id = %s AND active "
            "ORDER BY position, is_summary DESC, id"
        )
        key = session.pk.hex if connection.vendor == "sqlite" else session.pk

        def raw() -> None:
            with connection.cursor() as cursor:
                cursor.execute(sql, [key])
                assert len(cursor.fetchall()) == session.live_messages

        def context() -> None:
            assert len(live_context(session)) >= session.live_messages - 1

        # The first call of live_context in this process comes first: nothing of it is warm.
        context_first, context_median = _timed(context, args.repeat)
        raw_first, raw_median = _timed(raw, args.repeat)
        print(f"{session.live_messages:,} live rows, SQLite, median of {args.repeat}\n")
        print(f"{'':<28} {'first ms':>9} {'median ms':>10} {'x baseline':>11}")
        print(
            f"{'live_context':<28} {context_first:>9.1f} {context_median:>10.2f} "
            f"{context_median / raw_median:>10.2f}x"
        )
        print(f"{'baseline: raw SELECT *':<28} {raw_first:>9.1f} {raw_median:>10.2f} {1:>10.2f}x")
        if args.http:
            _over_http(Path(tmp), session, args.repeat)


def _over_http(data: Path, session, repeat: int) -> None:
    import http.client
    import json

    from django.db import connection

    from bench._timing import percentile
    from bench.search import Service
    from sessions_app.keys import issue_key

    key = issue_key(session.channel, label="bench").plaintext
    connection.close()
    path = f"/api/v1/sessions/{session.pk}/context"
    headers = {"Authorization": f"Bearer {key}", "Host": "127.0.0.1"}
    with Service(data) as service:
        conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=30)
        samples = []
        for _ in range(repeat + 1):
            started = time.perf_counter()
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            body = response.read()
            samples.append((time.perf_counter() - started) * 1000)
            if response.status != 200:
                raise SystemExit(f"GET {path}: {response.status} {body[:300]!r}")
        sent = len(json.loads(body)["messages"])
    first, rest = samples[0], samples[1:]
    p95 = percentile(rest, 0.95)
    print(
        f"\nGET {path.replace(str(session.pk), '{id}')} over HTTP (manage.py serve, one "
        f"keep-alive client; {sent:,} messages, {len(body) / 1024:,.0f} KiB): first {first:.1f} "
        f"ms, median {statistics.median(rest):.2f} ms, p95 {p95:.2f} ms"
    )


if __name__ == "__main__":
    main()
