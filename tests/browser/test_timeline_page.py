"""The session timeline in Debian's chromium: from a search hit to the archived original, on its
summary's page of originals."""

from __future__ import annotations

import pytest

from compression.engine.compress import compress
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Message
from tests.test_compression import turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def compressed():
    channel = create_channel("browser-tl")[0]
    session = services.open_session(
        channel, model="gpt-4o", system_prompt="sys", title="Timeline in a browser"
    ).session
    services.append_messages(
        session,
        [m for n in range(4) for m in turn(n)]
        + [{"role": "user", "content": '<img src=x onerror="window.__xss=1"> zanzibar-fact'}]
        + [m for n in range(4, 14) for m in turn(n)],
        run_hooks=False,
    )
    compress(session)
    return session


def test_a_search_hit_opens_the_timeline_at_the_archived_original(
    staff_login, page, live_server, compressed, screenshot
):
    staff_login()
    original = Message.objects.get(
        session=compressed, content__contains="zanzibar-fact", is_summary=False
    )
    page.goto(f"{live_server.url}/console/search/?q=zanzibar-fact")
    page.click(f"#hit-{original.pk} .meta a")
    assert original.kind == "archived"
    page.wait_for_selector(f"#m-{original.pk}.targeted")  # its script marks it when loaded
    assert page.evaluate("window.__xss") is None and page.dialogs == []
    screenshot("hit-in-timeline", full_page=False)


def test_the_compress_button_runs_and_the_event_appears(staff_login, page, live_server, compressed):
    services.append_messages(
        compressed, [m for n in range(40, 52) for m in turn(n)], run_hooks=False
    )
    staff_login()
    page.goto(f"{live_server.url}/console/sessions/{compressed.pk}/")
    page.fill("input[name=focus]", "item-45")
    page.click("text=Compress now")
    page.wait_for_selector("#landed")  # the page followed the compression until it landed
    assert "The compression finished" in page.locator("#landed").inner_text()
    # The first list holds compressions, failures and resets; decisions have their own.
    assert "manual (console)" in page.locator("table.events").first.inner_text()


def test_the_dashboard_and_chart_render_on_a_phone(
    staff_login, page, live_server, compressed, screenshot
):
    staff_login()
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto(f"{live_server.url}/console/sessions/{compressed.pk}/")
    assert page.locator("figure.chart svg polyline").count() == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    screenshot("timeline-phone", full_page=False)
    page.goto(f"{live_server.url}/console/")
    assert page.locator("rect.bar").count() >= 1
    assert page.evaluate("document.documentElement.scrollWidth") <= 375


def test_the_compress_form_works_from_the_keyboard_alone(
    staff_login, page, live_server, compressed, screenshot
):
    services.append_messages(
        compressed, [m for n in range(40, 52) for m in turn(n)], run_hooks=False
    )
    staff_login()
    page.goto(f"{live_server.url}/console/sessions/{compressed.pk}/")
    for _ in range(40):  # Tab through the header links to the first field of the form
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.name") == "focus":
            break
    else:
        pytest.fail("the focus field cannot be reached with Tab")
    page.keyboard.type("item-44")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.name") == "around"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Compress now"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("", "none"), "the focused button shows no focus ring"
    screenshot("keyboard-focus", full_page=False)
    page.keyboard.press("Enter")
    page.wait_for_selector("#landed")  # the page followed the compression until it landed
    assert "The compression finished" in page.locator("#landed").inner_text()
    assert page.csp_violations == []


def test_the_timeline_never_scrolls_sideways_at_390_px_and_folded_rows_open(
    staff_login, page, live_server, compressed
):
    call = {"id": "wide", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
    services.append_messages(
        compressed,
        [
            {"role": "user", "content": "x" * 5_000},  # one unbroken word
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "wide", "content": "\n".join(["y" * 400] * 20)},
        ],
        run_hooks=False,
    )
    staff_login()
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"{live_server.url}/console/sessions/{compressed.pk}/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    folded = page.locator("details.folded").last
    assert "20 lines" in folded.locator("summary").inner_text()
    folded.locator("summary").click()
    assert folded.locator("div.text.mono").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_a_row_s_pin_button_posts_through_the_page_s_one_form_and_unpins_again(
    staff_login, page, live_server, compressed, screenshot
):
    row = Message.objects.filter(session=compressed, active=True, is_summary=False).last()
    staff_login()
    page.goto(f"{live_server.url}/console/sessions/{compressed.pk}/")
    page.locator(f"#m-{row.pk} button.pin").click()
    page.wait_for_selector(".flash")
    assert f"#{row.position} pinned" in page.locator(".flash").inner_text()
    row.refresh_from_db()
    assert row.pinned
    assert page.locator(f"#m-{row.pk} .kind.pinned").is_visible()
    screenshot("pinned", full_page=False)
    page.locator(f"#m-{row.pk} button.pin", has_text="unpin").click()
    page.wait_for_selector(f"text=#{row.position} unpinned")
    row.refresh_from_db()
    assert not row.pinned
    assert page.csp_violations == []
