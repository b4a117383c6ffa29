"""Two reads every API request makes on SQLite, each beside Django's own way as the baseline,
the two arms interleaved call by call in one process:

- a search request through the WSGI application (``GET /api/v1/search``, a rare fact, 20
  hits with windows of 2, the API's channel filter), its statements' ``%s`` converted to ``?``
  once per statement text (core.sqlite_backend's Cursor) or on every run (Django's cursor):
  each fact's first lookup, the facts dealt to the two arms in turn, then later ones;
- ``authenticate_key``, the key's row read on the driver's connection and converted once per
  version of it (core.plain.fetch_one, sessions_app.keys) or through Django's cursor and
  converted on every call (as before 2026-12-07's twelfth session).

    .venv/bin/python bench/request_reads.py                  # 1,000,000 messages
    .venv/bin/python bench/request_reads.py --size 100000

Loads bench/search.py's corpus into a fresh SQLite file, builds its indexes and analyzes it.
The table gives p50 and p95 of each arm and the baseline over the service.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._timing import percentile  # noqa: E402 - after the path


def _old_live_key(prefix: str):
    """The key's read before the twelfth session: Django's cursor, every column converted."""
    from django.db import connection

    from core import plain
    from sessions_app.models import ApiKey, Channel

    keys, channels = ApiKey._meta.db_table, Channel._meta.db_table
    sql = (
        f"SELECT {plain.columns(ApiKey, 'k')}, c.name, c.description "
        f"FROM {keys} k JOIN {channels} c ON c.id = k.channel_id "
        "WHERE k.prefix = %s AND k.revoked_at IS NULL"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [prefix])
        row = cursor.fetchone()
    if row is None:
        return None
    api_key = plain.from_row(ApiKey, row)
    api_key.channel = Channel.from_db(
        connection.alias, ["id", "name", "description"], [api_key.channel_id, *row[-2:]]
    )
    return api_key


def _interleaved(
    arms: dict[str, tuple[Callable[[], object], Callable[[Any], object]]],
    calls: Iterable[Any],
    rounds: int,
) -> dict[str, list[float]]:
    """``arms``: name -> (switch to it, one call of ``calls``' item); the arms alternate call by
    call, their order turned each round."""
    out: dict[str, list[float]] = {name: [] for name in arms}
    names, calls = list(arms), list(calls)
    for n in range(rounds):
        order = names if n % 2 == 0 else names[::-1]
        for item in calls:
            for name in order:
                switch, call = arms[name]
                switch()
                began = time.perf_counter()
                call(item)
                out[name].append(time.perf_counter() - began)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=6, help="runs of every fact per arm")
    parser.add_argument("--key-calls", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-request-reads-") as tmp:
        from bench import search as corpus

        corpus.build_sqlite_corpus(Path(tmp), args.size)
        from django.core.wsgi import get_wsgi_application

        from core.sqlite_backend import base
        from sessions_app import keys
        from sessions_app.models import Channel

        channel = Channel.objects.order_by("pk").first()
        key = keys.issue_key(channel, label="bench").plaintext
        app = get_wsgi_application()
        facts = [q for kind in corpus.FACTS for q in corpus.classes()[kind]]
        said: list[str] = []

        def request(q: str) -> None:
            environ = {
                "REQUEST_METHOD": "GET", "PATH_INFO": "/api/v1/search",
                "QUERY_STRING": urlencode({"q": q}), "SERVER_NAME": "127.0.0.1",
                "SERVER_PORT": "8000", "HTTP_HOST": "127.0.0.1", "wsgi.url_scheme": "http",
                "wsgi.input": io.BytesIO(b""), "SERVER_PROTOCOL": "HTTP/1.1",
                "HTTP_AUTHORIZATION": f"Bearer {key}", "REMOTE_ADDR": "127.0.0.1",
            }  # fmt: skip
            b"".join(app(environ, lambda status, headers, *exc: said.append(status)))
            if not said.pop().startswith("200"):
                raise SystemExit(f"GET /api/v1/search?q={q} did not answer 200")

        kept, django_s = base.Cursor.convert_query, base.base.SQLiteCursorWrapper.convert_query

        def use(convert):
            return lambda: setattr(base.Cursor, "convert_query", convert)

        for q in corpus.WARM_UP:  # a process's first searches (imports, the first statements)
            for _ in range(3):
                request(q)
        # Each fact's first lookup (nothing kept for it yet), the facts dealt to the arms in
        # turn: ten of each kind each.
        first: dict[str, list[float]] = {"kept": [], "django": []}
        for n, q in enumerate(facts):
            arm, convert = ("kept", kept) if n % 2 == 0 else ("django", django_s)
            use(convert)()
            began = time.perf_counter()
            request(q)
            first[arm].append(time.perf_counter() - began)
        searches = _interleaved(
            {
                "kept conversions (the service)": (use(kept), request),
                "converted on every run (Django)": (use(django_s), request),
            },
            facts,
            args.rounds,
        )
        base.Cursor.convert_query = kept
        service_read = keys._live_key

        def read(how):
            return lambda: setattr(keys, "_live_key", how)

        key_calls = _interleaved(
            {
                "driver's connection, converted once (the service)": (
                    read(service_read),
                    lambda _: keys.authenticate_key(key),
                ),
                "Django's cursor, converted every call (before)": (
                    read(_old_live_key),
                    lambda _: keys.authenticate_key(key),
                ),
            },
            range(args.key_calls // 2),
            2,
        )
        keys._live_key = service_read

    print(f"\n## {args.size:,} messages, SQLite\n")
    print("| what | arm | calls | p50 | p95 | baseline ÷ service, p50 / p95 |")
    print("|---|---|---:|---:|---:|---:|")
    firsts = {
        "kept conversions (the service)": first["kept"],
        "converted on every run (Django)": first["django"],
    }
    for what, unit, scale, arms in (
        ("a search request, a rare fact's first lookup", "ms", 1e3, firsts),
        ("a search request, a rare fact, later", "ms", 1e3, searches),
        ("authenticate_key", "µs", 1e6, key_calls),
    ):
        (_, mine), (_, theirs) = arms.items()
        for name, samples in arms.items():
            ratio = ""
            if samples is theirs:
                ratio = (
                    f"{percentile(theirs, 0.5) / percentile(mine, 0.5):.2f} / "
                    f"{percentile(theirs, 0.95) / percentile(mine, 0.95):.2f}"
                )
            print(
                f"| {what} | {name} | {len(samples):,} | {percentile(samples, 0.5) * scale:.3f} "
                f"{unit} | {percentile(samples, 0.95) * scale:.3f} {unit} | {ratio} |"
            )


if __name__ == "__main__":
    main()
