"""``manage.py serve`` (what ``bin/serve`` and ``bin/demo`` run) as an operator runs it: the real
parent with gunicorn and the django-q2 cluster under it, on a database of its own, stopped the
way a process manager, ``docker stop`` or Ctrl-C stops it."""

from __future__ import annotations

import hashlib
import http.client
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from compression.testing.fake_model import FakeModelServer, Reply
from tests.processes import ROOT, isolated_env, python, wait_for

pytestmark = pytest.mark.slow  # real processes: servers, workers, copies

STOP_LIMIT = 10.0  # seconds: the bound for a stop, whatever it has to interrupt


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _call(method: str, url: str, key: str = "", body: dict | None = None, timeout: float = 30):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - loopback
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - loopback
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _processes() -> dict[int, tuple[int, int, str]]:
    """Every live process: pid -> (parent pid, process group, state)."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        table[int(entry.name)] = (int(fields[1]), int(fields[2]), fields[0])
    return table


def _alive_in_groups(groups: set[int]) -> list[int]:
    return [
        pid for pid, (_, pgrp, state) in _processes().items() if pgrp in groups and state != "Z"
    ]


class Served:
    """One run of ``manage.py serve`` (or of a script that ends in it, ``argv``) with its output
    in a file; the process is the leader of a process group of its own."""

    def __init__(
        self,
        env: dict[str, str],
        log: Path,
        argv: list[str] | None = None,
        start_seconds: float = 120,
    ) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        with log.open("w") as out:
            self.process = subprocess.Popen(
                argv or [sys.executable, "manage.py", "serve"],
                cwd=ROOT,
                env={**env, "HERMES_ADDR": f"127.0.0.1:{self.port}"},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            wait_for(
                lambda: _call("GET", f"{self.base}/healthz", timeout=5)[0] == 200,
                "serve",
                start_seconds,
            )
            wait_for(lambda: len(self.children()) == 2, "both children", 30)
        except BaseException:
            self.process.kill()
            raise

    def output(self) -> str:
        return self.log.read_text()

    def children(self) -> dict[str, int]:
        """The parent's two children by role: {'web': pid, 'worker': pid}."""
        found = {}
        for pid, (ppid, _, state) in _processes().items():
            if ppid != self.process.pid or state == "Z":
                continue
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            found["web" if {b"gunicorn", b"granian"} & set(cmdline) else "worker"] = pid
        return found

    def stop(self, signum: int = signal.SIGTERM) -> tuple[int, float]:
        """Send ``signum``; the exit code and the seconds until the parent had exited."""
        started = time.monotonic()
        self.process.send_signal(signum)
        try:
            code = self.process.wait(timeout=STOP_LIMIT + 20)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        return code, time.monotonic() - started


@pytest.fixture
def model():
    with FakeModelServer() as server:
        server.script.default = Reply("## Goal\nSummarised by the loopback model.")
        yield server


def _serving_env(tmp_path: Path, model: FakeModelServer, server: str = ""):
    sections = (
        f"auxiliary:\n  compression:\n    model: fake-summary\n    base_url: {model.base_url}\n"
    )
    server = "  stop_timeout_seconds: 8\n" + server
    return isolated_env(tmp_path, server=server, sections=sections)


def _key(env: dict[str, str]) -> str:
    out = python("manage.py", "create_channel", "serve-test", env=env, timeout=60)
    return out.split("store it now): ")[1].strip()


def _session_with_history(base: str, key: str, turns: int = 15) -> str:
    status, session = _call("POST", f"{base}/api/v1/sessions", key, {"model": "gpt-4o"})
    assert status == 201, session
    messages = []
    for n in range(turns):
        messages += [
            {"role": "user", "content": f"check the cache of server-{n} " * 5},
            {"role": "assistant", "content": f"server-{n}: the cache TTL is {n * 10}s. " * 5},
        ]
    sid = session["id"]
    status, body = _call(
        "POST", f"{base}/api/v1/sessions/{sid}/messages", key, {"messages": messages}
    )
    assert status == 201, body
    return sid


DB_STATE = """
import django, json; django.setup()
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import OrmQ
from django_q.signing import SignedPackage
from compression.models import CompressionEvent
from sessions_app.models import Session
broker = get_broker()
if hasattr(broker.connection, "lrange"):  # Redis: the list holds what is queued
    packages = broker.connection.lrange(broker.list_key, 0, -1)
else:  # ORM: rows not taken (a taken row is locked into the future)
    packages = OrmQ.objects.filter(lock__lte=timezone.now()).values_list("payload", flat=True)
tasks = [SignedPackage.loads(package) for package in packages]
session = Session.objects.get(pk="{sid}")
print(json.dumps({{
    "claimed": session.compressing_until is not None,
    "queued": sum(1 for task in tasks if "{sid}" in task["args"]),
    "compressed": CompressionEvent.objects.filter(session=session, outcome="compressed").count(),
}}))
"""


def _db_state(env: dict[str, str], sid: str) -> dict:
    return json.loads(python("-c", DB_STATE.format(sid=sid), env=env))


def test_serve_runs_a_task_and_sigterm_stops_web_and_worker_within_ten_seconds(tmp_path, model):
    with _serving_env(tmp_path, model) as env:
        key = _key(env)
        served = Served(env, tmp_path / "serve.log")
        sid = _session_with_history(served.base, key)
        status, result = _call(
            "POST",
            f"{served.base}/api/v1/sessions/{sid}/compress",
            key,
            {"wait": True, "wait_seconds": 60},
            timeout=90,
        )
        assert status == 200, result
        assert result["outcome"] == "compressed"  # run by the cluster the parent started
        assert model.requests
        groups = set(served.children().values())
        assert _alive_in_groups(groups)

        code, seconds = served.stop(signal.SIGTERM)

        assert code == 0, served.output()
        assert seconds < STOP_LIMIT
        assert _alive_in_groups(groups) == [], "a web or worker process outlived the stop"
        out = served.output()
        assert "Static files collected" in out
        assert "SIGTERM: stopping" in out and "Stopped in" in out


def _scripts_runnable() -> None:
    """bin/serve and bin/demo run bin/bootstrap first, which installs into .venv when
    pyproject.toml changed since its last install: a test must not install packages."""
    stamp = ROOT / ".venv" / ".hermes-installed"
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not stamp.is_file() or stamp.read_text().strip() != want:
        pytest.skip("bin/bootstrap would install into .venv (run ./bin/bootstrap once first)")


def _stop_leaves_nothing(served: Served) -> None:
    """SIGTERM to the script's process: exit 0 within the bound, no process of its own group
    (bootstrap included) or of either child's group left."""
    groups = {served.process.pid, *served.children().values()}
    assert len(groups) == 3
    code, seconds = served.stop(signal.SIGTERM)
    assert code == 0, served.output()
    assert seconds < STOP_LIMIT
    assert _alive_in_groups(groups) == [], "a process outlived the stop"
    assert "Installing dependencies" not in served.output()
    assert "Stopped in" in served.output()


def test_bin_serve_from_the_project_root_serves_and_sigterm_stops_it_leaving_no_process(
    tmp_path,
):
    _scripts_runnable()
    with isolated_env(tmp_path, server="  stop_timeout_seconds: 8\n") as env:
        served = Served(env, tmp_path / "serve.log", argv=["./bin/serve"])
        try:
            # bin/serve execs manage.py serve: the process signalled is the parent itself.
            assert b"serve" in Path(f"/proc/{served.process.pid}/cmdline").read_bytes()
            assert set(served.children()) == {"web", "worker"}
            status, body = _call("GET", f"{served.base}/readyz", timeout=30)
            assert status in (200, 503) and body["checks"]["database"] == {"ok": True}
            _stop_leaves_nothing(served)
        finally:
            if served.process.poll() is None:
                served.stop()


def test_bin_demo_loads_the_demo_and_serves_it_and_sigterm_stops_it_leaving_no_process(
    tmp_path,
):
    _scripts_runnable()
    with isolated_env(tmp_path, server="  stop_timeout_seconds: 8\n") as env:
        served = Served(env, tmp_path / "demo.log", argv=["./bin/demo"], start_seconds=300)
        try:
            key = served.output().split("Demo channel key (shown once): ")[1].split()[0]
            status, listed = _call("GET", f"{served.base}/api/v1/sessions", key)
            assert status == 200, listed
            assert {s["external_id"] for s in listed} == {"demo-main", "demo-small"}
            _stop_leaves_nothing(served)
        finally:
            if served.process.poll() is None:
                served.stop()


@pytest.mark.parametrize("web_server", ["granian", "gunicorn"])
def test_web_workers_and_threads_from_the_config_are_what_the_web_server_runs(tmp_path, web_server):
    server = (
        f"  stop_timeout_seconds: 8\n  web_workers: 3\n  web_threads: 7\n"
        f"  web_server: {web_server}\n"
    )
    with isolated_env(tmp_path, server=server) as env:
        served = Served(env, tmp_path / "serve.log")
        try:
            master = served.children()["web"]

            def workers() -> list[int]:
                return [
                    pid
                    for pid, (ppid, _, state) in _processes().items()
                    if ppid == master and state != "Z"
                ]

            wait_for(lambda: len(workers()) >= 3, "three web workers", 60)
            time.sleep(1)  # none more comes
            assert len(workers()) == 3
            # The threads per worker: the server's own reading of the config it was started with
            # (its command line and environment), since a worker starts its threads on demand.
            argv = Path(f"/proc/{master}/cmdline").read_bytes().split(b"\0")[:-1]
            environ = Path(f"/proc/{master}/environ").read_bytes().split(b"\0")
            assert argv[1:3] == [b"-m", web_server.encode()]
            if web_server == "gunicorn":
                script = (
                    "import sys; from gunicorn.app.wsgiapp import WSGIApplication; "
                    f"sys.argv = {[a.decode() for a in argv[2:]]!r}; cfg = WSGIApplication().cfg; "
                    "print(cfg.workers, cfg.threads, cfg.worker_class_str)"
                )
                master_env = dict(e.decode().split("=", 1) for e in environ if b"=" in e)
                assert python("-c", script, env=master_env).split() == [
                    "3",
                    "7",
                    "hermes_site.gunicorn_worker.JsonErrorsWorker",
                ]
            else:
                options = dict(itertools.pairwise(argv))
                assert options[b"--workers"] == b"3"
                assert options[b"--blocking-threads"] == b"7"
                assert argv[-1] == b"hermes_site.granian_app:application"
            assert "(3 web processes x 7 threads" in served.output()
            # Each process warmed a connection for each of its 7 threads before it took a
            # request (gunicorn: hermes_site.warm.warm_threads from post_worker_init; granian:
            # core.handover from hermes_site.granian_app).
            wait_for(
                lambda: served.output().count("7 of 7 request threads' connections warmed") == 3,
                "each web process's threads warmed",
                60,
            )
        finally:
            code, _ = served.stop(signal.SIGTERM)
        assert code == 0, served.output()


# What each web server says when it starts and when a process of it stops: (logger, first word).
WEB_SERVER_LINES = {
    "granian": [("_granian", "Listening"), ("_granian", "Spawning"), "Stopped worker"],
    "gunicorn": [("gunicorn.error", "Listening"), ("gunicorn.error", "Booting"), "Worker exiting"],
}


@pytest.mark.parametrize("web_server", ["granian", "gunicorn"])
def test_with_json_logs_every_line_serve_writes_is_a_json_object_the_web_server_s_included(
    tmp_path, web_server
):
    server = (
        "  stop_timeout_seconds: 8\n  log_format: json\n  web_workers: 2\n"
        f"  web_server: {web_server}\n"
    )
    with isolated_env(tmp_path, server=server) as env:
        served = Served(env, tmp_path / "serve.log")
        try:
            assert _call("GET", f"{served.base}/readyz", timeout=30)[0] in (200, 503)
        finally:
            code, _ = served.stop(signal.SIGTERM)
        assert code == 0, served.output()
    lines = served.output().splitlines()
    entries = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except ValueError:
            pytest.fail(f"not a JSON line: {line!r}")
    assert all(
        isinstance(e, dict) and {"time", "level", "logger", "message"} <= set(e) for e in entries
    )
    said = {(e["logger"], e["message"].split(" ")[0]) for e in entries}
    listening, started, stopped = WEB_SERVER_LINES[web_server]
    # The parent's own (the migrations' output included), the web server's and the worker's.
    for expected in (
        ("hermes.serve", "Operations"),
        ("hermes.serve", "Serving"),
        ("hermes.serve", "SIGTERM:"),
        ("hermes.serve", "Stopped"),
        listening,
        started,
        ("django-q", "Q"),
        ("hermes.request", "GET"),
    ):
        assert expected in said, expected
    # The web server's lines are written once (a web process's root logger is Django's), and
    # its access log stays off as in text mode: hermes.request has a line per request.
    assert len([e for e in entries if e["message"].startswith("Listening at")]) == 1
    assert len([e for e in entries if e["message"].startswith(stopped)]) == 2
    assert not [e for e in entries if e["logger"] in ("gunicorn.access", "granian.access")]


def test_ctrl_c_stops_both_and_the_next_start_skips_an_unchanged_collectstatic(tmp_path, model):
    with _serving_env(tmp_path, model) as env:
        first = Served(env, tmp_path / "first.log")
        groups = set(first.children().values())
        code, seconds = first.stop(signal.SIGINT)
        assert code == 0, first.output()
        assert seconds < STOP_LIMIT
        assert _alive_in_groups(groups) == []
        manifest = tmp_path / "static" / "staticfiles.json"
        collected_at = manifest.stat().st_mtime_ns
        assert "Static files collected" in first.output()

        stale = tmp_path / "prometheus" / "counter_999999.db"
        stale.write_bytes(b"a metrics file of a process long gone")
        second = Served(env, tmp_path / "second.log")
        try:
            assert "collectstatic skipped" in second.output()
            # prometheus_client's multiprocess directory: emptied, and both children use it.
            assert not stale.exists()
            for pid in second.children().values():
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                assert f"PROMETHEUS_MULTIPROC_DIR={tmp_path / 'prometheus'}".encode() in environ
            assert manifest.stat().st_mtime_ns == collected_at
            with urllib.request.urlopen(f"{second.base}/static/hermes/console.css") as page:  # noqa: S310
                assert page.status == 200
        finally:
            code, _ = second.stop(signal.SIGTERM)
        assert code == 0, second.output()


@pytest.mark.parametrize("victim", ["worker", "web"])
def test_when_one_child_dies_the_parent_stops_the_other_and_exits_non_zero(tmp_path, model, victim):
    with _serving_env(tmp_path, model) as env:
        served = Served(env, tmp_path / "serve.log")
        children = served.children()
        groups = set(children.values())
        os.kill(children[victim], signal.SIGKILL)
        try:
            code = served.process.wait(timeout=STOP_LIMIT + 5)
        finally:
            if served.process.poll() is None:
                served.process.kill()
        assert code != 0
        assert "ended on its own" in served.output()
        assert _alive_in_groups(groups) == [], served.output()


def test_a_stop_interrupts_a_hung_compression_and_hands_back_every_task_it_had_taken(
    tmp_path, model
):
    """What kept django-q2's own stop at "stopping" for minutes: a task waiting on the summary
    model, and more taken from the queue behind it. Here the model never answers the first call
    and the one worker has a second compression waiting; the stop still takes seconds, the
    session is free to compress again, and both tasks run at the next start."""
    model.then(Reply("never sent", delay=120))
    with _serving_env(tmp_path, model, server="  q_workers: 1\n") as env:
        key = _key(env)
        served = Served(env, tmp_path / "serve.log")
        hung, waiting = (_session_with_history(served.base, key) for _ in range(2))
        for sid in (hung, waiting):
            status, queued = _call(
                "POST", f"{served.base}/api/v1/sessions/{sid}/compress", key, {"wait": False}
            )
            assert status == 202, queued
        wait_for(lambda: bool(model.requests), "the summary model call", 60)
        # Both taken from the broker: one running, one in the cluster's own queue behind it.
        wait_for(lambda: _db_state(env, waiting)["queued"] == 0, "the second task taken", 30)
        assert _db_state(env, hung)["claimed"]
        assert len(model.requests) == 1

        code, seconds = served.stop(signal.SIGTERM)

        assert code == 0, served.output()
        assert seconds < STOP_LIMIT
        for sid in (hung, waiting):
            state = _db_state(env, sid)
            assert not state["claimed"], "the interrupted compression kept its claim"
            assert state["queued"] == 1, f"a task was not handed back: {served.output()}"
        # (On Redis the pusher may take a handed-back task once more before it stops; the
        # sentinel then hands it back again: still queued once, as checked above.)
        assert served.output().count("Handed task") >= 2
        assert "Traceback" not in served.output()  # a stop is not an error of the task's
        assert len(model.requests) == 1, "the waiting task was run during the stop"

        again = Served(env, tmp_path / "again.log")
        try:
            for sid in (hung, waiting):
                wait_for(lambda s=sid: _db_state(env, s)["compressed"] == 1, "a handed-back task")
        finally:
            again.stop(signal.SIGTERM)


CONTENTS = """
import django, json; django.setup()
from sessions_app.models import Message
print(json.dumps(list(Message.objects.filter(session_id__in={sids!r}).values_list(
    "content", flat=True))))
"""


def test_sigterm_under_load_of_16_appending_clients_loses_no_acknowledged_message(tmp_path, model):
    clients = 16
    with _serving_env(tmp_path, model) as env:
        key = _key(env)
        served = Served(env, tmp_path / "serve.log")
        sids = []
        for _ in range(clients):
            status, session = _call("POST", f"{served.base}/api/v1/sessions", key, {"model": "m"})
            assert status == 201
            sids.append(session["id"])
        acknowledged: list[str] = []
        answered_after_signal = []
        stopping = threading.Event()
        signalled_at = [float("inf")]
        lock = threading.Lock()

        def client(n: int) -> None:
            url = f"{served.base}/api/v1/sessions/{sids[n]}/messages"
            for i in range(10_000):  # bounded: ends when the service is gone
                content = f"client {n} message {i}"
                body = {"messages": [{"role": "user", "content": content}]}
                try:
                    status, _ = _call("POST", url, key, body, timeout=15)
                except (OSError, ValueError):
                    if stopping.is_set():
                        return
                    time.sleep(0.05)
                    continue
                if 200 <= status < 300:
                    with lock:
                        acknowledged.append(content)
                        if time.monotonic() > signalled_at[0]:
                            answered_after_signal.append(content)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
        for thread in threads:
            thread.start()
        wait_for(lambda: len(acknowledged) >= 100, "100 acknowledged appends", 60)
        stopping.set()
        signalled_at[0] = time.monotonic()
        code, seconds = served.stop(signal.SIGTERM)
        for thread in threads:
            thread.join(timeout=30)

        assert code == 0, served.output()
        assert seconds < STOP_LIMIT
        # Requests in flight when SIGTERM arrived were answered, not cut off.
        assert answered_after_signal, "no request was in flight when the stop began"
        stored = set(json.loads(python("-c", CONTENTS.format(sids=sids), env=env)))
        lost = [content for content in acknowledged if content not in stored]
        assert lost == [], f"{len(lost)} acknowledged appends are not in the database"


def test_the_static_fingerprint_changes_with_a_source_file_and_only_then(tmp_path, settings):
    from django.contrib.staticfiles.finders import get_finder

    from hermes_site.management.commands.serve import static_fingerprint

    source = tmp_path / "static"
    (source / "hermes").mkdir(parents=True)
    (source / "hermes" / "app.css").write_text("body { color: black }")
    settings.STATICFILES_DIRS = [source]
    get_finder.cache_clear()
    try:
        first = static_fingerprint()
        assert static_fingerprint() == first
        (source / "hermes" / "app.css").write_text("body { color: navy }")
        changed = static_fingerprint()
        assert changed != first
        settings.STATIC_URL = "/assets/"
        assert static_fingerprint() != changed
    finally:
        get_finder.cache_clear()


@pytest.mark.parametrize(
    "bind", ["8000", "localhost", ":8000", "host:port", "127.0.0.1:65536", "0.0.0.0:231010"]
)
def test_a_bind_address_without_host_and_port_is_refused_with_the_expected_form(bind):
    from core.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match=r"server\.bind: .*HOST:PORT"):
        parse_config({"server": {"bind": bind}})


def test_serve_refuses_a_hermes_addr_it_cannot_listen_on_before_starting_anything(monkeypatch):
    """It reached gunicorn, which failed with a traceback; now nothing starts."""
    from django.core.management import CommandError, call_command

    monkeypatch.setenv("HERMES_ADDR", "127.0.0.1:231010")
    with pytest.raises(CommandError, match=r"HERMES_ADDR='127.0.0.1:231010': .*0 to 65535"):
        call_command("serve", "--no-migrate")


def test_the_serve_defaults_suit_sqlite_and_stop_within_ten_seconds():
    from core.config import parse_config

    server = parse_config({}).server
    assert server.bind == "127.0.0.1:8000"
    assert server.web_workers * server.web_threads >= 4 and server.web_workers <= 4
    assert server.stop_timeout_seconds + 1 < STOP_LIMIT  # the parent's margin included


def test_gunicorn_marks_an_ended_web_process_dead_for_the_metrics(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from hermes_site import gunicorn_conf

    live = tmp_path / "gauge_livesum_4242.db"
    other = tmp_path / "gauge_livesum_4343.db"
    live.write_bytes(b"")
    other.write_bytes(b"")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    gunicorn_conf.child_exit(None, SimpleNamespace(pid=4242))
    assert not live.exists()  # its live gauges no longer count
    assert other.exists()


def test_a_streamed_turn_streams_through_gunicorn_and_a_hang_up_leaves_the_session_whole(
    tmp_path, model
):
    """The production server (gunicorn's threaded workers) passes the events on as they are
    written, not when the reply is done; a client that hangs up mid-reply leaves the user's
    message stored and the cut-off reply rolled back as "interrupted"."""
    sections = (
        f"model:\n  default: gpt-4o\n  base_url: {model.base_url}\n"
        f"auxiliary:\n  compression:\n    model: fake-summary\n    base_url: {model.base_url}\n"
    )
    with isolated_env(tmp_path, server="  stop_timeout_seconds: 8\n", sections=sections) as env:
        key = _key(env)
        served = Served(env, tmp_path / "serve.log")
        try:
            status, session = _call("POST", f"{served.base}/api/v1/sessions", key, {})
            assert status == 201, session
            path = f"/api/v1/sessions/{session['id']}/turn"
            model.then(Reply("one two three four five six", chunks=6, chunk_delay=0.4))
            seen: dict[str, float] = {}
            started = time.monotonic()
            conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
            headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
            conn.request("POST", path, json.dumps({"content": "count", "stream": True}), headers)
            response = conn.getresponse()
            assert response.status == 200
            assert response.getheader("Content-Type").startswith("text/event-stream")
            while line := response.readline():
                if line.startswith(b"event: "):
                    seen.setdefault(line[7:].strip().decode(), time.monotonic() - started)
            conn.close()
            assert seen["done"] - seen["delta"] >= 1.5, seen  # not buffered to the end

            model.then(Reply("piece " * 40, chunks=20, chunk_delay=0.15))
            conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
            conn.request("POST", path, json.dumps({"content": "long one", "stream": True}), headers)
            response = conn.getresponse()
            while line := response.readline():
                if line.startswith(b"event: delta"):
                    break
            response.close()
            conn.close()  # hang up mid-reply

            def rows():
                url = f"{served.base}/api/v1/sessions/{session['id']}/messages"
                return _call("GET", url, key)[1]["items"]

            wait_for(lambda: any(r["kind"] == "rolled_back" for r in rows()), "the cut", 30)
            live = [(r["role"], r["content"]) for r in rows() if r["kind"] == "live"]
            assert live == [
                ("user", "count"),
                ("assistant", "one two three four five six"),
                ("user", "long one"),
            ]
        finally:
            served.stop()


@pytest.mark.parametrize(
    ("bind", "where"),
    [
        ("127.0.0.1:8000", ["--host", "127.0.0.1", "--port", "8000"]),
        ("[::1]:9000", ["--host", "::1", "--port", "9000"]),
        ("unix:/run/hermes.sock", ["--uds", "/run/hermes.sock"]),
    ],
)
def test_granian_s_command_carries_the_address_processes_threads_and_stop_budget(
    bind, where, settings, tmp_path
):
    from core.config import parse_config
    from hermes_site.management.commands.serve import web_server_argv

    settings.DATA_DIR = tmp_path  # where its log config is written
    server = parse_config(
        {"server": {"web_workers": 3, "web_threads": 5, "stop_timeout_seconds": 2}}
    ).server
    argv = web_server_argv(server, bind)
    assert argv[1:3] == ["-m", "granian"] and argv[-1] == "hermes_site.granian_app:application"
    assert "--factory" in argv
    at = argv.index(where[0])
    assert argv[at : at + len(where)] == where
    options = dict(itertools.pairwise(argv))
    assert options["--workers"] == "3" and options["--blocking-threads"] == "5"
    assert options["--workers-kill-timeout"] == "1"  # the stop budget less the parent's margin
    logging = json.loads(Path(options["--log-config"]).read_text())
    assert logging["loggers"]["granian.access"]["handlers"] == []  # hermes.request logs requests
    plain = web_server_argv(server, bind, "bench._wsgi_floor:app", factory=False)
    assert plain[-1] == "bench._wsgi_floor:app" and "--factory" not in plain
    assert plain[:-1] == [arg for arg in argv[:-1] if arg != "--factory"]  # the same otherwise
    assert web_server_argv(server.model_copy(update={"web_server": "gunicorn"}), bind)[1:3] == [
        "-m",
        "gunicorn",
    ]


def test_an_unknown_web_server_is_refused_naming_the_choices():
    from core.config import ConfigError, parse_config

    with pytest.raises(ConfigError) as refused:
        parse_config({"server": {"web_server": "nginx"}})
    assert "server.web_server" in str(refused.value)
    assert "granian" in str(refused.value) and "gunicorn" in str(refused.value)
