"""The timeline by pages: opened at the head, the tail, before or after a position or around
one, with the same number of queries however long the session is."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from compression.engine.compress import compress
from compression.pages.window import PAGE
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Message
from tests.test_compression import turn


def _session(rows: int, title: str = "Pages"):
    channel = create_channel(f"pages-{title}")[0]
    session = services.open_session(channel, model="gpt-4o", system_prompt="sys", title=title)
    session = session.session
    services.append_messages(
        session,
        [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"row {i}"}
            for i in range(1, rows)
        ],
        run_hooks=False,
    )
    return session


def _positions(page: str) -> list[int]:
    return [int(p) for p in re.findall(r'<span class="pos">#(\d+)</span>', page)]


@pytest.fixture
def long_session(db):
    return _session(2 * PAGE + 50)  # positions 0-449


def test_the_timeline_opens_at_the_latest_page_with_a_link_to_older_ones(
    admin_client, long_session
):
    page = admin_client.get(reverse("console:timeline", args=[long_session.pk])).content.decode()
    assert _positions(page) == list(range(250, 450))
    assert "?before=250" in page and "?after=" not in page


def test_older_newer_and_first_pages_follow_each_other(admin_client, long_session):
    url = reverse("console:timeline", args=[long_session.pk])
    older = admin_client.get(url, {"before": 250}).content.decode()
    assert _positions(older) == list(range(50, 250))
    assert "?before=50" in older and "?after=249" in older
    first = admin_client.get(url, {"at": "head"}).content.decode()
    assert _positions(first) == list(range(0, 200))
    assert "?before=" not in first and "?after=199" in first
    newer = admin_client.get(url, {"after": 199}).content.decode()
    assert _positions(newer) == list(range(200, 400))


def test_around_a_message_opens_the_page_centred_on_it(admin_client, long_session):
    url = reverse("console:timeline", args=[long_session.pk])
    page = admin_client.get(url, {"around": 123}).content.decode()
    assert _positions(page) == list(range(23, 223))


def test_an_archived_original_opens_on_its_summarys_page_of_originals(admin_client, db):
    session = _session(2, "archived")
    services.append_messages(session, [m for n in range(12) for m in turn(n)], run_hooks=False)
    compress(session)
    archived = Message.objects.filter(session=session).exclude(summarized_by=None)
    original = archived.order_by("-position").first()  # not the first: its summary has that #
    response = admin_client.get(
        reverse("console:timeline", args=[session.pk]), {"around": original.position}
    )
    originals = reverse("console:originals", args=[session.pk, original.summarized_by_id])
    assert response.status_code == 302
    assert response["Location"] == f"{originals}?around={original.position}#m-{original.pk}"
    page = admin_client.get(response["Location"]).content.decode()
    assert f'id="m-{original.pk}"' in page
    # A search hit links to the message itself, which finds its page.
    hop = admin_client.get(reverse("console:message", args=[original.pk]))
    assert hop["Location"] == response["Location"]
    # The summary took its first original's position: that page shows the summary.
    first = archived.order_by("position").first()
    timeline = reverse("console:timeline", args=[session.pk])
    page = admin_client.get(timeline, {"around": first.position})
    assert page.status_code == 200
    assert f'id="m-{first.summarized_by_id}"' in page.content.decode()
    live = Message.objects.filter(session=session, active=True).last()
    hop = admin_client.get(reverse("console:message", args=[live.pk]))
    assert hop["Location"] == f"{timeline}?around={live.position}#m-{live.pk}"


@pytest.mark.parametrize("value", ["-1", "x", "1e3", "99999999999", "٣"])
def test_a_page_parameter_that_is_not_a_message_number_is_a_clear_400(
    admin_client, long_session, value
):
    response = admin_client.get(
        reverse("console:timeline", args=[long_session.pk]), {"before": value}
    )
    assert response.status_code == 400
    assert "must be a message number" in response.content.decode()
    assert "Traceback" not in response.content.decode()


def test_a_page_costs_the_same_number_of_queries_in_a_short_and_a_long_session(admin_client, db):
    counts = []
    for rows in (30, 3 * PAGE):
        session = _session(rows, f"q{rows}")
        url = reverse("console:timeline", args=[session.pk])
        admin_client.get(url)  # warm: the login session and content types
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get(url, {"around": 20}).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1]


def test_tool_output_and_long_prompts_are_folded_with_their_size_and_short_rows_are_not(
    admin_client, db
):
    channel = create_channel("readable")[0]
    prompt = "\n".join(f"rule {i}: be precise" for i in range(40))
    session = services.open_session(channel, model="gpt-4o", system_prompt=prompt).session
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    output = "\n".join(f"file_{i}.py" for i in range(30))
    services.append_messages(
        session,
        [
            {"role": "user", "content": "list the files"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": output},
        ],
        run_hooks=False,
    )
    page = admin_client.get(reverse("console:timeline", args=[session.pk])).content.decode()
    assert page.count('<details class="folded">') == 2  # the prompt and the tool output
    assert "show all: 40 lines" in page and "show all: 30 lines" in page
    assert 'class="text mono"' in page  # the tool output
    assert '<div class="text">list the files</div>' in page  # short: as it is


def test_after_compress_now_the_page_follows_and_the_events_endpoint_reports_it(admin_client, db):
    from compression.models import CompressionEvent

    session = _session(2, "follow")
    services.append_messages(session, [m for n in range(12) for m in turn(n)], run_hooks=False)
    before = CompressionEvent.objects.filter(session=session).count()
    response = admin_client.post(reverse("console:compress", args=[session.pk]), {"focus": ""})
    assert response.status_code == 302 and "?follow=" in response["Location"]
    follow = response["Location"].split("?follow=")[1]
    page = admin_client.get(response["Location"]).content.decode()
    assert 'id="follow"' in page and f"events.json?after={follow}" in page
    url = reverse("console:events", args=[session.pk])
    landed = admin_client.get(url, {"after": follow}).json()["events"]
    # The test worker runs tasks at once: the compression has already landed.
    assert len(landed) == 1 and landed[0]["outcome"] in ("compressed", "fallback")
    assert CompressionEvent.objects.filter(session=session).count() > before
    assert admin_client.get(url, {"after": landed[0]["id"]}).json() == {"events": []}
    assert admin_client.get(url, {"after": "x"}).status_code == 400


def test_an_empty_session_and_a_summary_without_originals_have_pages_that_say_so(admin_client, db):
    channel = create_channel("empty")[0]
    empty = services.open_session(channel, model="gpt-4o").session  # no system prompt: 0 rows
    page = admin_client.get(reverse("console:timeline", args=[empty.pk]))
    assert page.status_code == 200 and "No messages here." in page.content.decode()
    assert "?before=" not in page.content.decode()
    session = _session(2, "lonely")
    summary = Message.objects.create(
        session=session,
        channel_id=session.channel_id,
        position=1,
        role="user",
        content="s",
        is_summary=True,
    )
    page = admin_client.get(reverse("console:originals", args=[session.pk, summary.pk]))
    assert "This summary replaced no stored rows." in page.content.decode()


def test_the_dashboard_costs_the_same_queries_for_3_and_30_sessions(admin_client, db):
    counts = []
    for n in (3, 30):
        channel = create_channel(f"many-{n}")[0]
        for _ in range(n - len(counts) * 3):
            services.open_session(channel, model="gpt-4o", system_prompt="sys")
        admin_client.get(reverse("console:dashboard"))
        with CaptureQueriesContext(connection) as queries:
            admin_client.get(reverse("console:dashboard"))
        counts.append(len(queries))
    assert counts[0] == counts[1]


def test_a_page_of_200_live_rows_carries_one_csrf_token_for_all_its_pin_buttons(
    admin_client, long_session
):
    page = admin_client.get(reverse("console:timeline", args=[long_session.pk])).content.decode()
    buttons = re.findall(r'<button form="pin-form" formaction="([^"]+)"', page)
    assert len(buttons) == PAGE
    assert buttons[0] == reverse("console:pin", args=[long_session.pk, 250])
    # The shared pin form's and the Compress now form's; none per row.
    assert page.count('name="csrfmiddlewaretoken"') == 2
    assert page.count('<form id="pin-form" method="post" hidden>') == 1
    # A page of short rows stays small: under 500 bytes a row, where a form each cost 650.
    assert len(page.encode()) < 100_000


def test_the_console_doc_states_the_fold_limits_and_the_width_the_browser_test_uses():
    from pathlib import Path

    from compression.pages.window import _LONG, _SHORT

    root = Path(__file__).resolve().parent.parent
    doc = " ".join((root / "docs" / "console.md").read_text().split())
    assert f"longer than {_SHORT[0]} lines or {_SHORT[1]:,} characters are folded" in doc
    assert f"past {_LONG[0]} lines or {_LONG[1]:,} characters" in doc
    assert "position, role and kind" in doc
    browser = (root / "tests" / "browser" / "test_timeline_page.py").read_text()
    assert "never scrolls sideways at 390 px" in doc
    assert 'set_viewport_size({"width": 390' in browser


def test_summaries_that_absorb_earlier_ones_are_told_apart_by_number_and_range(admin_client, db):
    session = _session(2, "generations")
    services.append_messages(session, [m for n in range(12) for m in turn(n)], run_hooks=False)
    assert compress(session, max_passes=1).outcome in ("compressed", "fallback")
    services.append_messages(session, [m for n in range(12, 30) for m in turn(n)], run_hooks=False)
    assert compress(session, max_passes=1).outcome in ("compressed", "fallback")
    first, second = Message.objects.filter(session=session, is_summary=True).order_by("id")
    assert first.summarized_by_id == second.pk  # the second absorbed the first
    pages = {}
    for n, summary in ((1, first), (2, second)):
        summary.refresh_from_db()
        page = admin_client.get(
            reverse("console:originals", args=[session.pk, summary.pk])
        ).content.decode()
        title = re.search(r"<title>(.*?)</title>", page).group(1)
        pages[n] = (title, page)
        span = f"#{summary.covers_from_position}\u2013#{summary.covers_to_position}"
        assert f"summary {n} ({span})" in title
        rows = page.count('<li id="m-')
        assert page.count(f"covered by summary {n} ({span})") == rows
    assert pages[1][0] != pages[2][0]
    assert "absorbed by a later summary" in pages[1][1] and "the live summary" in pages[2][1]
    timeline = admin_client.get(reverse("console:timeline", args=[session.pk])).content.decode()
    assert "summary 2, covers" in timeline and "(live)" in timeline


def test_tool_arguments_another_system_escaped_show_as_the_text_itself(admin_client, db):
    session = _session(2, "escaped")
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"city": "\\u65e5\\u672c", "n": 3}'},
    }
    services.append_messages(
        session,
        [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        **call,
                        "id": "call_2",
                        "function": {"name": "raw", "arguments": "not json \\u"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_2", "content": "ok"},
        ],
        run_hooks=False,
    )
    page = admin_client.get(reverse("console:timeline", args=[session.pk])).content.decode()
    assert (
        '<code class="args">{&quot;city&quot;: &quot;日本&quot;, &quot;n&quot;: 3}</code>' in page
    )
    assert "\\u65e5" not in page
    assert '<code class="args">not json \\u</code>' in page  # not JSON: shown as it came


def test_a_compress_now_that_fell_back_says_why_on_the_page_and_in_its_event(
    admin_client, db, hermes_config
):
    from compression.testing.fake_model import Fail, FakeModelServer

    session = _session(2, "fellback")
    services.append_messages(session, [m for n in range(12) for m in turn(n)], run_hooks=False)
    with FakeModelServer() as model:
        model.script.default = Fail(429, "Rate limit reached", code="rate_limit_exceeded")
        hermes_config(
            auxiliary={"compression": {"model": "m", "base_url": model.base_url, "max_retries": 0}}
        )
        response = admin_client.post(reverse("console:compress", args=[session.pk]), {"focus": ""})
    follow = response["Location"].split("?follow=")[1]
    (landed,) = admin_client.get(
        reverse("console:events", args=[session.pk]), {"after": follow}
    ).json()["events"]
    assert landed["outcome"] == "fallback"
    assert "rate" in landed["fell_back_because"].lower()
    page = admin_client.get(
        reverse("console:timeline", args=[session.pk]), {"landed": landed["id"]}
    ).content.decode()
    banner = page.split('id="landed"')[1].split("</p>")[0]
    assert "A local summary was written instead of the model's, because:" in banner
    assert "rate" in banner.lower()
