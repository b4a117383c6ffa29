"""The console at a laptop's width (1366 px) and a phone's (390 px), in chromium: the admin's
session list shows every column without a sideways scroll, and the dashboard's charts stay
readable. Screenshots land in the test artifacts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from compression.models import CompressionEvent
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Session

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sessions(db):
    channel = create_channel("telegram-production-gateway")[0]
    made = []
    for n in range(6):
        session = services.open_session(
            channel,
            model="claude-sonnet-4-5-20250929",
            system_prompt="sys",
            external_id=f"telegram:chat:-100{n:09d}",
        ).session
        services.append_messages(
            session, [{"role": "user", "content": f"question {n} " * 400}], run_hooks=False
        )
        made.append(session)
    later = timezone.now() + timedelta(minutes=30)
    Session.objects.filter(pk=made[0].pk).update(
        cooldown_until=later, failure_streak=3, live_tokens=1_234_567
    )
    for n, session in enumerate(made):
        for hour in range(0, 24, 3):
            CompressionEvent.objects.create(
                session=session,
                trigger="threshold",
                outcome="compressed" if (n + hour) % 4 else "fallback",
                tokens_before=120_000,
                tokens_after=30_000,
            )
    return made


def test_the_admin_session_list_fits_a_laptop_screen_with_every_column(
    staff_login, page, live_server, sessions, screenshot
):
    staff_login()
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(f"{live_server.url}/admin/sessions_app/session/")
    headers = page.locator("#result_list thead th").all_inner_texts()
    for wanted in ("GUARD", "LAST ACTIVITY", "TIMELINE"):
        assert any(wanted in h.upper() for h in headers), headers
    right = page.evaluate(
        "Math.max(...[...document.querySelectorAll('#result_list th')]"
        ".map(th => th.getBoundingClientRect().right))"
    )
    # The list's own box (it scrolls sideways when the table is wider than it).
    box = page.evaluate(
        "document.querySelector('#changelist-form .results').getBoundingClientRect().right"
    )
    widths = page.evaluate(
        "[...document.querySelectorAll('#result_list th')]"
        ".map(th => th.innerText.trim() + ':' + Math.round(th.getBoundingClientRect().width))"
    )
    screenshot("admin-sessions-1366", full_page=False)
    assert right <= box <= 1366, f"the last column ends at {right} px, the list at {box}: {widths}"
    assert page.evaluate("document.documentElement.scrollWidth") <= 1366
    row = page.locator("#result_list tbody tr").first.inner_text()
    assert "telegram:chat:" in row  # a session without a title is shown by its external id
    assert "1,234,567" in page.locator("#result_list").inner_text()
    screenshot("admin-sessions-1366", full_page=False)


@pytest.mark.parametrize("width", [1366, 390])
def test_the_timeline_chart_and_the_dashboard_charts_read_at_a_laptops_and_a_phones_width(
    staff_login, page, live_server, sessions, screenshot, width
):
    from compression.engine.compress import compress
    from tests.test_compression import turn

    session = sessions[1]
    services.append_messages(session, [m for n in range(14) for m in turn(n)], run_hooks=False)
    compress(session, max_passes=1)
    # A conversation of a few hours: each row a few minutes after the one before.
    from sessions_app.models import Message

    rows = list(Message.objects.filter(session=session).order_by("position", "id"))
    start = timezone.now() - timedelta(minutes=5 * len(rows))
    for n, row in enumerate(rows):
        row.created_at = start + timedelta(minutes=5 * n)
        if row.archived_at:
            row.archived_at = start + timedelta(minutes=5 * len(rows) - 30)
    Message.objects.bulk_update(rows, ["created_at", "archived_at"])
    staff_login()
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/console/sessions/{session.pk}/")
    chart = page.locator("#token-chart")
    ticks = chart.locator("text.tick").all_text_contents()
    assert len(ticks) >= 2 and all(":" in t for t in ticks), ticks
    assert chart.locator("text.threshold-label").text_content().startswith("threshold ")
    legend = chart.locator("figcaption").inner_text()
    assert "live tokens" in legend and "threshold (" in legend
    assert "compression" in legend  # the markers' legend
    assert page.locator("label[for=budget-bar]").is_visible()
    wide = page.evaluate(  # what sticks out, to name in the failure
        "[...document.querySelectorAll('h1, p, figure, form, ol')]"
        f".filter(e => e.getBoundingClientRect().right > {width}).map(e => e.tagName)"
    )
    screenshot(f"timeline-chart-{width}", full_page=False)
    assert page.evaluate("document.documentElement.scrollWidth") <= width, wide
    # The chart's text stays legible: at least 7 px tall on the screen, whatever the width.
    smallest = page.evaluate(
        "Math.min(...[...document.querySelectorAll('#token-chart text')]"
        ".map(t => t.getBoundingClientRect().height))"
    )
    assert smallest >= 7, smallest
    screenshot(f"timeline-chart-{width}", full_page=False)
    page.goto(f"{live_server.url}/console/")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert page.locator(".chart svg").count() == 2
    screenshot(f"dashboard-{width}")
