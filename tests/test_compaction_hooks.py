"""Compaction hooks (issue #19 item 4): signed pre- and post-compact deliveries to a real
loopback HTTP server, the fail-closed checkpoint, confirmation of manual compressions, retries,
and every delivery on record."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from compression.engine.compress import compress
from compression.models import CompressionEvent, HookDelivery
from compression.testing.fake_model import FakeModelServer, Reply
from core.config import ConfigError, parse_config
from sessions_app.models import Message, Session
from tests.test_compression import assert_consistent, turn

SECRET = "hook-secret-0123456789abcdef"
Trigger = CompressionEvent.Trigger


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.monotonic() when it arrived

    @property
    def json(self) -> dict:
        return json.loads(self.body)


class HookServer:
    """A loopback receiver: records every request; answers with the next scripted behaviour
    ("ok", an int status, "garbage" -- bytes that are not HTTP --, "not-json", or
    ("stall", seconds), ("drip", seconds) -- a valid answer a byte at a time), else 200 with
    ``{}``."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.script: deque = deque()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                server.requests.append(
                    Recorded(self.path, dict(self.headers.items()), body, time.monotonic())
                )
                what = server.script.popleft() if server.script else "ok"
                if isinstance(what, tuple) and what[0] == "stall":
                    time.sleep(what[1])
                    what = "ok"
                if isinstance(what, tuple) and what[0] == "drip":  # a byte every what[1] s
                    for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}":
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(what[1])
                    self.close_connection = True
                    return
                if what == "garbage":
                    self.wfile.write(b"\x00\x01 this is not HTTP\r\n\r\n")
                    self.close_connection = True
                    return
                status, answer = (200, b"{}") if what == "ok" else (200, b"<html>ok</html>")
                if isinstance(what, int):
                    status, answer = what, b'{"error": "no"}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def url(self, path: str) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{path}"

    def then(self, *behaviours) -> HookServer:
        self.script.extend(behaviours)
        return self

    def of(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == path]

    def __enter__(self) -> HookServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def receiver():
    with HookServer() as server:
        yield server


@pytest.fixture
def hooked(hermes_config, receiver):
    """The service with hooks at the receiver (``/pre`` and ``/post``); keyword arguments go to
    ``compression.hooks``, ``checkpoint_required`` to ``compression``."""

    def apply(checkpoint_required: bool = True, **hooks):
        return hermes_config(
            compression={
                "checkpoint_required": checkpoint_required,
                "hooks": {
                    "pre_compact": receiver.url("/pre"),
                    "post_compact": [receiver.url("/post")],
                    "secret": SECRET,
                    "timeout_seconds": 1,
                    "retry_backoff_seconds": 0.05,
                    **hooks,
                },
            }
        )

    apply()
    return apply


@pytest.fixture
def long_session(gateway):
    sid = gateway.open(system_prompt="sys", external_id="chat-42")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [m for n in range(12) for m in turn(n)]})
    return Session.objects.get(pk=sid)


def snapshot(session: Session) -> tuple:
    """Everything a compression could change: every row as stored, and the counters."""
    session.refresh_from_db()
    rows = list(Message.objects.filter(session=session).order_by("id").values())
    return rows, session.live_tokens, session.live_messages, session.compressions


def verify(recorded: Recorded) -> bool:
    expected = "sha256=" + hmac.new(SECRET.encode(), recorded.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(recorded.headers["X-Hermes-Signature"], expected)


# --- Configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hooks", "key"),
    [
        ({"pre_compact": "ftp://hooks.example/pre"}, "compression.hooks.pre_compact"),
        ({"post_compact": ["https://ok.example/", "file:///x"]}, "compression.hooks.post_compact"),
        ({"pre_compact": "hooks.example/pre"}, "compression.hooks.pre_compact"),
        ({"pre_compact": "http://hooks.example:abc/"}, "compression.hooks.pre_compact"),
        ({"pre_compact": "http://hooks.example:99999/"}, "compression.hooks.pre_compact"),
        ({"pre_compact": "http://hooks example/"}, "compression.hooks.pre_compact"),
        ({"post_compact": f"http://{'a' * 64}.example/"}, "compression.hooks.post_compact"),
        ({"secret_env": "HERMES_TEST_NO_SUCH_VARIABLE"}, "compression.hooks"),
        ({"timeout_seconds": 0}, "compression.hooks.timeout_seconds"),
        ({"timeout_seconds": 600}, "compression.hooks.timeout_seconds"),
        ({"post_compact_retries": 99}, "compression.hooks.post_compact_retries"),
    ],
)
def test_a_hook_setting_that_cannot_work_stops_start_up_naming_the_key(hooks, key):
    with pytest.raises(ConfigError) as caught:
        parse_config({"compression": {"hooks": hooks}})
    assert key in str(caught.value)


def test_a_short_secret_is_refused_without_being_echoed():
    with pytest.raises(ConfigError) as caught:
        parse_config({"compression": {"hooks": {"secret": "tooshort"}}})
    assert "compression.hooks.secret" in str(caught.value)
    assert "tooshort" not in str(caught.value)


def test_the_secret_can_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("HOOK_SECRET_FOR_TEST", SECRET)
    config = parse_config({"compression": {"hooks": {"secret_env": "HOOK_SECRET_FOR_TEST"}}})
    assert config.compression.hooks.secret == SECRET
    assert SECRET not in repr(config)


def test_one_url_or_a_list_is_accepted():
    one = parse_config({"compression": {"hooks": {"pre_compact": "https://a.example/x"}}})
    two = parse_config({"compression": {"hooks": {"post_compact": ["http://a/x", "http://b/y"]}}})
    assert one.compression.hooks.pre_compact == ("https://a.example/x",)
    assert two.compression.hooks.post_compact == ("http://a/x", "http://b/y")


# --- Pre-compact ------------------------------------------------------------------------------


def test_the_pre_compact_hook_hears_of_the_span_signed_before_the_summary(
    hooked, receiver, long_session
):
    result = compress(long_session, trigger=Trigger.THRESHOLD_PRE)
    assert result.outcome == "fallback"
    (pre,) = receiver.of("/pre")
    assert verify(pre)
    assert pre.headers["X-Hermes-Event"] == "pre_compact"
    payload = pre.json
    assert payload["delivery_id"] == pre.headers["X-Hermes-Delivery"]
    assert payload["session"] == {
        "id": str(long_session.pk),
        "external_id": "chat-42",
        "channel": "telegram",
        "model": "gpt-4o",
    }
    assert payload["trigger"] == "threshold_pre" and payload["automatic"] is True
    summary = result.passes[0].summary
    span = payload["span"]
    assert (span["first_position"], span["last_position"]) == (
        summary.covers_from_position,
        summary.covers_to_position,
    )
    archived = Message.objects.filter(summarized_by=summary)
    assert span["messages"] == archived.count() == result.passes[0].event.rows_archived
    assert span["tokens"] == sum(m.token_count for m in archived)
    assert "rows" not in payload  # include_rows is off
    (delivery,) = HookDelivery.objects.filter(kind="pre_compact")
    assert delivery.ok and delivery.status_code == 200 and delivery.signed
    assert delivery.event == result.passes[0].event


def test_include_rows_sends_the_span_as_openai_messages(hooked, receiver, long_session):
    hooked(include_rows=True)
    result = compress(long_session, trigger=Trigger.THRESHOLD_PRE)
    rows = receiver.of("/pre")[0].json["rows"]
    summary = result.passes[0].summary
    archived = Message.objects.filter(summarized_by=summary).order_by("position")
    assert [r["position"] for r in rows] == [m.position for m in archived]
    assert [r["message"] for r in rows] == [m.as_openai() for m in archived]
    assert any(r["message"].get("tool_calls") for r in rows)


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (500, "answered HTTP 500"),
        ("garbage", "not HTTP"),
        ("not-json", "body that is not JSON"),
        (("stall", 3), "no answer within 1 s"),
        (("drip", 0.3), "no answer within 1 s"),  # each byte well inside the socket timeout
    ],
)
@pytest.mark.slow
def test_a_failing_checkpoint_leaves_an_automatic_compression_untouched(
    hooked, receiver, long_session, answer, error
):
    before = snapshot(long_session)
    receiver.then(answer)
    started = time.monotonic()
    result = compress(long_session, trigger=Trigger.THRESHOLD_POST)
    assert time.monotonic() - started < 2.5  # bounded by the hook's 1 s timeout
    assert snapshot(long_session) == before
    assert not Message.objects.filter(session=long_session, is_summary=True).exists()
    (event,) = result.events
    assert event.outcome == "failed" and event.rows_archived == 0
    assert error in event.reason and "checkpoint_required" in event.reason
    assert "\n" not in event.reason and "Traceback" not in event.error
    (delivery,) = HookDelivery.objects.all()
    assert not delivery.ok and error in delivery.error and delivery.event == event
    assert receiver.of("/post") == []
    long_session.refresh_from_db()
    assert long_session.cooldown_until is not None and long_session.failure_streak == 0


@pytest.mark.parametrize(
    ("required", "trigger", "confirmed", "second_called"),
    [
        (True, Trigger.THRESHOLD_POST, False, False),
        (True, Trigger.MANUAL_API, False, False),
        (True, Trigger.MANUAL_API, True, True),
        (False, Trigger.THRESHOLD_POST, False, True),
    ],
)
def test_hooks_after_a_failure_that_stops_the_pass_are_not_told_of_it(
    hooked, receiver, long_session, required, trigger, confirmed, second_called
):
    hooked(
        checkpoint_required=required,
        pre_compact=[receiver.url("/pre"), receiver.url("/pre-second")],
    )
    receiver.then(503)  # the first hook fails
    compress(long_session, trigger=trigger, confirmed=confirmed)
    assert len(receiver.of("/pre")) == 1
    assert len(receiver.of("/pre-second")) == (1 if second_called else 0)
    assert HookDelivery.objects.filter(kind="pre_compact").count() == 1 + second_called


def test_a_hook_that_is_not_listening_is_a_failed_checkpoint(hooked, long_session):
    hooked(pre_compact="http://127.0.0.1:9/pre")  # the discard port: nothing listens
    before = snapshot(long_session)
    result = compress(long_session, trigger=Trigger.IDLE)
    assert snapshot(long_session) == before
    assert "connection refused" in result.events[0].reason


def test_an_automatic_compression_queued_by_an_append_is_stopped_by_the_checkpoint(
    hooked, receiver, gateway, long_session, django_capture_on_commit_callbacks
):
    receiver.then(503)
    rows, live_tokens, live_messages, _ = snapshot(long_session)
    with django_capture_on_commit_callbacks(execute=True):
        response = gateway.post(
            f"/sessions/{long_session.pk}/messages",
            {
                "messages": [{"role": "user", "content": "next"}],
                "usage": {"prompt_tokens": 120_000, "completion_tokens": 10},
            },
        )
    assert response.status_code in (200, 201), response.content
    assert response.json()["decisions"][0]["action"] == "queued"
    after, now_tokens, now_messages, compressions = snapshot(long_session)
    (appended,) = after[len(rows) :]
    assert after[: len(rows)] == rows and appended["active"]  # only the append changed
    assert (now_tokens, now_messages) == (live_tokens + appended["token_count"], live_messages + 1)
    assert compressions == 0
    event = CompressionEvent.objects.get(session=long_session, outcome="failed")
    assert event.trigger == "threshold_post" and "answered HTTP 503" in event.reason


def test_without_checkpoint_required_a_failing_hook_is_recorded_and_compression_goes_on(
    hooked, receiver, long_session
):
    hooked(checkpoint_required=False)
    receiver.then(500)
    result = compress(long_session, trigger=Trigger.THRESHOLD_POST)
    assert result.outcome == "fallback"
    event = result.passes[0].event
    event.refresh_from_db()
    assert "pre-compact hook" in event.error and "answered HTTP 500" in event.error
    (delivery,) = HookDelivery.objects.filter(kind="pre_compact")
    assert not delivery.ok and delivery.status_code == 500 and delivery.event == event
    assert_consistent(long_session)


def test_the_pre_compact_hook_gates_the_summariser_call(hermes_config, receiver, long_session):
    with FakeModelServer() as model:
        model.script.default = Reply("Short summary of the middle.")
        hermes_config(
            auxiliary={"compression": {"model": "fake", "base_url": model.base_url}},
            compression={
                "checkpoint_required": True,
                "hooks": {"pre_compact": receiver.url("/pre"), "timeout_seconds": 1},
            },
        )
        receiver.then(500)
        compress(long_session, trigger=Trigger.THRESHOLD_POST)
        assert model.requests == []  # stopped before the model was asked
        result = compress(long_session, trigger=Trigger.THRESHOLD_POST)
        assert result.outcome == "compressed" and len(model.requests) == 1


# --- Manual compressions ask to be confirmed --------------------------------------------------


def test_a_manual_compression_asks_to_be_confirmed_then_goes_on(hooked, receiver, gateway):
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [m for n in range(12) for m in turn(n)]})
    session = Session.objects.get(pk=sid)
    before = snapshot(session)
    receiver.then(500, 500)
    refused = gateway.post(f"/sessions/{sid}/compress")
    assert refused.status_code == 409
    detail = refused.json()["detail"]
    assert "answered HTTP 500" in detail and '"confirm": true' in detail
    assert snapshot(session) == before
    session.refresh_from_db()
    assert session.cooldown_until is None  # an operator's refusal holds nothing back
    confirmed = gateway.post(f"/sessions/{sid}/compress", {"confirm": True})
    assert confirmed.status_code == 200, confirmed.content
    assert confirmed.json()["outcome"] == "fallback"
    assert "went on without it" in confirmed.json()["passes"][0]["error"]
    assert len(receiver.of("/pre")) == 2
    assert_consistent(session)


def test_the_cli_asks_for_confirm_and_compresses_with_it(hooked, receiver, long_session):
    receiver.then(500, 500)
    before = snapshot(long_session)
    with pytest.raises(CommandError, match="--confirm"):
        call_command("compress", str(long_session.pk), stdout=StringIO())
    assert snapshot(long_session) == before
    out = StringIO()
    call_command("compress", str(long_session.pk), "--confirm", stdout=out)
    assert "pass 1: fallback" in out.getvalue()


def test_the_console_offers_to_go_on_without_the_checkpoint(
    hooked, receiver, admin_client, long_session
):
    session = long_session
    page = admin_client.get(reverse("console:timeline", args=[session.pk])).content.decode()
    assert 'name="confirm"' in page
    receiver.then(500, 500)
    admin_client.post(reverse("console:compress", args=[session.pk]), {"focus": ""})
    assert not Message.objects.filter(session=session, is_summary=True).exists()
    event = CompressionEvent.objects.get(session=session, outcome="failed")
    assert "confirm" in event.reason
    admin_client.post(reverse("console:compress", args=[session.pk]), {"confirm": "on"})
    assert Message.objects.filter(session=session, is_summary=True, active=True).exists()
    page = admin_client.get(reverse("console:timeline", args=[session.pk])).content.decode()
    assert "hook deliver" in page  # the events link to their deliveries
    listing = admin_client.get(
        reverse("admin:compression_hookdelivery_changelist") + f"?event__id__exact={event.pk}"
    )
    assert listing.status_code == 200 and "answered HTTP 500" in listing.content.decode()


# --- Post-compact -----------------------------------------------------------------------------


def test_the_post_compact_hook_gets_the_summary_and_its_provenance_signed(
    hooked, receiver, long_session, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        result = compress(long_session, trigger=Trigger.THRESHOLD_PRE)
    (post,) = receiver.of("/post")
    assert verify(post) and post.headers["X-Hermes-Event"] == "post_compact"
    payload = post.json
    summary = result.passes[0].summary
    event = result.passes[0].event
    assert payload["summary"]["content"] == summary.content
    assert (payload["summary"]["covers_from"], payload["summary"]["covers_to"]) == (
        summary.covers_from_position,
        summary.covers_to_position,
    )
    provenance = payload["provenance"]
    assert provenance["event_id"] == event.pk and provenance["fallback"] is True
    assert provenance["trigger"] == "threshold_pre" and provenance["model"] == "local"
    assert (provenance["tokens_before"], provenance["tokens_after"]) == (
        event.tokens_before,
        event.tokens_after,
    )
    (delivery,) = HookDelivery.objects.filter(kind="post_compact")
    assert delivery.ok and delivery.event == event and delivery.attempt == 1


def run_due_retries() -> int:
    """What the worker's scheduler does every few seconds: start the retries that are due."""
    from django_q.models import Schedule
    from django_q.scheduler import scheduler

    pending = list(Schedule.objects.filter(name__startswith="post_compact retry"))
    if pending:
        wait = max(s.next_run for s in pending) - timezone.now()
        time.sleep(max(0.0, wait.total_seconds()) + 0.01)
        scheduler()  # tasks run in-process under the tests' sync queue
    return len(pending)


def test_a_failed_post_compact_delivery_is_retried_with_backoff(
    hooked, receiver, long_session, django_capture_on_commit_callbacks
):
    from django_q.models import Schedule

    receiver.then("ok", 500)  # the pre-compact hook answers, the first post-compact does not
    with django_capture_on_commit_callbacks(execute=True):
        compress(long_session, trigger=Trigger.THRESHOLD_PRE)
    # The failed attempt did not wait in the worker: its retry is a schedule, due after the
    # backoff, named after the session (so an erasure takes it).
    (retry,) = Schedule.objects.filter(name__startswith="post_compact retry")
    assert retry.name.endswith(f" {long_session.pk}")
    assert 0 < (retry.next_run - timezone.now()).total_seconds() <= 0.05
    assert len(receiver.of("/post")) == 1
    assert run_due_retries() == 1
    first, second = receiver.of("/post")
    assert first.body == second.body and verify(second)  # the same delivery, again
    assert first.headers["X-Hermes-Delivery"] == second.headers["X-Hermes-Delivery"]
    deliveries = list(HookDelivery.objects.filter(kind="post_compact").order_by("attempt"))
    assert [(d.attempt, d.ok, d.status_code) for d in deliveries] == [
        (1, False, 500),
        (2, True, 200),
    ]
    assert second.at - first.at >= 0.05  # retry_backoff_seconds before the first retry
    assert not Schedule.objects.filter(name__startswith="post_compact retry").exists()


def test_a_post_compact_hook_that_stays_down_never_undoes_the_compression(
    hooked, receiver, long_session, django_capture_on_commit_callbacks
):
    hooked(post_compact_retries=2, retry_backoff_seconds=0.01)
    receiver.then("ok", 500, 500, 500)
    with django_capture_on_commit_callbacks(execute=True):
        result = compress(long_session, trigger=Trigger.THRESHOLD_PRE)
    assert result.outcome == "fallback"
    assert run_due_retries() == 1 and run_due_retries() == 1  # attempts 2 and 3
    assert run_due_retries() == 0  # then it gives up
    deliveries = HookDelivery.objects.filter(kind="post_compact").order_by("attempt")
    assert [(d.attempt, d.ok) for d in deliveries] == [(1, False), (2, False), (3, False)]
    assert Message.objects.filter(session=long_session, is_summary=True, active=True).exists()
    assert_consistent(long_session)


def test_erasing_a_session_drops_its_pending_post_compact_retries(
    hooked, receiver, long_session, django_capture_on_commit_callbacks
):
    from django_q.models import Schedule

    from compression.tasks import erase_task_records

    receiver.then("ok", 500)
    with django_capture_on_commit_callbacks(execute=True):
        compress(long_session, trigger=Trigger.THRESHOLD_PRE)
    assert Schedule.objects.filter(name__startswith="post_compact retry").count() == 1
    assert erase_task_records([str(long_session.pk)])["scheduled retries"] == 1
    assert not Schedule.objects.filter(name__startswith="post_compact retry").exists()


def test_without_a_secret_deliveries_go_unsigned(
    hooked, receiver, long_session, django_capture_on_commit_callbacks
):
    hooked(secret="")
    with django_capture_on_commit_callbacks(execute=True):
        compress(long_session, trigger=Trigger.THRESHOLD_PRE)
    assert all("X-Hermes-Signature" not in r.headers for r in receiver.requests)
    assert not HookDelivery.objects.filter(signed=True).exists()


def test_no_hooks_configured_sends_and_records_nothing(hermes_config, receiver, long_session):
    hermes_config(compression={"checkpoint_required": True})
    assert compress(long_session, trigger=Trigger.THRESHOLD_PRE).outcome == "fallback"
    assert receiver.requests == [] and not HookDelivery.objects.exists()


def test_erasing_a_session_takes_its_hook_deliveries_with_it(
    transactional_db, hooked, receiver, long_session
):
    """With real commits: erasure deletes in batches, one transaction each, so a delivery must
    not hold its event's row in place once the event's batch commits."""
    from sessions_app.services import erase as erasure

    compress(long_session, trigger=Trigger.THRESHOLD_PRE)  # post-compact runs on commit
    assert HookDelivery.objects.filter(session=long_session).count() == 2
    plan = erasure.plan_sessions([long_session.pk])
    assert plan.related["hook deliveries"] == 2
    entry = erasure.erase(plan, "test")
    assert entry.status == "done"
    assert not HookDelivery.objects.exists() and not CompressionEvent.objects.exists()


def test_an_event_names_a_failing_hook_by_its_host_only(hooked, receiver, long_session):
    """Hook URLs often carry their token in the path; events are read by gateways."""
    hooked(pre_compact=receiver.url("/pre/T0KEN-in-the-path"))
    receiver.then(500)
    (event,) = compress(long_session, trigger=Trigger.IDLE).events
    assert receiver.url("") in event.reason and "T0KEN" not in event.reason + event.error
    assert HookDelivery.objects.get().url.endswith("/pre/T0KEN-in-the-path")  # operators see it


def test_a_manual_run_that_compressed_before_the_checkpoint_stopped_needs_no_confirmation():
    from compression.engine.compress import CompressionResult, PassResult

    event = CompressionEvent()
    stopped = PassResult("failed", event, needs_confirmation=True)
    assert CompressionResult(session=None, passes=[stopped]).needs_confirmation
    done = PassResult("compressed", event)
    assert not CompressionResult(session=None, passes=[done, stopped]).needs_confirmation


def test_the_post_compact_task_runs_under_the_request_that_caused_the_compression(
    hooked, receiver, gateway, long_session, django_capture_on_commit_callbacks
):
    from django_q.models import Task

    with django_capture_on_commit_callbacks(execute=True):
        response = gateway.post(f"/sessions/{long_session.pk}/compress")
    assert response.status_code == 200, response.content
    (task,) = Task.objects.filter(name=f"post_compact {long_session.pk}")
    assert task.kwargs["request_id"] == response["X-Request-ID"]
    assert receiver.of("/post")
