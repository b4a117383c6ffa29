"""The search API's raw answers on the bench corpus, to check a change leaves them byte-identical.

    .venv/bin/python bench/search_answers.py --data /tmp/corpus-100k --size 100000 --out before.txt
    (change the code, or check out another commit)
    .venv/bin/python bench/search_answers.py --data /tmp/corpus-100k --size 100000 --out after.txt
    cmp before.txt after.txt

The first run loads ``bench/search.py``'s corpus into ``--data`` (SQLite) or into the PostgreSQL
database named by ``--postgres`` (created if missing), builds the indexes and analyzes; later runs
reuse it, since a fresh load has other session ids and times. Every query of ``bench/search.py``
is asked through ``GET /api/v1/search`` with several parameter sets (window sizes, pages, filters)
and each answer's status and body are written, one a line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import search as bench  # noqa: E402 - after the path is set

VARIANTS: list[dict] = [
    {},
    {"window": 0},
    {"window": 5},
    {"offset": 20},
    {"offset": 1, "limit": 7},
    {"limit": 100},
    {"kind": "archived"},
    {"role": "user"},
]


def _open(data: Path, size: int, postgres: str | None) -> None:
    fresh = not (data / "loaded").exists()
    data.mkdir(parents=True, exist_ok=True)
    if postgres:
        from tests.processes import _admin_connection

        os.environ["HERMES_DATABASE_URL"] = postgres
        base, name = postgres.rsplit("/", 1)
        with _admin_connection(f"{base}/postgres") as admin:
            if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
                admin.execute(f'CREATE DATABASE "{name}"')
    else:
        os.environ.pop("HERMES_DATABASE_URL", None)
    bench._setup(data)
    if fresh:
        from django.core.management import call_command
        from django.db import connection

        call_command("migrate", verbosity=0)
        bench.load(size)
        bench._build_indexes(size)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        (data / "loaded").write_text(str(size))


def answers() -> list[str]:
    from django.test import Client

    from search.filters import Filters
    from search.service import search
    from sessions_app.keys import issue_key
    from sessions_app.models import Channel

    channel = Channel.objects.order_by("pk")[0]
    client = Client(
        HTTP_AUTHORIZATION=f"Bearer {issue_key(channel, label='answers').plaintext}",
        HTTP_HOST="localhost",
    )
    session = search("deploy", Filters(channel_id=channel.pk)).hits[0].session.pk
    out = []
    for queries in bench.QUERIES.values():
        for q in queries:
            for params in [*VARIANTS, {"session": str(session)}]:
                response = client.get("/api/v1/search", {"q": q, **params})
                asked = json.dumps({"q": q, **params}, ensure_ascii=False)
                out.append(f"{asked}\t{response.status_code}\t{response.content.decode()}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="kept between runs")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--postgres", help="postgres://.../DBNAME (default: SQLite in --data)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    _open(args.data, args.size, args.postgres)
    text = "\n".join(answers()) + "\n"
    args.out.write_text(text, encoding="utf-8")
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    print(f"{text.count(chr(10))} answers, sha256 {digest}: {args.out}")


if __name__ == "__main__":
    main()
