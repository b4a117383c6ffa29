"""The event trail keeps its memory: the same trigger decision on consecutive appends is one
row with a count and its last time, while compressions and every other change of decision get
rows of their own."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from compression.events import record_event
from compression.models import CompressionEvent
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Session

Outcome = CompressionEvent.Outcome


@pytest.fixture
def session(db):
    channel = create_channel("trail")[0]
    return services.open_session(
        channel, model="gpt-4o", system_prompt="sys", context_window=128_000
    ).session


def _append(session: Session, n: int) -> None:
    for i in range(n):
        services.append_messages(session, [{"role": "user", "content": f"question {i} " * 20}])


def _trail(session: Session) -> list[tuple[str, int]]:
    return [
        (e.outcome, e.times)
        for e in CompressionEvent.objects.filter(session=session).order_by("created_at", "id")
    ]


def test_appends_under_the_threshold_are_one_skipped_row_with_a_count(session):
    _append(session, 5)
    (event,) = CompressionEvent.objects.filter(session=session)
    assert (event.outcome, event.times) == (Outcome.SKIPPED, 5)
    assert event.last_at >= event.created_at
    session.refresh_from_db()
    # The row carries the latest numbers, as the last append saw them.
    assert event.tokens_before == session.live_tokens
    assert f"{session.live_tokens:,} tokens under the threshold" in event.reason


def test_a_different_decision_starts_a_new_row_and_the_old_one_is_not_resumed(session):
    _append(session, 3)
    Session.objects.filter(pk=session.pk).update(cooldown_until=timezone.now() + timedelta(hours=1))
    session.refresh_from_db()
    services.append_messages(session, [{"role": "user", "content": "x " * 100_000}])  # over
    services.append_messages(session, [{"role": "user", "content": "y"}])
    Session.objects.filter(pk=session.pk).update(cooldown_until=None)
    session.refresh_from_db()
    services.append_messages(session, [{"role": "user", "content": "z"}])  # queued: no row
    _append(session, 1)  # still over the threshold, and a compression is queued: skipped
    assert _trail(session) == [
        (Outcome.SKIPPED, 3),
        (Outcome.LOCKED, 2),
        (Outcome.SKIPPED, 1),
    ]


def test_compressions_and_failures_always_get_rows_of_their_own(session):
    for _ in range(2):
        record_event(session, "manual_api", Outcome.FALLBACK, "compressed", tokens_after=10)
        record_event(session, "manual_api", Outcome.FAILED, "the model timed out")
    assert _trail(session) == [
        (Outcome.FALLBACK, 1),
        (Outcome.FAILED, 1),
        (Outcome.FALLBACK, 1),
        (Outcome.FAILED, 1),
    ]


def test_a_decision_after_a_compression_is_a_new_row_not_the_one_before_it(session):
    _append(session, 2)
    record_event(session, "manual_api", Outcome.COMPRESSED, "compressed", tokens_after=10)
    _append(session, 2)
    assert _trail(session) == [
        (Outcome.SKIPPED, 2),
        (Outcome.COMPRESSED, 1),
        (Outcome.SKIPPED, 2),
    ]


def test_decisions_past_the_retention_go_and_compressions_stay(session, hermes_config):
    from compression.events import trim_decisions

    _append(session, 3)
    record_event(session, "manual_api", Outcome.FALLBACK, "compressed", tokens_after=10)
    record_event(session, "manual_api", Outcome.FAILED, "the model timed out")
    _append(session, 1)
    long_ago = timezone.now() - timedelta(days=91)
    CompressionEvent.objects.filter(session=session).update(created_at=long_ago, last_at=long_ago)
    _append(session, 1)  # repeats the latest (old) decision: that row's last repeat is now
    assert trim_decisions() == 1  # the first run of three: its last repeat is 91 days old
    assert _trail(session) == [(Outcome.FALLBACK, 1), (Outcome.FAILED, 1), (Outcome.SKIPPED, 2)]
    hermes_config(events={"retention_days": 0})
    CompressionEvent.objects.filter(session=session).update(last_at=long_ago)
    assert trim_decisions() == 0  # 0 keeps everything


def test_the_trim_is_scheduled_hourly(db):
    from django_q.models import Schedule

    schedule = Schedule.objects.get(func="compression.tasks.trim_events")
    assert (schedule.schedule_type, schedule.minutes, schedule.repeats) == ("I", 60, -1)


def test_the_timeline_lists_compressions_first_and_decisions_under_their_own_heading(
    admin_client, session
):
    from django.urls import reverse

    _append(session, 4)
    record_event(session, "manual_api", Outcome.FALLBACK, "compressed by hand", tokens_after=10)
    page = admin_client.get(reverse("console:timeline", args=[session.pk])).content.decode()
    compressions, decisions = page.split("<h2>Trigger decisions</h2>")
    assert "compressed by hand" in compressions and "under the threshold" not in compressions
    assert "under the threshold" in decisions and "compressed by hand" not in decisions
    assert "\u00d74" in decisions  # times sign, then the count


def test_the_dashboard_counts_every_repeat_of_a_decision(admin_client, session):
    from django.urls import reverse

    _append(session, 4)
    page = admin_client.get(reverse("console:dashboard")).content.decode()
    assert "<td>token threshold (before call)</td><td>skipped</td><td>4</td>" in page


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_1480_message_conversation_that_compresses_as_it_goes_leaves_a_few_dozen_rows():
    """As under the load run: two messages per append, the triggers on, the queued compressions
    run as the worker would (in-process here), every one of them local (no model)."""
    channel = create_channel("trail-load")[0]
    session = services.open_session(
        channel, model="gpt-4o", system_prompt="sys", context_window=8_192
    ).session
    for n in range(740):
        services.append_messages(
            session,
            [
                {"role": "user", "content": f"question {n} about the deploy " * 6},
                {"role": "assistant", "content": f"answer {n}: flush the cache " * 6},
            ],
        )
    session.refresh_from_db()
    assert session.total_messages >= 1_480
    trail = CompressionEvent.objects.filter(session=session)
    compressions = trail.filter(outcome__in=(Outcome.COMPRESSED, Outcome.FALLBACK)).count()
    assert compressions >= 5  # it did compress as it grew
    decisions = trail.exclude(outcome__in=(Outcome.COMPRESSED, Outcome.FALLBACK)).count()
    # Between two compressions the decisions are one row or a few (skipped, then held by a
    # guard), not one per append: 740 appends leave a few dozen rows, all counted.
    assert decisions <= 3 * (compressions + 1), _trail(session)
    assert trail.count() <= 60
    assert sum(e.times for e in trail) >= 740


def test_a_background_compression_that_raises_is_a_failed_event_on_the_timeline_dashboard_and_admin(
    admin_client, session, monkeypatch
):
    from django.urls import reverse

    from compression.tasks import automatic_task

    _append(session, 3)
    # Over its threshold by the model's own count, so the queued task goes ahead when it runs.
    Session.objects.filter(pk=session.pk).update(last_prompt_tokens=200_000)

    def broken(*args, **kwargs):
        raise RuntimeError("boom in /srv/hermes/compression/engine/compress.py")

    monkeypatch.setattr("compression.engine.compress.select_live", broken)
    result = automatic_task(str(session.pk), "threshold_pre")
    assert result["outcome"] == "failed"
    event = CompressionEvent.objects.get(session=session, outcome=Outcome.FAILED)
    error_id = event.error.split("error id ")[1][:8]
    pages = {
        "timeline": reverse("console:timeline", args=[session.pk]),
        "dashboard": reverse("console:dashboard"),
        "admin": reverse("admin:compression_compressionevent_changelist"),
    }
    for name, url in pages.items():
        page = admin_client.get(url).content.decode()
        assert "failed" in page, name
        assert "/srv/hermes" not in page and "Traceback" not in page, name
    timeline = admin_client.get(pages["timeline"]).content.decode()
    assert error_id in timeline  # the one line, with the id that finds the traceback in the log
    dashboard = admin_client.get(pages["dashboard"]).content.decode()
    assert "<strong>1</strong> failure" in dashboard


# --- GET /api/v1/sessions/{id}/events ----------------------------------------------------------


def test_the_events_api_pages_a_sessions_compressions_newest_first(gateway):
    sid = gateway.open(system_prompt="sys")["id"]
    session = Session.objects.get(pk=sid)
    written = [
        record_event(
            session,
            CompressionEvent.Trigger.MANUAL_API,
            outcome,
            f"event {n}",
            tokens_after=100 + n,
            messages_after=3,
            rows_archived=n,
        )
        for n, outcome in enumerate([Outcome.COMPRESSED, Outcome.FALLBACK, Outcome.FAILED] * 3)
    ]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "hi"}]})
    seen, before = [], None
    while True:
        params = {"limit": 4} | ({"before": before} if before else {})
        response = gateway.get(f"/sessions/{sid}/events", **params)
        assert response.status_code == 200, response.content
        body = response.json()
        seen += body["items"]
        before = body["next_before"]
        if before is None:
            break
    assert [e["id"] for e in seen] == [e.pk for e in reversed(written)]
    newest = seen[0]
    assert newest["reason"] == "event 8" and newest["outcome"] == "failed"
    assert newest["trigger"] == "manual_api" and newest["tokens_after"] == 108
    assert newest["rows_archived"] == 8 and newest["created_at"].endswith("Z")
    assert {"tokens_before", "messages_before", "error", "duration_ms", "path"} <= newest.keys()
    # The append's decision (skipped: under the threshold) is shown only when asked for.
    decisions = gateway.get(f"/sessions/{sid}/events", decisions="true").json()["items"]
    assert decisions[0]["outcome"] == "skipped" and decisions[0]["repeats"] >= 1
    assert len(decisions) == len(written) + 1


def test_another_channels_events_are_not_found_and_bad_paging_is_a_422(gateway, make_gateway):
    sid = gateway.open()["id"]
    other = make_gateway("slack")
    assert other.get(f"/sessions/{sid}/events").status_code == 404
    for params, fragment in [
        ({"limit": 0}, "limit"),
        ({"limit": 201}, "limit"),
        ({"before": 0}, "before"),
        ({"after": 3}, "after"),
    ]:
        response = gateway.get(f"/sessions/{sid}/events", **params)
        assert response.status_code == 422, (params, response.content)
        assert fragment in response.json()["detail"]
