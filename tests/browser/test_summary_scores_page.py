"""Summary scores in Debian's chromium: the timeline's event row says what a summary kept, its
provenance panel lists what it missed and offers to write it again with another model, and the
dashboard draws the last day's distribution -- all under the console's CSP."""

from __future__ import annotations

import pytest

from compression.engine.compress import compress
from compression.testing.fake_model import FakeModelServer, Reply
from sessions_app.keys import create_channel
from tests.test_summary_scores import planted_session

pytestmark = pytest.mark.django_db(transaction=True)
WEAK = "## Goal\nThe user had a deploy problem. " * 30


@pytest.fixture
def model_server():
    with FakeModelServer() as server:
        server.script.default = Reply(WEAK)
        yield server


@pytest.fixture
def weak(hermes_config, model_server):
    hermes_config(
        auxiliary={"compression": {"model": "fake-summary", "base_url": model_server.base_url}},
        compression={"context_timeout_seconds": 2, "context_total_ceiling_seconds": 5},
    )
    session = planted_session(create_channel("browser-scores")[0])
    event = compress(session).events[0]
    assert event.below_floor is True
    return session, event


def test_the_console_shows_the_score_what_was_missed_and_offers_another_model(
    staff_login, page, live_server, weak, screenshot
):
    session, event = weak
    staff_login()
    page.goto(f"{live_server.url}/console/sessions/{session.pk}/")
    row = page.locator("table.events").first.locator("tr.outcome-compressed").first
    score = row.locator(".score.low")
    assert score.inner_text().startswith(f"kept {event.salient_kept} of {event.salient_items}")
    assert "ECONNREFUSED" in (score.get_attribute("title") or "")
    row.scroll_into_view_if_needed()
    screenshot("timeline-event-row", full_page=False)

    row.locator("text=details").click()
    page.wait_for_selector("#provenance")
    panel = page.locator("#provenance")
    text = panel.inner_text()
    assert f"kept {event.salient_kept} of {event.salient_items} salient items" in text
    assert "under the floor" in text
    assert panel.locator(".missed code", has_text="ECONNREFUSED").count() == 1
    assert panel.locator("button", has_text="Summarise again").is_visible()
    assert panel.locator("input[name=model]").get_attribute("placeholder") == "fake-summary"
    panel.scroll_into_view_if_needed()
    screenshot("provenance-panel", full_page=False)

    page.goto(f"{live_server.url}/console/")
    table = page.locator("table.scores")
    assert table.is_visible()
    assert "1 under the floor" in page.locator("#scores + p").inner_text()
    assert table.locator("rect.model").count() == 10
    screenshot("dashboard-scores")
    assert page.csp_violations == []
