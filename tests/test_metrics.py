"""GET /metrics: who may read it, its format, and that its values follow what the service does
-- compressions (read from the event trail, so a worker's count too), requests, searches, the
queue and guards."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from compression.models import CompressionEvent
from hermes_site import metrics
from sessions_app.models import Session
from tests.test_compression import turn

TOKEN = "metrics-token-0123456789abcdef"

FAMILIES = (
    "hermes_compression_events_total",
    "hermes_compression_tokens_before_total",
    "hermes_compression_tokens_after_total",
    "hermes_compression_duration_seconds",
    "hermes_compression_fallbacks_total",
    "hermes_compression_failures_total",
    "hermes_summary_retention_ratio",
    "hermes_summary_below_floor_total",
    "hermes_sessions_held",
    "hermes_task_queue_depth",
    "hermes_task_queue_oldest_age_seconds",
    "hermes_search_duration_seconds",
    "hermes_http_request_duration_seconds",
    "hermes_database_size_bytes",
    "hermes_relation_size_bytes",
)


@pytest.fixture(autouse=True)
def fresh_parts():
    """Each test reads the database afresh (a part kept from another test would be stale)."""
    metrics.forget()
    yield
    metrics.forget()


def scrape(client: Client | None = None, **headers: str) -> str:
    response = (client or Client()).get("/metrics", **headers)
    assert response.status_code == 200, response.content
    return response.content.decode()


def value(text: str, family: str, /, **labels: str) -> float:
    """The sum of the samples ``family{labels}`` (labels matched as a subset), 0 when none."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(family):
            continue
        match = re.fullmatch(r"([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)", line)
        if match is None or match.group(1) != family:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(3) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(match.group(4))
    return total


def test_a_loopback_client_reads_metrics_without_a_token_in_prometheus_text_format(db):
    response = Client().get("/metrics")  # the test client's REMOTE_ADDR is 127.0.0.1
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    text = response.content.decode()
    assert "# TYPE hermes_compression_events_total counter" in text
    assert "# TYPE hermes_compression_duration_seconds histogram" in text


def test_without_a_token_a_remote_or_proxied_client_is_refused_and_told_how_to_enable_it(db):
    remote = Client().get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert remote.status_code == 403
    assert "server.metrics_token" in remote.json()["detail"]
    proxied = Client().get("/metrics", HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert proxied.status_code == 403


def test_with_a_token_only_the_right_bearer_token_reads_metrics_from_anywhere(db, hermes_config):
    hermes_config(server={"metrics_token": TOKEN})
    missing = Client().get("/metrics")
    assert missing.status_code == 401
    assert "Authorization: Bearer" in missing.json()["detail"]
    assert missing["WWW-Authenticate"].startswith("Bearer")
    wrong = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer " + TOKEN[:-1] + "X")
    assert wrong.status_code == 401 and "Wrong metrics token" in wrong.json()["detail"]
    assert wrong.json()["request_id"] == wrong["X-Request-ID"]
    right = Client().get(
        "/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION=f"Bearer {TOKEN}"
    )
    assert right.status_code == 200 and "hermes_sessions_held" in right.content.decode()


def test_a_short_metrics_token_is_refused_at_start_up():
    from core.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match=r"server\.metrics_token: .*at least 16") as refused:
        parse_config({"server": {"metrics_token": "nearly-secret"}})
    assert "nearly-secret" not in str(refused.value)  # start-up output ends up in logs


def test_every_documented_family_is_exported(gateway):
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [m for n in range(12) for m in turn(n)]})
    gateway.post(f"/sessions/{sid}/compress", {})
    gateway.get("/search", q="item")
    text = scrape()
    for family in FAMILIES:
        assert re.search(rf"^{family}(_bucket|_count)?[{{ ]", text, re.M), family


def test_a_compression_moves_the_counters_tokens_and_latency_histogram(gateway):
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [m for n in range(12) for m in turn(n)]})
    before = scrape()
    response = gateway.post(f"/sessions/{sid}/compress", {})
    assert response.status_code == 200 and response.json()["outcome"] == "fallback"
    metrics.forget()
    after = scrape()

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("hermes_compression_events_total", trigger="manual_api", outcome="fallback") == 1
    assert moved("hermes_compression_fallbacks_total", trigger="manual_api") == 1
    pass_ = response.json()["passes"][0]
    assert (
        moved("hermes_compression_tokens_before_total", trigger="manual_api")
        == (pass_["tokens_before"])
    )
    assert (
        moved("hermes_compression_tokens_after_total", trigger="manual_api")
        == (pass_["tokens_after"])
    )
    assert moved("hermes_compression_duration_seconds_count", outcome="fallback") == 1
    assert moved("hermes_compression_duration_seconds_bucket", outcome="fallback", le="+Inf") == 1
    # Every written summary is scored: one more in the histogram, its sum the event's score.
    event = CompressionEvent.objects.get(pk=pass_["event_id"])
    assert event.retention is not None
    assert moved("hermes_summary_retention_ratio_count", outcome="fallback") == 1
    assert moved("hermes_summary_retention_ratio_sum", outcome="fallback") == pytest.approx(
        event.retention
    )
    low = 1 if event.below_floor else 0
    assert moved("hermes_summary_below_floor_total", outcome="fallback") == low


def test_api_requests_and_searches_move_their_histograms_by_route_status_and_index(gateway):
    before = scrape()
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(
        f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "缓存配置"}]}
    )
    gateway.get(f"/sessions/{sid}/context")
    gateway.get("/sessions/00000000-0000-0000-0000-000000000000/context")
    assert gateway.get("/search", q="缓存").json()["index"] == "bigram"
    after = scrape()
    route = "/api/v1/sessions/<session_id>/context"
    for status in ("200", "404"):
        labels = {"route": route, "method": "GET", "status": status}
        name = "hermes_http_request_duration_seconds_count"
        assert value(after, name, **labels) - value(before, name, **labels) == 1, status
    assert sid not in after  # ids never become labels
    Client().generic("BREW", "/healthz")
    assert 'method="BREW"' not in scrape()  # nor made-up methods
    name = "hermes_search_duration_seconds_count"
    assert value(after, name, index="bigram") - value(before, name, index="bigram") == 1


def test_sessions_held_back_by_a_guard_are_counted(gateway):
    ids = [gateway.open()["id"] for _ in range(3)]
    later = timezone.now() + timedelta(minutes=5)
    Session.objects.filter(pk=ids[0]).update(cooldown_until=later)
    Session.objects.filter(pk=ids[1]).update(thrash_lock_until=later)
    Session.objects.filter(pk=ids[2]).update(compressing_until=later)
    Session.objects.filter(pk=ids[2]).update(cooldown_until=timezone.now() - timedelta(seconds=1))
    text = scrape()
    for state in ("cooldown", "thrash_lock", "compressing"):
        assert value(text, "hermes_sessions_held", state=state) == 1, state


def test_a_waiting_task_shows_in_the_queue_depth_and_its_age(db):
    from django_q.brokers import get_broker
    from django_q.tasks import async_task

    broker = get_broker()
    broker.purge_queue()
    try:
        empty = scrape()
        assert value(empty, "hermes_task_queue_depth") == 0
        assert value(empty, "hermes_task_queue_oldest_age_seconds") == 0
        async_task("math.floor", 1.5, sync=False)  # queued for a worker (tests run none)
        metrics.forget()
        text = scrape()
        assert value(text, "hermes_task_queue_depth") == 1
        assert 0 <= value(text, "hermes_task_queue_oldest_age_seconds") < 60
    finally:
        broker.purge_queue()


def test_sizes_name_the_database_and_its_search_indexes(db):
    from django.db import connection

    text = scrape()
    assert value(text, "hermes_database_size_bytes") > 0
    messages = value(text, "hermes_relation_size_bytes", name="sessions_app_message")
    assert messages > 0
    if connection.vendor == "sqlite":
        assert "fts" in " ".join(re.findall(r'name="([^"]+)"', text))


def test_a_part_is_kept_for_a_hundred_times_what_it_cost(monkeypatch):
    calls = []
    part = metrics.Part("probe", lambda: calls.append(1) or [])
    clock = iter([0.0, 0.001, 10.0, 10.2])  # the first read "took" 1 ms, the second 200 ms
    monkeypatch.setattr(metrics.time, "perf_counter", lambda: next(clock))
    part.collect()
    assert 0 < part.until - metrics.time.monotonic() <= 0.1  # cheap: read again next scrape
    part.forget()
    part.collect()
    part.collect()
    assert len(calls) == 2  # dear: kept, not read again
    assert 19 < part.until - metrics.time.monotonic() <= 20


def test_sizes_are_kept_at_least_a_minute():
    (sizes,) = [part for part in metrics.PARTS if part.name == "sizes"]
    sizes.collect()
    assert sizes.until - metrics.time.monotonic() > 55


WEB_SERVERS = {
    "gunicorn": ["gunicorn", "-w", "2", "-b", "127.0.0.1:{port}", "hermes_site.wsgi"],
    "granian": [
        "granian", "--interface", "wsgi", "--workers", "2", "--port", "{port}",
        "hermes_site.wsgi:application",
    ],
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("web_server", sorted(WEB_SERVERS))
def test_under_either_web_server_the_processes_latencies_are_added_up(tmp_path, web_server):
    """Several web processes with PROMETHEUS_MULTIPROC_DIR: whichever answers /metrics counts
    every process's requests."""
    import subprocess
    import sys
    import time
    import urllib.request

    from tests.processes import ROOT, isolated_env, wait_for
    from tests.test_live_service import _free_port

    shared = tmp_path / "prometheus"
    shared.mkdir()
    with isolated_env(tmp_path) as env:
        env = {**env, "PROMETHEUS_MULTIPROC_DIR": str(shared)}
        port = _free_port()
        command = [part.format(port=port) for part in WEB_SERVERS[web_server]]
        server = subprocess.Popen(
            [sys.executable, "-m", *command],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"

        def get(path: str) -> str:
            with urllib.request.urlopen(base + path, timeout=30) as response:  # noqa: S310
                return response.read().decode()

        try:
            wait_for(lambda: get("/healthz") is not None, web_server)
            sent = 1
            deadline = time.monotonic() + 60
            # Until both processes have answered some (each keeps a file of its own).
            while len(list(shared.glob("histogram_*.db"))) < 2 and time.monotonic() < deadline:
                get("/healthz")
                sent += 1
            assert len(list(shared.glob("histogram_*.db"))) == 2
            for _ in range(3):  # each scrape is answered by one process or the other
                text = get("/metrics")
                count = value(text, "hermes_http_request_duration_seconds_count", route="/healthz")
                assert count == sent
        finally:
            server.terminate()
            server.wait(timeout=15)
