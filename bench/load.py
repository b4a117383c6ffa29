"""Load test: gateway clients appending and searching against the deployed processes, then an
audit that every acknowledged message is stored, counters equal recounts, and no session was
compressed twice at once.

    .venv/bin/python bench/load.py [--seconds 60] [--backend both|sqlite|postgres] [--first-lookups]
                                   [--server deployed|gunicorn]

Set-ups, each in the same run and each on loopback only; every client (a gateway) appends to
its own session:
* SQLite + the ORM broker: 1 web process of 4 threads, 1 worker process, 16 clients sending as
  fast as they are answered (the throughput baseline);
* the same, with the 16 clients paced at 5 requests a second each (Poisson arrivals): the
  latency an append sees at a steady load, checked against the target p95 <= 150 ms, max <= 1 s;
* PostgreSQL + Redis: 4 web processes, 2 django-q2 worker processes, 32 clients.

The service runs as deployed: ``manage.py serve`` (the configured web server, granian by
default, with its start-up prewarm and warmed connections, and the worker) sized by the config.
``--server gunicorn`` runs instead what this benchmark ran until 2026-12-08: a bare
``gunicorn -k gthread`` on the WSGI application and ``manage.py qcluster`` beside it, for
comparison with the figures recorded before then.

A quarter of the requests are searches. ``--first-lookups`` makes every search one no client
asked before (half a marker of the client's own, half the next combination of the words every
message says, which asks for its ranking refresh) and adds 4 clients on one session, with the
worker compressing as in every set-up.

The summary model is the loopback fake (0.3 s per summary). Sessions open with an 8K-token
window so automatic compression fires many times during the run. PostgreSQL and Redis are taken
from $HERMES_TEST_POSTGRES_URL / $HERMES_TEST_REDIS_URL (defaults: 127.0.0.1, Redis db 14 is
emptied); a fresh database is created and dropped.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._timing import free_port  # noqa: E402
from compression.testing.fake_model import FakeModelServer, Reply  # noqa: E402
from tests.processes import _admin_connection, wait_for  # noqa: E402

POSTGRES = os.environ.get("HERMES_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/hermes")
# The paced run's offered load: 16 gateways at 5 requests a second each (60 appends of two
# messages a second in all), about the rate of the 16-gateway run that once saw 7 s appends.
PACED_RATE = 5.0
REDIS = os.environ.get("HERMES_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
PYTHON = sys.executable
GUNICORN = str(Path(sys.executable).with_name("gunicorn"))
THREADS = 4  # request threads per web process, in either form

AUDIT = """
import django, json, sys, time
django.setup()
from django.db.models import Sum
from django.db.models.functions import Coalesce
from django.utils import timezone
from compression.models import CompressionEvent
from sessions_app.models import Message, Session
from sessions_app.services import recount

acknowledged = set(json.load(open(sys.argv[1])))
deadline = time.monotonic() + 180
while time.monotonic() < deadline:  # let the workers finish what the run queued
    busy = Session.objects.filter(compressing_until__gt=timezone.now()).count()
    queued = 0
    try:
        from django_q.brokers import get_broker
        queued = get_broker().queue_size() or 0
    except Exception:
        pass
    if not busy and not queued:
        break
    time.sleep(1)
time.sleep(2)
stored = {}
for content in Message.objects.filter(content__startswith="LOAD ", is_summary=False).values_list(
        "content", flat=True).iterator():
    marker = content.split()[1]
    stored[marker] = stored.get(marker, 0) + 1
missing = sorted(acknowledged - stored.keys())
duplicated = sorted(m for m, n in stored.items() if n > 1)
counters_ok = 0
counters_bad = []
overlaps = 0
for session in Session.objects.all():
    before = (session.live_messages, session.live_tokens, session.total_messages)
    after = recount(session)
    if before == (after.live_messages, after.live_tokens, after.total_messages):
        counters_ok += 1
    else:
        counters_bad.append(str(session.pk))
    runs = []
    for event in CompressionEvent.objects.filter(
            session=session, outcome__in=("compressed", "fallback")).order_by("created_at"):
        start = event.created_at.timestamp() - (event.duration_ms or 0) / 1000
        runs.append((start, event.created_at.timestamp()))
    overlaps += sum(1 for a, b in zip(runs, runs[1:]) if b[0] < a[1])
events = CompressionEvent.objects.filter(outcome__in=("compressed", "fallback"))
summaries = Message.objects.filter(is_summary=True).count()
print(json.dumps({
    "acknowledged": len(acknowledged),
    "stored": len(stored),
    "missing": len(missing),
    "duplicated": len(duplicated),
    "sessions": Session.objects.count(),
    "counters_ok": counters_ok,
    "counters_bad": counters_bad,
    "compressions": events.count(),
    "summaries": summaries,
    "summary_events": events.exclude(summary_message=None).count(),
    "overlapping_runs": overlaps,
    "outcomes": dict(CompressionEvent.objects.values_list("outcome").annotate(
        n=Sum(Coalesce("repeats", 1)))),
}))
"""


@dataclass
class Setup:
    name: str
    web: int
    workers: int
    clients: int
    database_url: str = ""
    broker_url: str = ""
    shared: bool = False  # clients share a quarter as many sessions (else: one session each)
    rate: float = 0  # requests per second per client, Poisson arrivals; 0: as fast as answered
    sessions: int = 0  # with shared: this many sessions among all the clients
    first_lookups: bool = False  # every search a query no one asked before


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"append": [], "search": []})
    errors: dict[str, int] = field(default_factory=dict)
    acknowledged: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    fresh: list[str] = field(default_factory=lambda: _fresh_queries())


SUMMARY = (
    "## Goal\nKeep the deploy healthy while gateways append and search under load.\n"
    "## Progress\n"
    + "".join(
        f"- Checked server-{n}: the cache TTL is fine and the rollout continues; the deploy "
        f"failure was a stale cache entry, cleared and verified by a second deploy.\n"
        for n in range(1, 9)
    )
    + "## Next\nWatch the error rate and the cache hit ratio after the next rollout.\n"
)

# Words every load message says: each combination of one to three of them matches every message.
COMMON = "why did the deploy fail cache TTL fine rollout continues 检查 缓存 LOAD server".split()


def _fresh_queries() -> list[str]:
    from itertools import combinations

    queries = [" ".join(c) for k in (1, 2, 3) for c in combinations(COMMON, k)]
    random.Random(7).shuffle(queries)
    return queries


def _run(args: list[str], env: dict[str, str], timeout: int = 300) -> str:
    result = subprocess.run(
        args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args[:3])} failed:\n{result.stderr[-3000:]}")
    return result.stdout


class Client(threading.Thread):
    def __init__(
        self,
        n: int,
        port: int,
        key: str,
        sessions: list[str],
        stop: float,
        stats: Stats,
        rate: float = 0,
        first_lookups: bool = False,
    ):
        super().__init__(daemon=True)
        self.rate = rate
        self.first_lookups = first_lookups
        self.asked = 0
        self.n, self.port, self.key, self.sessions, self.stop_at, self.stats = (
            n,
            port,
            key,
            sessions,
            stop,
            stats,
        )
        self.random = random.Random(n)

    def _query(self, mine: list[str], sent: int) -> str:
        """A recent marker of its own or a common word. With first lookups every query is one
        no client asked before: half a marker of its own not searched yet (its two messages
        match), half the next of the common words' combinations (every message matches: the
        lookup that asks for its refresh), while they last."""
        if not self.first_lookups:
            return self.random.choice(mine[-50:]) if self.random.random() < 0.5 else "缓存"
        self.asked += 1
        if self.asked % 2 == 0:
            with self.stats.lock:
                if self.stats.fresh:
                    return self.stats.fresh.pop()
        return mine.pop(self.random.randrange(len(mine)))

    def _request(self, conn, method: str, path: str, body: dict | None = None):
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        conn.request(method, path, json.dumps(body) if body is not None else None, headers)
        response = conn.getresponse()
        return response.status, response.read()

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        sent = 0
        mine: list[str] = []
        due = time.monotonic()
        while time.monotonic() < self.stop_at:
            if self.rate:  # the next request when it falls due (at once if this one is late)
                due += self.random.expovariate(self.rate)
                time.sleep(max(0.0, due - time.monotonic()))
            session = self.random.choice(self.sessions)
            if self.random.random() < 0.75 or not mine:  # (a first lookup may take one)
                kind = "append"
                marker = f"c{self.n}m{sent}"
                sent += 1
                body = {
                    "messages": [
                        {
                            "role": "user",
                            "content": f"LOAD {marker} 检查 server-{sent} 的缓存 "
                            + "why did the deploy fail " * 8,
                        },
                        {
                            "role": "assistant",
                            "content": f"LOAD {marker}a the cache TTL is "
                            + "fine and the rollout continues " * 8,
                        },
                    ]
                }
                path = f"/api/v1/sessions/{session}/messages"
                method = "POST"
            else:
                kind = "search"
                marker = None
                query = self._query(mine, sent)
                path = "/api/v1/search?" + urllib.parse.urlencode({"q": query, "limit": 5})
                method, body = "GET", None
            started = time.perf_counter()
            try:
                status, _ = self._request(conn, method, path, body)
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                status = type(exc).__name__
            elapsed = time.perf_counter() - started
            with self.stats.lock:
                if status in (200, 201):
                    self.stats.latencies[kind].append(elapsed)
                    if marker:
                        self.stats.acknowledged += [marker, marker + "a"]
                        mine.append(marker)
                else:
                    label = f"{kind} {status}"
                    self.stats.errors[label] = self.stats.errors.get(label, 0) + 1
        conn.close()


def _start(server: str, setup: Setup, port: int, env: dict[str, str]) -> list[subprocess.Popen]:
    """The service's processes: ``manage.py serve`` as deployed (the config sizes it), or the
    bare gunicorn and qcluster processes this benchmark ran before."""
    if server == "deployed":
        return [
            subprocess.Popen(
                [PYTHON, "manage.py", "serve", "--no-migrate"],
                cwd=ROOT,
                env={**env, "HERMES_ADDR": f"127.0.0.1:{port}"},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        ]
    return [
        subprocess.Popen(
            [
                GUNICORN,
                "hermes_site.wsgi:application",
                "-w",
                str(setup.web),
                "-k",
                "gthread",
                "--threads",
                str(THREADS),
                "-b",
                f"127.0.0.1:{port}",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ] + [
        subprocess.Popen(
            [PYTHON, "manage.py", "qcluster"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(setup.workers)
    ]


def _run_setup(setup: Setup, seconds: float, model: FakeModelServer, server: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="hermes-load-") as tmp:
        config = Path(tmp) / "hermes.yaml"
        workers = setup.workers if server == "deployed" else 1  # per qcluster under gunicorn
        config.write_text(
            f"server:\n  data_dir: {tmp}\n  q_workers: {workers}\n"
            f"  web_workers: {setup.web}\n  web_threads: {THREADS}\n"
            "  allowed_hosts: ['127.0.0.1']\n"
            "auxiliary:\n  compression:\n    model: fake-summary\n"
            f"    base_url: {model.base_url}\n",
            encoding="utf-8",
        )
        env = {
            **os.environ,
            "HERMES_CONFIG": str(config),
            "DJANGO_SETTINGS_MODULE": "hermes_site.settings",
        }
        for name in ("HERMES_DATABASE_URL", "HERMES_BROKER_URL", "PYTEST_CURRENT_TEST"):
            env.pop(name, None)
        if setup.database_url:
            env["HERMES_DATABASE_URL"] = setup.database_url
        if setup.broker_url:
            env["HERMES_BROKER_URL"] = setup.broker_url
            import redis

            redis.Redis.from_url(setup.broker_url).flushdb()
        _run([PYTHON, "manage.py", "migrate", "--noinput", "-v0"], env)
        key = (
            _run([PYTHON, "manage.py", "create_channel", "load"], env)
            .split("store it now): ")[1]
            .strip()
        )
        port = free_port()
        processes = _start(server, setup, port, env)
        try:
            probe = Client(-1, port, key, [], 0, Stats())
            wait_for(
                lambda: (
                    probe._request(
                        http.client.HTTPConnection("127.0.0.1", port, timeout=5),
                        "GET",
                        "/api/v1/sessions",
                    )[0]
                    == 200
                ),
                "the web processes",
            )
            sessions = []
            shared = setup.sessions or max(4, setup.clients // 4)
            for n in range(shared if setup.shared else setup.clients):
                _, body = probe._request(
                    http.client.HTTPConnection("127.0.0.1", port, timeout=30),
                    "POST",
                    "/api/v1/sessions",
                    {
                        "model": "gpt-4o",
                        "context_window": 8192,
                        "title": f"load {n}",
                        "system_prompt": "You are a load test.",
                    },
                )
                sessions.append(json.loads(body)["id"])
            stats = Stats()
            stop = time.monotonic() + seconds
            clients = [
                Client(
                    n,
                    port,
                    key,
                    sessions if setup.shared else [sessions[n]],
                    stop,
                    stats,
                    setup.rate,
                    setup.first_lookups,
                )
                for n in range(setup.clients)
            ]
            started = time.monotonic()
            for client in clients:
                client.start()
            for client in clients:
                client.join()
            wall = time.monotonic() - started
            acknowledged = Path(tmp) / "acknowledged.json"
            acknowledged.write_text(json.dumps(stats.acknowledged), encoding="utf-8")
            audit = json.loads(
                _run([PYTHON, "-c", AUDIT, str(acknowledged)], env, timeout=600)
                .strip()
                .splitlines()[-1]
            )
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
    appends, searches = stats.latencies["append"], stats.latencies["search"]
    requests = len(appends) + len(searches)

    def p(values: list[float], q: float) -> float:
        return statistics.quantiles(values, n=100)[q - 1] * 1000 if len(values) > 1 else 0.0

    return {
        "setup": setup,
        "wall": wall,
        "requests": requests,
        "rps": requests / wall,
        "append_p50": p(appends, 50),
        "append_p95": p(appends, 95),
        "append_max": max(appends, default=0.0) * 1000,
        "search_p50": p(searches, 50),
        "search_p95": p(searches, 95),
        "fresh_asked": len(_fresh_queries()) - len(stats.fresh),
        "appends": len(appends),
        "searches": len(searches),
        "errors": sum(stats.errors.values()),
        "error_kinds": stats.errors,
        "audit": audit,
    }


def _server_label(server: str) -> str:
    if server == "gunicorn":
        return f"a bare gunicorn -k gthread, {THREADS} threads a process, and qcluster"
    from core.config import ServerConfig  # the benchmark's config names no web server

    web_server = ServerConfig().web_server
    return f"manage.py serve ({web_server}, {THREADS} threads a process, and its worker)"


def _postgres_database() -> tuple[str, str]:
    name = f"hermes_load_{uuid.uuid4().hex[:10]}"
    with _admin_connection(POSTGRES) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return name, POSTGRES.rsplit("/", 1)[0] + f"/{name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--backend", choices=("both", "sqlite", "postgres"), default="both")
    parser.add_argument(
        "--first-lookups",
        action="store_true",
        help="every search a query no client asked before (the rest as usual); adds 4 clients on "
        "one session",
    )
    parser.add_argument(
        "--server",
        choices=("deployed", "gunicorn"),
        default="deployed",
        help="deployed: manage.py serve as configured (default); gunicorn: a bare gunicorn "
        "-k gthread and qcluster, as this benchmark ran before 2026-12-08",
    )
    args = parser.parse_args()
    fresh = args.first_lookups
    print(f"web server: {_server_label(args.server)}")
    results = []
    with FakeModelServer() as model:
        # Long enough to pass the summary's length floor (1% of what it replaces, at least 100
        # tokens): a shorter one is refused as too short and the local fallback summarises.
        model.script.default = Reply(SUMMARY, delay=0.3)
        if args.backend in ("both", "sqlite"):
            plain = Setup("SQLite + ORM broker", 1, 1, 16, first_lookups=fresh)
            results.append(_run_setup(plain, args.seconds, model, args.server))
            paced = Setup("SQLite, 16 x 5 req/s", 1, 1, 16, rate=PACED_RATE, first_lookups=fresh)
            results.append(_run_setup(paced, args.seconds, model, args.server))
            if fresh:
                one = Setup("SQLite, 4 on 1 session", 1, 1, 4, shared=True, sessions=1)
                one.first_lookups = True
                results.append(_run_setup(one, args.seconds, model, args.server))
        if args.backend in ("both", "postgres"):
            name, url = _postgres_database()
            try:
                results.append(
                    _run_setup(
                        Setup("PostgreSQL + Redis", 4, 2, 32, url, REDIS, first_lookups=fresh),
                        args.seconds,
                        model,
                        args.server,
                    )
                )
            finally:
                with _admin_connection(POSTGRES) as admin:
                    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print()
    print(
        f"{'set-up':<22} {'web':>3} {'wrk':>3} {'cli':>3} {'req/s':>7} {'appends':>8} "
        f"{'searches':>8} {'app p50':>8} {'app p95':>8} {'app max':>8} {'srch p50':>8} "
        f"{'srch p95':>8} "
        f"{'errors':>6} "
        f"{'msgs ok':>9} {'counters':>8} {'compr':>5} {'double':>6}"
    )
    for r in results:
        s, a = r["setup"], r["audit"]
        stored_ok = f"{a['acknowledged'] - a['missing']}/{a['acknowledged']}"
        print(
            f"{s.name:<22} {s.web:>3} {s.workers:>3} {s.clients:>3} {r['rps']:>7.1f} "
            f"{r['appends']:>8} {r['searches']:>8} {r['append_p50']:>6.0f}ms "
            f"{r['append_p95']:>6.0f}ms {r['append_max']:>6.0f}ms {r['search_p50']:>6.0f}ms "
            f"{r['search_p95']:>6.0f}ms "
            f"{r['errors']:>6} "
            f"{stored_ok:>9} {a['counters_ok']}/{a['sessions']:<6} {a['compressions']:>5} "
            f"{a['overlapping_runs']:>6}"
        )
    if fresh:
        for r in results:
            print(f"  {r['setup'].name}: {r['fresh_asked']} searches were a common query's first")
    for r in results:
        if r["error_kinds"]:
            print(f"  {r['setup'].name} errors: {r['error_kinds']}")
        print(f"  {r['setup'].name} audit: {json.dumps(r['audit'])}")
    by_name = {r["setup"].name: r for r in results}
    if "PostgreSQL + Redis" in by_name and "SQLite + ORM broker" in by_name:
        ratio = by_name["PostgreSQL + Redis"]["rps"] / by_name["SQLite + ORM broker"]["rps"]
        print(f"\nthroughput ratio PostgreSQL / SQLite (baseline): {ratio:.2f}x")
    for r in results:
        if not r["setup"].rate and r["setup"].name.startswith("SQLite"):
            met = r["append_p95"] <= 150 and not r["errors"] and not r["audit"]["missing"]
            print(
                f"target, {r['setup'].name}: append p95 <= 150 ms, none lost, no errors: "
                f"{'met' if met else 'NOT met'} (p95 {r['append_p95']:.0f} ms)"
            )
        if r["setup"].rate:
            met = r["append_p95"] <= 150 and r["append_max"] <= 1000 and not r["errors"]
            print(
                f"target, {r['setup'].name}: append p95 <= 150 ms and max <= 1 s, no errors: "
                f"{'met' if met else 'NOT met'} (p95 {r['append_p95']:.0f} ms, "
                f"max {r['append_max']:.0f} ms)"
            )
    failed = [
        r["setup"].name
        for r in results
        if r["audit"]["missing"]
        or r["audit"]["duplicated"]
        or r["audit"]["counters_bad"]
        or r["audit"]["overlapping_runs"]
        or r["audit"]["summaries"] != r["audit"]["summary_events"]
    ]
    if failed:
        raise SystemExit(f"audit failed for {', '.join(failed)}")


if __name__ == "__main__":
    main()
