"""Structured logs and request ids: one JSON line per request and per compression with
``server.log_format: json``; a request id taken from ``X-Request-ID`` (when short and safe) or
made, echoed in the response, in every error answer, and carried into the compression task the
request queued -- through a real worker process too."""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest
from django.test import Client

from compression.tasks import compress_task
from core.logs import JsonFormatter, RequestIdFilter
from tests.processes import ROOT, isolated_env, python, stop_all, wait_for
from tests.test_compression import turn
from tests.test_live_service import _call, _free_port


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """What the service's handler writes with ``server.log_format: json``, for the
    ``hermes.*`` loggers."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestIdFilter())
    logger = logging.getLogger("hermes")
    logger.addHandler(handler)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)


def parsed(stream: io.StringIO, event: str | None = None) -> list[dict]:
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    return [line for line in lines if event is None or line.get("event") == event]


def test_a_safe_request_id_is_echoed_and_an_unsafe_or_missing_one_replaced(db):
    given = Client().get("/healthz", HTTP_X_REQUEST_ID="lb-7f3a.2:9")
    assert given["X-Request-ID"] == "lb-7f3a.2:9"
    for bad in ("x" * 65, "two words", "<script>", ""):
        made = Client().get("/healthz", HTTP_X_REQUEST_ID=bad)["X-Request-ID"]
        assert re.fullmatch(r"[0-9a-f]{32}", made), bad
    assert Client().get("/healthz")["X-Request-ID"] != Client().get("/healthz")["X-Request-ID"]


def test_every_error_answer_carries_the_request_id(gateway, monkeypatch):
    headers = {"HTTP_X_REQUEST_ID": "req-errors-1"}
    unauthenticated = Client().get("/api/v1/sessions", **headers)
    missing = gateway.client.get(
        "/api/v1/sessions/00000000-0000-0000-0000-000000000000",
        HTTP_AUTHORIZATION=f"Bearer {gateway.key}",
        **headers,
    )
    invalid = gateway.client.post(
        "/api/v1/sessions",
        {"model": 5},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {gateway.key}",
        **headers,
    )
    for response, status in ((unauthenticated, 401), (missing, 404), (invalid, 422)):
        assert response.status_code == status
        assert response.json()["request_id"] == "req-errors-1", response.content
        assert response.json()["detail"]
        if response.has_header("Content-Length"):  # what a client reads to: the whole body
            assert int(response["Content-Length"]) == len(response.content)

    def broken(*args, **kwargs):
        raise RuntimeError("/srv/secret/path went wrong")

    monkeypatch.setattr("sessions_app.api.routes.Session.objects.filter", broken, raising=False)
    failed = gateway.client.get(
        "/api/v1/sessions", HTTP_AUTHORIZATION=f"Bearer {gateway.key}", **headers
    )
    assert failed.status_code == 500
    body = failed.json()
    assert body["request_id"] == "req-errors-1" and "error id" in body["detail"]
    assert "/srv/secret" not in failed.content.decode()


def test_the_unexpected_error_log_line_names_the_request(gateway, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("sessions_app.api.routes.Session.objects.filter", broken, raising=False)
    gateway.client.get(
        "/api/v1/sessions", HTTP_AUTHORIZATION=f"Bearer {gateway.key}", HTTP_X_REQUEST_ID="r-500"
    )
    (record,) = [r for r in caplog.records if r.name == "hermes.errors"]
    assert "(request r-500)" in record.getMessage()


def test_a_json_line_per_request_names_route_status_time_session_channel_and_id(
    gateway, hermes_config, json_lines
):
    hermes_config(server={"log_format": "json"})
    sid = gateway.open()["id"]
    gateway.client.get(
        f"/api/v1/sessions/{sid}/context",
        HTTP_AUTHORIZATION=f"Bearer {gateway.key}",
        HTTP_X_REQUEST_ID="req-ctx-1",
    )
    line = parsed(json_lines, "request")[-1]
    assert line["route"] == "/api/v1/sessions/<session_id>/context"
    assert line["method"] == "GET" and line["status"] == 200
    assert isinstance(line["ms"], float) and line["ms"] >= 0
    assert line["session_id"] == sid
    assert line["channel"] == "telegram"
    assert line["request_id"] == "req-ctx-1"
    assert line["level"] == "INFO" and line["time"].endswith("+00:00")


def test_django_s_own_line_for_an_error_answer_names_the_request(gateway, json_lines):
    logger = logging.getLogger("django.request")
    handler = logging.getLogger("hermes").handlers[-1]
    logger.addHandler(handler)
    try:
        Client().get("/api/v1/sessions", HTTP_X_REQUEST_ID="req-django-1")
    finally:
        logger.removeHandler(handler)
    (line,) = [x for x in parsed(json_lines) if x["logger"] == "django.request"]
    assert line["status_code"] == 401 and line["request_id"] == "req-django-1"


def test_with_text_logs_no_request_line_is_written(gateway, json_lines):
    gateway.get("/sessions")
    assert parsed(json_lines, "request") == []


def test_the_compression_task_carries_the_request_id_it_was_queued_with(
    gateway, monkeypatch, json_lines, django_capture_on_commit_callbacks
):
    """The request passes its id to the task as a kwarg (not through the worker's context)."""
    import django_q.tasks

    queued = []
    monkeypatch.setattr(django_q.tasks, "async_task", lambda *a, **kw: queued.append((a, kw)))
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [m for n in range(12) for m in turn(n)]})
    gateway.client.post(
        f"/api/v1/sessions/{sid}/compress",
        {"wait": False},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {gateway.key}",
        HTTP_X_REQUEST_ID="req-task-7",
    )
    (args, kwargs), *_ = queued
    assert args[0] == "compression.tasks.compress_task"
    assert kwargs["request_id"] == "req-task-7"

    # The worker calls the task with those arguments, in a context of its own.
    with django_capture_on_commit_callbacks(execute=True):
        result = compress_task(*args[1:], request_id=kwargs["request_id"])
    (line,) = parsed(json_lines, "compression")
    assert line["request_id"] == "req-task-7"
    assert line["session_id"] == sid and line["trigger"] == "manual_api"
    assert line["outcome"] == result["outcome"] == "fallback"
    assert line["tokens_before"] > line["tokens_after"] > 0
    assert isinstance(line["ms"], int)


@pytest.mark.slow
def test_settings_switch_the_console_handler_to_json(tmp_path):
    with isolated_env(tmp_path, server="  log_format: json\n") as env:
        script = (
            "import django, logging; django.setup(); "
            "logging.getLogger('hermes.probe').warning('hello %s', 'there', extra={'k': 1})"
        )
        result = subprocess.run(
            [sys.executable, "-c", script],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    (line,) = [json.loads(x) for x in result.stderr.splitlines() if "hermes.probe" in x]
    assert line["message"] == "hello there" and line["k"] == 1 and line["request_id"] is None


@pytest.fixture
def live(tmp_path):
    """A web process and a real worker with JSON logs (each to its own file) and a loopback
    summary model."""
    from compression.testing.fake_model import FakeModelServer, Reply

    with FakeModelServer() as model:
        model.script.default = Reply("## Goal\nSummarised by the loopback model.")
        sections = (
            f"auxiliary:\n  compression:\n    model: fake-summary\n    base_url: {model.base_url}\n"
        )
        with isolated_env(tmp_path, server="  log_format: json\n", sections=sections) as env:
            out = python("manage.py", "create_channel", "live", env=env, timeout=60)
            key = out.split("store it now): ")[1].strip()
            port = _free_port()
            logs = {name: tmp_path / f"{name}.log" for name in ("web", "worker")}
            commands = {
                "web": ["runserver", "--noreload", f"127.0.0.1:{port}"],
                "worker": ["qcluster"],
            }
            processes = []
            for name, command in commands.items():
                with logs[name].open("w") as handle:
                    processes.append(
                        subprocess.Popen(
                            [sys.executable, "manage.py", *command],
                            cwd=ROOT,
                            env=env,
                            stdout=handle,
                            stderr=subprocess.STDOUT,
                        )
                    )
            base = f"http://127.0.0.1:{port}"
            try:
                wait_for(
                    lambda: _call("GET", f"{base}/api/v1/sessions", key, timeout=5)[0] == 200,
                    "the web",
                )
                yield base, key, logs
            finally:
                stop_all(processes)


def _json_lines(path) -> list[dict]:
    found = []
    for text in path.read_text(encoding="utf-8").splitlines():
        if text.startswith("{"):
            found.append(json.loads(text))
    return found


def _metrics(base: str) -> str:
    with urllib.request.urlopen(f"{base}/metrics", timeout=30) as response:  # noqa: S310
        return response.read().decode()


@pytest.mark.slow
def test_a_compression_in_the_real_worker_logs_the_request_id_and_moves_the_metrics(live):
    from tests.test_metrics import value

    base, key, logs = live
    status, session = _call("POST", f"{base}/api/v1/sessions", key, {"model": "gpt-4o"})
    assert status == 201
    sid = session["id"]
    messages = [m for n in range(12) for m in turn(n)]
    _call("POST", f"{base}/api/v1/sessions/{sid}/messages", key, {"messages": messages})
    before = _metrics(base)

    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{base}/api/v1/sessions/{sid}/compress",
        data=json.dumps({"wait": True, "wait_seconds": 60}).encode(),
        method="POST",
        headers={
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "X-Request-ID": "live-compress-1",
        },
    )
    with urllib.request.urlopen(request, timeout=90) as response:  # noqa: S310 - loopback
        assert response.headers["X-Request-ID"] == "live-compress-1"
        assert json.loads(response.read())["outcome"] == "compressed"

    deadline = time.monotonic() + 30
    while True:  # the worker writes its line after the commit the web has already seen
        lines = [x for x in _json_lines(logs["worker"]) if x.get("event") == "compression"]
        if lines or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    (line,) = lines
    assert line["request_id"] == "live-compress-1"
    assert line["session_id"] == sid and line["outcome"] == "compressed"
    assert line["tokens_before"] > line["tokens_after"]
    requests = [x for x in _json_lines(logs["web"]) if x.get("event") == "request"]
    (compress,) = [x for x in requests if x["request_id"] == "live-compress-1"]
    assert compress["route"] == "/api/v1/sessions/<session_id>/compress"
    assert compress["status"] == 200 and compress["channel"] == "live"

    # Served by the web process; the compression ran in the worker. A reading is kept for 100
    # times what it cost (milliseconds here), so it shows within a second or two.
    moves = (
        ("hermes_compression_events_total", {"trigger": "manual_api", "outcome": "compressed"}),
        ("hermes_compression_duration_seconds_count", {"outcome": "compressed"}),
    )
    deadline = time.monotonic() + 20
    while True:
        after = _metrics(base)
        moved = [value(after, f, **labels) - value(before, f, **labels) for f, labels in moves]
        if moved == [1, 1] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert moved == [1, 1]
    assert (
        value(after, "hermes_compression_tokens_before_total", trigger="manual_api")
        == (line["tokens_before"])
    )


def test_a_page_s_server_error_shows_the_request_id(admin_client, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("/etc/hermes/secret")

    monkeypatch.setattr("compression.pages.views.render", broken)
    response = admin_client.get("/console/", HTTP_X_REQUEST_ID="req-page-500")
    assert response.status_code == 500
    assert "Request id: req-page-500" in response.content.decode()
    assert response["X-Request-ID"] == "req-page-500"
