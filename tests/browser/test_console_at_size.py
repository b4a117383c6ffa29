"""The console at a real size, in Debian's chromium: a 50,000-message session compressed early,
opened at a search hit on message #10 and paged from there; the dashboard full and empty.
Screenshots land in the test artifacts."""

from __future__ import annotations

import re

import pytest

from compression.engine.compress import compress
from compression.testing.fake_model import Digest, FakeModelServer
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Message, Session

pytestmark = pytest.mark.django_db(transaction=True)

ROWS = 50_000
EARLY = 2_000  # the first rows, compressed before the rest arrived
NEEDLE = "quokka-early-fact"


def _rows(start: int, stop: int) -> list[dict]:
    return [
        {
            "role": "user" if i % 2 else "assistant",
            "content": f"message {i}: the deploy of build {i % 97} needs a cache flush"
            + (f" {NEEDLE} 数据库迁移" if i == 10 else ""),
        }
        for i in range(start, stop)
    ]


@pytest.fixture
def fifty_thousand(hermes_config) -> Session:
    with FakeModelServer() as model:
        model.script.default = Digest()
        hermes_config(auxiliary={"compression": {"model": "digest", "base_url": model.base_url}})
        channel = create_channel("at-size")[0]
        session = services.open_session(
            channel, model="gpt-4o", system_prompt="sys", title="Fifty thousand messages"
        ).session
        services.append_messages(session, _rows(1, EARLY), run_hooks=False)
        assert compress(session, max_passes=1).outcome == "compressed"
        for start in range(EARLY, ROWS, 5_000):
            services.append_messages(
                session, _rows(start, min(start + 5_000, ROWS)), run_hooks=False
            )
    session.refresh_from_db()
    assert session.total_messages == ROWS + 1  # and the summary
    return session


def _shown(page) -> list[int]:
    text = page.locator("nav.pages .hint").first.inner_text()
    first, last = re.findall(r"#(\d+)", text)
    return [int(first), int(last)]


def test_a_hit_on_message_10_of_50000_opens_at_it_pages_to_the_head_and_the_dashboard_shows_it(
    staff_login, page, live_server, fifty_thousand, screenshot
):
    session = fifty_thousand
    original = Message.objects.get(session=session, content__contains=NEEDLE)
    assert (original.position, original.kind) == (10, "archived")
    staff_login()

    page.goto(f"{live_server.url}/console/search/?q={NEEDLE}")
    page.click(f"#hit-{original.pk} .meta a")
    target = page.locator(f"#m-{original.pk}")
    page.wait_for_selector(f"#m-{original.pk}.targeted")  # opened at it, and marked
    assert target.is_visible() and NEEDLE in target.inner_text()
    assert "Originals replaced by summary 1" in page.locator("h1").inner_text()
    screenshot("1-hit-on-message-10", full_page=False)

    # The originals, page by page: newer pages follow on from each other, never all at once.
    first_page = _shown(page)
    assert first_page[0] <= 10 <= first_page[1] and first_page[1] - first_page[0] < 500
    page.locator("nav.pages a[rel=next]").first.click()
    second_page = _shown(page)
    assert second_page[0] == first_page[1] + 1
    page.locator("nav.pages a[rel=prev]").first.click()
    assert _shown(page)[1] == second_page[0] - 1

    # The timeline opens at the latest messages, and one click reaches the head.
    page.goto(f"{live_server.url}/console/sessions/{session.pk}/")
    latest = _shown(page)
    assert latest[1] == ROWS - 1  # the newest row: positions run from 0 (the system prompt)
    html_size = page.evaluate("document.documentElement.outerHTML.length")
    assert html_size < 300_000, f"the page is {html_size:,} characters"
    page.locator("nav.pages a:has-text('first messages')").first.click()
    assert _shown(page)[0] == 0
    assert "sys" in page.locator("ol.timeline li").first.inner_text()
    screenshot("2-head-of-50000", full_page=False)

    # A live row deep in the session, opened by its link as a search hit or a bookmark would.
    live = Message.objects.get(session=session, position=30_001)
    assert live.kind == "live"
    from playwright.sync_api import expect

    page.goto(f"{live_server.url}/console/messages/{live.pk}/")
    page.wait_for_selector(f"#m-{live.pk}.targeted")
    target = page.locator(f"#m-{live.pk}")
    expect(target).to_be_in_viewport()  # scrolled to it
    assert "message 30001:" in target.inner_text()
    first, last = _shown(page)
    assert first <= 30_001 <= last
    screenshot("2b-live-row-30001", full_page=False)

    # The dashboard, full: both charts, the session among those nearest their threshold.
    page.goto(f"{live_server.url}/console/")
    assert page.locator("figure.chart rect.bar").count() >= 2  # by outcome and by trigger
    assert "Fifty thousand messages" in page.locator("table.events").first.inner_text()
    screenshot("3-dashboard-full")


def test_an_empty_dashboard_says_so_in_the_browser(staff_login, page, live_server, screenshot):
    staff_login()
    page.goto(f"{live_server.url}/console/")
    assert page.locator("text=No compressions in the last 24 hours.").is_visible()
    assert page.locator("figure.chart").count() == 0
    assert page.locator("text=No sessions yet.").is_visible()
    screenshot("4-dashboard-empty")
