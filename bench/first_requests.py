"""A request thread's first search over HTTP, its database connection warmed when the web process
started (``server.warm_connections``, the default) or opened by that request (the baseline).

    .venv/bin/python bench/first_requests.py                 # 100,000 messages, both backends
    .venv/bin/python bench/first_requests.py --size 1000000 --rounds 6 --backend postgres

Loads bench/search.py's corpus (its rare facts among common text) into a fresh database --
SQLite, then PostgreSQL where it answers ($HERMES_TEST_POSTGRES_URL) -- and builds its indexes.
Then each round, the two arms alternating: ``manage.py serve`` starts afresh on it (gunicorn's
web processes and threads as configured, the task worker), and once it answers ``GET /healthz``
and has had three seconds to finish starting, ``--clients`` keep-alive clients (one per request
thread, by default) each send ``GET /api/v1/search`` for a fact no one asked before, all at the
same moment: each lands on a thread that has answered no search yet. Then each sends one more,
for another fact: a thread's second search, on a connection opened by then either way. Timed
from the client. The table gives p50 and p95 of each, per arm, and the baseline over the warmed.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._timing import percentile  # noqa: E402 - after the path

# After /healthz answers: the web processes and the task worker finish starting.
SETTLE_SECONDS = 3.0


def _config(data: Path, warm: bool) -> None:
    (data / "hermes.yaml").write_text(
        f"server:\n  data_dir: {data}\n  warm_connections: {'true' if warm else 'false'}\n",
        encoding="utf-8",
    )


def _round(port: int, key: str, queries: list[list[str]]) -> tuple[list[float], list[float]]:
    """Each client's two searches (its ``queries``), the first ones sent together."""
    clients = len(queries)
    together = threading.Barrier(clients)
    first: list[float] = []
    second: list[float] = []
    failed: list[str] = []

    def client(mine: list[str]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.connect()
        headers = {"Authorization": f"Bearer {key}", "Host": "127.0.0.1"}
        together.wait(30)
        for n, q in enumerate(mine):
            began = time.perf_counter()
            conn.request("GET", "/api/v1/search?" + urlencode({"q": q}), headers=headers)
            response = conn.getresponse()
            body = response.read()
            (first if n == 0 else second).append(time.perf_counter() - began)
            if response.status != 200:
                failed.append(f"{q}: {response.status} {body[:200]!r}")
        conn.close()

    threads = [threading.Thread(target=client, args=(mine,)) for mine in queries]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failed:
        raise SystemExit("; ".join(failed))
    return first, second


def child(size: int, rounds: int, clients: int, out: Path) -> None:
    """On the backend the environment names: load, serve and time; results as JSON to ``out``."""
    from bench import search as corpus

    with tempfile.TemporaryDirectory(prefix="hermes-first-requests-") as tmp:
        data = Path(tmp)
        corpus._setup(data)
        from django.core.management import call_command
        from django.db import connection

        call_command("migrate", verbosity=0)
        corpus.load(size)
        corpus._build_indexes(size)
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":  # as the worker's minute task does
                from search import pg

                cursor.execute("ANALYZE sessions_app_message")
                pg.refresh_common(cursor)
            else:
                cursor.execute("ANALYZE")
                cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        from sessions_app.keys import issue_key
        from sessions_app.models import Channel

        key = issue_key(Channel.objects.order_by("pk")[0], label="bench").plaintext
        backend = connection.vendor
        connection.close()
        facts = [q for kind in corpus.FACTS.values() for _, q in kind]
        random.Random(7).shuffle(facts)  # each round's facts of mixed kinds
        needed = rounds * 2 * clients * 2
        if needed > len(facts):
            raise SystemExit(f"{rounds} rounds of {clients} clients need {needed} facts")
        results: dict[str, dict[str, list[float]]] = {
            arm: {"first": [], "second": [], "start": []} for arm in ("warmed", "baseline")
        }
        for n in range(rounds * 2):
            arm = ("warmed", "baseline")[n % 2]
            _config(data, warm=arm == "warmed")
            began = time.monotonic()
            with corpus.Service(data) as service:  # manage.py serve, once /healthz answers
                results[arm]["start"].append(time.monotonic() - began)
                time.sleep(SETTLE_SECONDS)
                start = n * clients * 2
                mine = [facts[start + 2 * c : start + 2 * c + 2] for c in range(clients)]
                first, second = _round(service.port, key, mine)
                results[arm]["first"] += first
                results[arm]["second"] += second
        out.write_text(json.dumps({"backend": backend, "size": size, **results}))


def _table(found: dict) -> None:
    name = "PostgreSQL" if found["backend"] == "postgresql" else "SQLite"
    print(f"\n## {found['size']:,} messages, {name}\n")
    print(
        "| request | warmed p50 ms | warmed p95 ms | baseline p50 ms | baseline p95 ms "
        "| baseline / warmed, p50 | p95 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for part, label in (("first", "a thread's first search"), ("second", "its second")):
        w, b = found["warmed"][part], found["baseline"][part]
        cells = [percentile(x, q) * 1000 for x in (w, b) for q in (0.5, 0.95)]
        print(
            f"| {label} ({len(w)} and {len(b)}) | {cells[0]:.2f} | {cells[1]:.2f} | {cells[2]:.2f} "
            f"| {cells[3]:.2f} | {cells[2] / cells[0]:.2f} | {cells[3] / cells[1]:.2f} |"
        )
    w, b = found["warmed"]["start"], found["baseline"]["start"]
    print(
        f"\nStart (`manage.py serve` to its first `GET /healthz`), median: warmed "
        f"{percentile(w, 0.5):.2f} s, baseline {percentile(b, 0.5):.2f} s."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5, help="service starts per arm")
    parser.add_argument(
        "--clients", type=int, default=4, help="clients at once (4: server.web_threads' default)"
    )
    parser.add_argument("--backend", choices=("both", "sqlite", "postgres"), default="both")
    parser.add_argument("--child-results", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.size < 10_000 or args.rounds < 1 or args.clients < 1:
        parser.error(
            "--size of at least 10,000 (the facts' sessions), --rounds and --clients of 1 or more"
        )
    if args.child_results:
        child(args.size, args.rounds, args.clients, args.child_results)
        return
    clients = args.clients
    from bench import search as corpus

    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    print("First searches on a web thread's connection, warmed at start or opened by the request")
    with tempfile.TemporaryDirectory(prefix="hermes-first-requests-results-") as tmp:
        for backend in backends:
            results = Path(tmp) / f"{backend}.json"
            command = [sys.executable, __file__, "--size", str(args.size), "--rounds",
                       str(args.rounds), "--clients", str(clients), "--child-results",
                       str(results)]  # fmt: skip
            env = {k: v for k, v in os.environ.items() if k != "HERMES_DATABASE_URL"}
            if backend == "sqlite":
                subprocess.run(command, check=True, env=env)
            else:
                try:
                    from tests.processes import _admin_connection

                    _admin_connection(corpus.POSTGRES).close()
                except Exception as exc:
                    print(f"(PostgreSQL at {corpus.POSTGRES} does not answer: {exc})")
                    continue
                from bench._timing import run_on_scratch_postgres

                run_on_scratch_postgres(command, env, corpus.POSTGRES, "hermes_first_requests")
            _table(json.loads(results.read_text()))


if __name__ == "__main__":
    main()
