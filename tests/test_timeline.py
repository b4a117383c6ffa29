"""The session timeline page (server side; the browser tests drive it too)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from compression.engine.compress import compress
from compression.models import CompressionEvent
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Message
from tests.test_compression import turn


@pytest.fixture
def compressed(db):
    channel = create_channel("tl")[0]
    session = services.open_session(
        channel, model="gpt-4o", system_prompt="sys", title="Timeline"
    ).session
    services.append_messages(
        session,
        [{"role": "user", "content": "<script>alert('tl')</script> hostile"}]
        + [m for n in range(12) for m in turn(n)],
        run_hooks=False,
    )
    compress(session)
    services.append_messages(session, [{"role": "user", "content": "undo me"}], run_hooks=False)
    services.rollback_messages(session, 1)
    return session


def test_the_timeline_shows_head_summary_originals_and_rolled_back_rows(admin_client, compressed):
    page = admin_client.get(reverse("console:timeline", args=[compressed.pk])).content.decode()
    summary = Message.objects.get(session=compressed, is_summary=True)
    originals = Message.objects.filter(summarized_by=summary)
    assert f'id="m-{summary.pk}"' in page
    # The originals are not inlined: the summary links to their own page.
    assert not any(f'id="m-{m.pk}"' in page for m in originals)
    url = reverse("console:originals", args=[compressed.pk, summary.pk])
    assert f'href="{url}"' in page
    listed = admin_client.get(url).content.decode()
    assert all(f'id="m-{m.pk}"' in listed for m in originals)
    assert "rolled back" in page and "undo me" in page
    assert "&lt;script&gt;alert(&#x27;tl&#x27;)&lt;/script&gt;" in page
    assert "<script>alert" not in page
    assert "live tokens of a 96,000-token threshold" in page
    assert "manual (API)" in page  # the event list


def test_compress_and_reset_are_posts_with_a_confirmation(admin_client, compressed):
    url = reverse("console:compress", args=[compressed.pk])
    assert admin_client.get(url).status_code == 405
    admin_client.post(url, {"focus": "item-3"})
    assert CompressionEvent.objects.filter(session=compressed, trigger="manual_admin").exists()
    reset = reverse("console:reset", args=[compressed.pk])
    assert "Yes, reset" in admin_client.get(reset).content.decode()
    assert Message.objects.filter(session=compressed, active=True).count() > 1
    admin_client.post(reset)
    assert Message.objects.filter(session=compressed, active=True).count() == 1


def test_the_timeline_is_staff_only(client, compressed):
    response = client.get(reverse("console:timeline", args=[compressed.pk]))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    response = client.post(reverse("console:reset", args=[compressed.pk]))
    assert response.status_code == 302
    assert Message.objects.filter(session=compressed, active=True).count() > 1


def test_the_token_series_is_rebuilt_exactly_from_the_rows(compressed):
    from compression.pages.charts import live_tokens_series

    series = live_tokens_series(compressed)
    compressed.refresh_from_db()
    assert series[-1][1] == compressed.live_tokens
    assert max(v for _, v in series) > compressed.live_tokens  # the drop at the compression


def test_the_timeline_draws_the_token_chart_with_the_threshold_and_compressions(
    admin_client, compressed
):
    page = admin_client.get(reverse("console:timeline", args=[compressed.pk])).content.decode()
    assert "<polyline" in page and 'class="threshold"' in page
    assert page.count('class="marker') == 1
    assert "saved" in page  # the marker's title gives the savings


def test_the_dashboard_counts_compressions_guards_and_the_largest_sessions(
    admin_client, compressed
):
    from datetime import timedelta

    from django.utils import timezone

    from sessions_app.models import Session

    Session.objects.filter(pk=compressed.pk).update(
        cooldown_until=timezone.now() + timedelta(minutes=5)
    )
    page = admin_client.get(reverse("console:dashboard")).content.decode()
    assert 'class="bar outcome-fallback"' in page
    assert "Sessions in cooldown (1)" in page
    assert "Timeline" in page  # the largest sessions table
    assert "manual (API)" in page


def test_the_dashboard_reads_at_a_glance(admin_client, compressed):
    from datetime import timedelta

    from django.utils import timezone

    from sessions_app.models import Session

    # Held back at 138% of its threshold: the dashboard says 138%, not 100%.
    Session.objects.filter(pk=compressed.pk).update(
        live_tokens=int(96_000 * 1.38), thrash_lock_until=timezone.now() + timedelta(minutes=10)
    )
    page = admin_client.get(reverse("console:dashboard")).content.decode()
    assert "1</strong> compression in the last 24 hours" in page
    event = CompressionEvent.objects.get(session=compressed, outcome__in=("compressed", "fallback"))
    saved = event.tokens_before - event.tokens_after
    assert saved > 0 and f"<strong>{saved}</strong> tokens saved" in page
    assert f"<strong>{event.duration_ms} ms</strong> median compression time" in page
    assert "100%</strong> with the local fallback summary" in page  # the test summariser
    assert "138% of 96,000 <strong>over</strong>" in page
    assert "minutes left" in page  # the anti-thrash lock's time left
    assert "compressions per hour (UTC), by outcome" in page and "swatch outcome-failed" in page
    # The same hours by kind of trigger: the test's compression was asked for through the API.
    assert "compressions per hour (UTC), by trigger" in page
    assert 'class="bar trigger-manual"' in page and "swatch trigger-threshold" in page
    assert 'class="bar trigger-threshold"' not in page
    assert "<td>tl</td><td>1</td>" in page  # the channel, its one session


def test_an_empty_dashboard_says_so(admin_client, db):
    page = admin_client.get(reverse("console:dashboard")).content.decode()
    assert "No compressions in the last 24 hours." in page
    assert "No sessions yet." in page and "No channels yet." in page


def test_the_admin_header_links_to_the_console_and_the_console_back(admin_client, db):
    admin = admin_client.get(reverse("admin:index")).content.decode()
    assert f'href="{reverse("console:dashboard")}">Console</a>' in admin
    console = admin_client.get(reverse("console:dashboard")).content.decode()
    assert f'href="{reverse("admin:index")}">Admin</a>' in console


def test_a_reset_from_the_console_is_an_event_and_a_mark_on_the_chart(admin_client, compressed):
    admin_client.post(reverse("console:reset", args=[compressed.pk]))
    event = CompressionEvent.objects.get(session=compressed, outcome="reset")
    assert event.trigger == "manual_admin" and event.rows_archived > 0
    assert "reset from the console by" in event.reason
    page = admin_client.get(reverse("console:timeline", args=[compressed.pk])).content.decode()
    assert 'class="marker outcome-reset"' in page
    # A second reset is a row of its own, not a repeat.
    admin_client.post(reverse("console:reset", args=[compressed.pk]))
    assert CompressionEvent.objects.filter(session=compressed, outcome="reset").count() == 2


def test_a_chart_over_10000_messages_is_drawn_from_a_bounded_number_of_events(
    admin_client, compressed, monkeypatch
):
    from compression.pages import charts

    # The fixture's session stands in for one over the limit, with a trail longer than is read.
    monkeypatch.setattr(charts, "EXACT_SERIES_ROWS", 5)
    monkeypatch.setattr(charts, "EVENT_POINTS", 10)
    for n in range(30):
        CompressionEvent.objects.create(
            session=compressed,
            trigger="threshold_pre",
            outcome="skipped",
            reason=f"under the threshold {n}",
            tokens_before=1_000 + n,
        )
    compressed.refresh_from_db()
    assert compressed.total_messages > charts.EXACT_SERIES_ROWS

    def rows_read(*args, **kwargs):
        raise AssertionError("the exact series reads every row")

    monkeypatch.setattr(charts, "live_tokens_series", rows_read)
    chart = charts.token_chart(compressed, 96_000)
    assert chart.exact is False
    # At most two points an event (before and after a compression) and the two ends.
    assert 2 < len(chart.points.split()) <= 2 * charts.EVENT_POINTS + 2
    page = admin_client.get(reverse("console:timeline", args=[compressed.pk])).content.decode()
    assert "Drawn from the event trail" in page


def test_a_timeline_of_a_session_at_138_percent_of_its_threshold_says_138(admin_client, compressed):
    from compression.policy.threshold import threshold_for
    from sessions_app.models import Session

    threshold = threshold_for(compressed).tokens
    Session.objects.filter(pk=compressed.pk).update(live_tokens=int(threshold * 1.38))
    budget = admin_client.get(reverse("console:timeline", args=[compressed.pk])).content.decode()
    assert f"of a {threshold:,}-token threshold (138%)" in budget
    assert "(100%)" not in budget


def test_the_token_charts_time_ticks_are_spread_and_told_as_finely_as_the_span_needs():
    from datetime import UTC, datetime, timedelta

    from compression.pages.charts import time_ticks

    start = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

    def x(when):
        return (when - start).total_seconds()

    hour = time_ticks(start, start + timedelta(minutes=40), x)
    assert len(hour) == 5 and [t.x for t in hour] == [0, 600, 1200, 1800, 2400]
    assert all(t.label.count(":") == 2 for t in hour)  # seconds within an hour
    day = time_ticks(start, start + timedelta(hours=20), x)
    assert all(len(t.label) == 5 and ":" in t.label for t in day)  # HH:MM
    week = time_ticks(start, start + timedelta(days=3), x)
    assert all(len(t.label) == 11 for t in week)  # MM-DD HH:MM
    year = time_ticks(start, start + timedelta(days=90), x)
    assert all(len(t.label) == 10 and t.label.count("-") == 2 for t in year)
    assert len(time_ticks(start, start, x)) == 1
