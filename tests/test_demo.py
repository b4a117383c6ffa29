"""The demo lives its two weeks through the live triggers: it opens compressed as it grew, with a
summary that fell back when the (loopback) model failed and the cooldown that started."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from compression.demo import schedule, turns
from compression.models import CompressionEvent
from compression.testing.fake_model import FakeModelServer
from sessions_app.models import Message, Session
from sessions_app.selectors import live_context
from sessions_app.services import recount

AUTOMATIC = {"threshold_pre", "threshold_post", "hygiene", "preflight", "micro", "prune"}


@pytest.fixture
def demo(transactional_db) -> Session:
    call_command("setup_demo", stdout=StringIO())
    return Session.objects.get(external_id="demo-main")


@pytest.mark.slow
def test_the_demo_compresses_as_it_grows_on_days_spread_over_its_two_weeks(demo):
    written = CompressionEvent.objects.filter(
        session=demo, outcome__in=("compressed", "fallback")
    ).order_by("created_at")
    # Five, as the README says: four summaries by the loopback model, the last a local fallback.
    assert [e.outcome for e in written] == ["compressed"] * 4 + ["fallback"]
    assert {e.trigger for e in written} <= AUTOMATIC  # none was asked for by hand
    days = {e.created_at.date() for e in written}
    assert len(days) >= 4
    assert written.first().created_at - demo.created_at > timedelta(days=2)
    assert all(e.tokens_after < e.tokens_before for e in written)
    demo.refresh_from_db()
    assert demo.compressions == written.count()
    assert recount(demo).live_tokens == demo.live_tokens


@pytest.mark.slow
def test_the_demo_s_summaries_keep_their_originals_and_the_context_stays_valid(demo):
    summary = Message.objects.filter(session=demo, is_summary=True, active=True).get()
    originals = Message.objects.filter(session=demo, compressed=True)
    assert originals.count() > 100
    # Every archived row points at a summary, which was written after the row was said.
    for row in originals.select_related("summarized_by").iterator():
        assert row.summarized_by is not None and row.summarized_by.is_summary
        assert row.summarized_by.created_at >= row.created_at
    context = live_context(demo)
    assert any("Summarised by the loopback" in (m.get("content") or "") for m in context)
    assert summary.covers_from_position is not None


@pytest.mark.slow
def test_the_demo_ends_with_a_fallback_from_a_failed_model_and_its_cooldown_still_running(demo):
    fallback = CompressionEvent.objects.get(session=demo, outcome="fallback")
    assert "503" in fallback.error and "overloaded" in fallback.error
    demo.refresh_from_db()
    assert demo.failure_streak == 1
    assert demo.cooldown_until is not None and demo.cooldown_until > timezone.now()
    assert timezone.now() - fallback.created_at < timedelta(minutes=10)
    # The guard then held an automatic trigger: the decision is on the trail.
    held = CompressionEvent.objects.filter(
        session=demo, outcome="locked", created_at__gt=fallback.created_at
    )
    assert held.exists() and "cooldown" in held.first().reason


@pytest.mark.slow
def test_the_demo_never_calls_the_summariser_the_config_names(
    transactional_db, hermes_config, settings
):
    with FakeModelServer() as configured:
        config = hermes_config(
            auxiliary={"compression": {"model": "real-model", "base_url": configured.base_url}}
        )
        call_command("setup_demo", stdout=StringIO())
        assert configured.script.requests == []
    assert settings.HERMES is config  # the loopback summariser was only for the replay
    assert CompressionEvent.objects.filter(outcome="compressed").exists()


@pytest.mark.parametrize("count", [1, 2, 12, 13, 97])
def test_the_schedule_is_in_order_and_ends_now(count):
    end = timezone.now()
    times = schedule(count, 14, end)
    assert len(times) == count
    assert times == sorted(times)
    assert times[-1] == end
    if count > 12:
        assert end - times[0] == timedelta(days=14)


def test_turns_never_split_a_tool_call_from_its_result():
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ]
    assert [len(t) for t in turns(messages)] == [4, 1]
    assert turns([{"role": "assistant", "content": "x"}]) == [
        [{"role": "assistant", "content": "x"}]
    ]


@pytest.mark.slow
def test_the_demo_s_timeline_opens_with_a_chart_of_its_two_weeks_and_its_compressions(
    demo, admin_client
):
    import re
    from datetime import datetime

    from django.urls import reverse

    page = admin_client.get(reverse("console:timeline", args=[demo.pk])).content.decode()
    assert page.count('<polyline class="series"') == 1
    markers = re.findall(r'<circle class="marker outcome-(\w+)"', page)
    assert len(markers) >= 4 and "fallback" in markers
    start, end = (
        datetime.fromisoformat(stamp)
        for stamp in re.search(r"from ([\d-]+ [\d:]+) to ([\d-]+ [\d:]+);", page).groups()
    )
    assert end - start >= timedelta(days=13)
