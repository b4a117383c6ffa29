"""The HTTP path of a search under the two web servers ``manage.py serve`` runs
(``server.web_server``): granian (HTTP in Rust, the default) and gunicorn, each as deployed,
and granian serving the bare WSGI application (none of the service's start-up warm-up).

    .venv/bin/python bench/http_servers.py              # 100,000 messages, 2 rounds per server
    .venv/bin/python bench/http_servers.py --size 1000000 --rounds 3

Loads bench/search.py's corpus (its 240 rare facts among common text) into a fresh SQLite file,
the embedded default, and builds its indexes. Then each round, the servers in turn, the
service is started afresh on it: ``manage.py serve`` with ``web_server: gunicorn`` (its threaded
workers with this service's own worker class and start-up warm-up) or ``web_server: granian``
(its factory, hermes_site.granian_app: the process's warm-up and a connection warmed for each
request thread), both with the task worker; or granian on ``hermes_site.wsgi:application`` with
as many processes and request threads (``server.web_workers`` x ``server.web_threads``) and the
task worker beside it. Every query's kept rows are cleared first, so each fact's request is its
first lookup. One keep-alive client asks each fact once, pauses 50 ms, and asks it three times
more, as bench/search.py does over HTTP. Each request is timed from the client and beside its
own search (the answer's ``Server-Timing: search``): the difference is the HTTP path alone --
the server, Django, authentication, the answer's JSON. The floors: a WSGI application answering
a constant under each server, and one Python thread answering it on a socket.
"""

from __future__ import annotations

import argparse
import http.client
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._timing import free_port, percentile  # noqa: E402 - after the path
from bench.search import _granian  # noqa: E402

PAUSE_SECONDS = 0.05  # before a fact's later requests, as bench/search.py's IDLE_MS
LATER = 3


def _wait(port: int, path: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server on port {port} exited ({process.returncode})")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", path, headers={"Host": "127.0.0.1"})
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"the server on port {port} did not answer {path}")


class Granian:
    """granian serving the service's WSGI application, and the task worker beside it."""

    def __init__(self, data: Path, workers: int, threads: int) -> None:
        self.data, self.workers, self.threads = data, workers, threads
        self.port = free_port()

    def __enter__(self) -> Granian:
        self.log = open(self.data / "granian.log", "w", encoding="utf-8")
        command = _granian("hermes_site.wsgi:application", self.port, self.workers, self.threads)
        self.web = subprocess.Popen(command, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)
        self.worker = subprocess.Popen(
            [sys.executable, "manage.py", "worker"],
            cwd=ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        _wait(self.port, "/healthz", self.web)
        return self

    def __exit__(self, *exc) -> None:
        for process in (self.web, self.worker):
            process.terminate()
            process.wait(60)
        self.log.close()


def _facts(port: int, key: str) -> dict[str, list[float]]:
    """Each fact's first request and its later ones, each with its own search's time."""
    from bench import search as corpus

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    get = corpus.api_search(conn, key)
    out: dict[str, list[float]] = {"first": [], "first_search": [], "later": [], "later_search": []}
    for q in corpus.WARM_UP:  # each process's and thread's first requests, untimed
        for _ in range(3):
            get(q)
    for q in (q for kind in corpus.FACTS.values() for _, q in kind):
        took, searched = get(q)
        out["first"].append(took)
        out["first_search"].append(searched)
        time.sleep(PAUSE_SECONDS)
        for _ in range(LATER):
            took, searched = get(q)
            out["later"].append(took)
            out["later_search"].append(searched)
    conn.close()
    return out


def _ms(samples: list[float], q: float) -> float:
    return percentile(samples, q) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2, help="service starts per server")
    args = parser.parse_args()
    if args.size < 10_000 or args.rounds < 1:
        parser.error("--size of at least 10,000 (the facts' sessions) and --rounds of 1 or more")
    from bench import search as corpus

    with tempfile.TemporaryDirectory(prefix="hermes-http-servers-") as tmp:
        data = Path(tmp)
        os.environ.pop("HERMES_DATABASE_URL", None)  # the embedded default, whatever the shell says
        corpus.build_sqlite_corpus(data, args.size)
        from django.conf import settings
        from django.db import connection

        from search import ranked
        from sessions_app.keys import issue_key
        from sessions_app.models import Channel

        key = issue_key(Channel.objects.order_by("pk")[0], label="bench").plaintext
        server = settings.HERMES.server
        workers, threads = server.web_workers, server.web_threads
        configs = {}
        for web_server in ("gunicorn", "granian"):
            configs[web_server] = data / f"{web_server}.yaml"
            configs[web_server].write_text(
                f"server:\n  data_dir: {data}\n  web_server: {web_server}\n", encoding="utf-8"
            )
        servers = {
            "gunicorn (as deployed)": lambda: corpus.Service(data, configs["gunicorn"]),
            "granian (as deployed)": lambda: corpus.Service(data, configs["granian"]),
            "granian, the bare application": lambda: Granian(data, workers, threads),
        }
        found: dict[str, dict[str, list[float]]] = {name: {} for name in servers}
        for n in range(args.rounds * len(servers)):
            name = list(servers)[n % len(servers)]
            with connection.cursor() as cursor:  # every fact's lookup a first one again
                ranked.clear(cursor)
            connection.close()
            with servers[name]() as service:
                for part, samples in _facts(service.port, key).items():
                    found[name].setdefault(part, []).extend(samples)
        floors = {  # (back to back, after a pause)
            "under gunicorn": corpus.wsgi_floor(server=corpus._gunicorn),
            "under granian": corpus.wsgi_floor(
                server=lambda app, port: _granian(app, port, workers, threads)
            ),
            "one thread on a socket": corpus.wsgi_floor(raw=True),
        }

    print(
        f"\n## {args.size:,} messages, SQLite: {workers} web processes x {threads} threads, "
        f"{args.rounds} starts per server, 240 facts each\n"
    )
    print(
        "| server | first p50 ms | first p95 ms | its search p95 ms | HTTP path alone, first "
        "p50 / p95 ms | later p50 ms | later p95 ms | HTTP path alone, later p50 / p95 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    alone: dict[str, float] = {}
    for name, m in found.items():
        first = [t - s for t, s in zip(m["first"], m["first_search"], strict=True)]
        later = [t - s for t, s in zip(m["later"], m["later_search"], strict=True)]
        alone[name] = _ms(first, 0.95)
        print(
            f"| {name} | {_ms(m['first'], 0.5):.2f} | {_ms(m['first'], 0.95):.2f} "
            f"| {_ms(m['first_search'], 0.95):.2f} "
            f"| {_ms(first, 0.5):.2f} / {_ms(first, 0.95):.2f} "
            f"| {_ms(m['later'], 0.5):.2f} | {_ms(m['later'], 0.95):.2f} "
            f"| {_ms(later, 0.5):.2f} / {_ms(later, 0.95):.2f} |"
        )
    baseline, other = alone["gunicorn (as deployed)"], alone["granian (as deployed)"]
    print(
        f"\nThe HTTP path alone at p95, first requests, as deployed: gunicorn {baseline:.2f} ms, "
        f"granian {other:.2f} ms ({baseline / other:.2f}x)."
    )
    print(
        f"\n| floor: a constant | p50 ms | p95 ms | after {corpus.IDLE_MS} ms idle, p50 ms "
        "| p95 ms |\n|---|---:|---:|---:|---:|"
    )
    for label, (hot, idle) in floors.items():
        cells = [_ms(samples, q) for samples in (hot, idle) for q in (0.5, 0.95)]
        print(f"| {label} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
