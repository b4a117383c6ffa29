"""One operator's working session, end to end in Debian's chromium: log in, search, open a hit in
the timeline, expand a summary, force a compression, reset, tune an override — with hostile message
text on every page and a Content-Security-Policy watching. Screenshots land in the test
artifacts."""

from __future__ import annotations

import pytest

from compression.engine.compress import compress
from compression.policy.threshold import threshold_for
from compression.testing.fake_model import FakeModelServer, Reply
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Message, Session
from tests.test_compression import turn

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = [
    "<script>window.__xss = 'script'; alert('xss')</script> hostile-probe",
    "<img src=x onerror=\"window.__xss = 'img'; alert(1)\"> hostile-probe",
    '<a href="javascript:alert(2)">hostile-probe link</a>',
    "a literal <mark>hostile-probe</mark> tag",
]


@pytest.fixture
def model_server():
    with FakeModelServer() as server:
        server.script.default = Reply("Summary: the user asked about items; run_shell was used.")
        yield server


@pytest.fixture
def walk_session(hermes_config, model_server) -> Session:
    hermes_config(
        auxiliary={"compression": {"model": "fake-summary", "base_url": model_server.base_url}},
        compression={"context_timeout_seconds": 2, "context_total_ceiling_seconds": 5},
    )
    channel = create_channel("walk")[0]
    session = services.open_session(
        channel, model="gpt-4o", system_prompt="sys", title="Operator walk"
    ).session
    services.append_messages(
        session,
        [m for n in range(3) for m in turn(n)]
        + [
            {"role": "user", "content": "数据库迁移失败了，帮我用Django写代码"},  # noqa: RUF001
            {"role": "assistant", "content": "The kubernetes rollout is paused."},
        ]
        + [{"role": "user", "content": text} for text in HOSTILE]
        + [m for n in range(3, 14) for m in turn(n)],
        run_hooks=False,
    )
    assert compress(session).outcome == "compressed"
    services.append_messages(session, [m for n in range(20, 34) for m in turn(n)], run_hooks=False)
    return session


def _inert(page) -> None:
    assert page.evaluate("window.__xss") is None
    assert page.dialogs == []
    assert page.locator("mark:has-text('hostile-probe')").count() == 0
    assert page.csp_violations == []


def test_an_operator_walks_from_search_to_reset_and_tunes_a_threshold(
    staff_login, page, live_server, walk_session, model_server, screenshot
):
    session = walk_session
    timeline = f"{live_server.url}/console/sessions/{session.pk}/"
    staff_login()

    # Search a Chinese phrase, then an English word; both originals are archived by now.
    page.goto(f"{live_server.url}/console/search/")
    page.fill("input[name=q]", "迁移失败")
    page.keyboard.press("Enter")
    page.wait_for_selector(".hit mark")
    assert page.locator(".hit mark").first.inner_text() == "迁移失败"
    page.fill("input[name=q]", "kubernetes")
    page.keyboard.press("Enter")
    page.wait_for_selector(".hit mark")
    assert page.locator(".hit mark").first.inner_text().lower() == "kubernetes"
    screenshot("1-search")

    # Open the hit: the page of its summary's originals, scrolled to it.
    original = Message.objects.get(session=session, content__contains="kubernetes")
    assert original.kind == "archived"
    page.click(f"#hit-{original.pk} .meta a")
    target = page.locator(f"#m-{original.pk}")
    page.wait_for_selector(f"#m-{original.pk}.targeted")  # its script marks it when loaded
    assert target.is_visible() and "kubernetes" in target.inner_text()
    screenshot("2-hit-in-timeline", full_page=False)

    # Hostile originals render as text on the summary's page of originals, never as markup.
    page.goto(timeline)
    summary = page.locator("li.is-summary").first
    summary.locator("p.originals a").click()
    page.wait_for_selector("h1:has-text('Originals replaced')")
    listed = page.locator("ol.timeline")
    assert "<script>window.__xss" in listed.inner_text()
    assert listed.locator("script, img, a[href^=javascript]").count() == 0
    _inert(page)
    screenshot("3-summary-originals")
    page.click("text=back to the summary")
    page.wait_for_selector("li.is-summary.targeted")

    # Force a compression: a new summary and a new marker on the chart.
    summaries_before = page.locator("li.is-summary").count()
    markers_before = page.locator("figure.chart circle.marker").count()
    page.fill("input[name=focus]", "item-25")
    page.click("text=Compress now")
    page.wait_for_selector("#landed")  # the page followed the compression until it landed
    assert "The compression finished" in page.locator("#landed").inner_text()
    assert page.locator("figure.chart circle.marker").count() == markers_before + 1
    assert page.locator("li.is-summary").count() >= summaries_before
    session.refresh_from_db()
    assert session.compressions == 2
    newest = Message.objects.filter(session=session, is_summary=True, active=True).get()
    assert page.locator(f"#m-{newest.pk}").is_visible()
    focus_sent = model_server.script.requests[-1].body["messages"][-1]["content"]
    assert "item-25" in focus_sent
    screenshot("4-after-compression")

    # Reset, through its confirmation page.
    page.click("text=Reset…")
    page.wait_for_selector("text=Yes, reset")
    screenshot("5-confirm-reset", full_page=False)
    page.click("text=Yes, reset")
    page.wait_for_selector(".flash")
    assert "Session reset" in page.locator(".flash").inner_text()
    session.refresh_from_db()
    assert session.live_messages == 1  # the system prompt stays
    assert Message.objects.filter(session=session, active=False).exists()
    _inert(page)

    # Tune the threshold for this model in the admin and see it change on both pages.
    before = threshold_for(session).tokens
    page.goto(f"{live_server.url}/admin/compression/modelthresholdoverride/add/")
    page.fill("#id_pattern", "gpt-4o")
    page.fill("#id_ratio", "0.9")
    page.fill("#id_note", "walk test")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist")
    row = page.locator("#result_list tbody tr").filter(has_text="gpt-4o")
    computed_90 = row.locator("td.field-computed_threshold").inner_text()
    # Edit it in place (list_editable) to 0.8 and watch the computed value follow.
    row.locator("input[name$=ratio]").fill("0.8")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist")
    row = page.locator("#result_list tbody tr").filter(has_text="gpt-4o")
    computed_80 = row.locator("td.field-computed_threshold").inner_text()
    assert computed_80 != computed_90
    after = threshold_for(session).tokens
    assert after != before
    # Shown for the session's own model at its own window.
    assert f"gpt-4o ({session.context_window:,}): {after:,}" in computed_80
    screenshot("6-override")
    page.goto(timeline)
    assert f"{after:,}-token threshold" in page.locator(".budget").inner_text()
    _inert(page)
    screenshot("7-timeline-after-override")

    # Below 0.75 the override form says what it does to small windows, with this model's numbers.
    page.goto(f"{live_server.url}/admin/compression/modelthresholdoverride/")
    page.locator("#result_list tbody tr").filter(has_text="gpt-4o").locator("th a").click()
    page.fill("#id_ratio", "0.5")
    page.click("input[name=_continue]")
    page.wait_for_selector(".messagelist")
    effect = page.locator(".field-small_window_effect").inner_text()
    assert "Below 0.75: for a model with a window under 512K this override replaces" in effect
    window = session.context_window
    assert f"gpt-4o ({window:,}) compresses at {threshold_for(session).tokens:,} instead of" in (
        effect
    )
    _inert(page)
    screenshot("8-override-below-0.75")
