"""The operators' search page in Debian's chromium."""

from __future__ import annotations

import pytest

from sessions_app import services
from sessions_app.keys import create_channel

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = [
    "<script>alert('xss-script')</script> probe-word",
    '<img src=x onerror="window.__xss = 1; alert(1)"> probe-word',
    '<a href="javascript:alert(2)">probe-word link</a>',
    "a literal <mark>probe-word</mark> tag",
]


@pytest.fixture
def corpus():
    channel = create_channel("browser")[0]
    session = services.open_session(
        channel, model="gpt-4o", system_prompt="sys", title="Browser session"
    ).session
    services.append_messages(
        session,
        [
            {"role": "user", "content": "数据库迁移失败了，帮我用Django写代码"},  # noqa: RUF001
            {"role": "assistant", "content": "The kubernetes deployment is fine."},
        ]
        + [{"role": "user", "content": text} for text in HOSTILE],
    )
    return session


def test_staff_search_a_chinese_phrase_and_an_english_word(
    staff_login, page, live_server, corpus, screenshot
):
    staff_login()
    page.goto(f"{live_server.url}/console/search/")
    page.fill("input[name=q]", "迁移失败")
    page.keyboard.press("Enter")
    page.wait_for_selector(".hit")
    assert page.locator(".hit mark").first.inner_text() == "迁移失败"
    assert "answered by trigram" in page.locator(".summary").inner_text()
    page.fill("input[name=q]", "迁移")
    page.keyboard.press("Enter")
    page.wait_for_selector(".hit mark")
    assert "answered by bigram" in page.locator(".summary").inner_text()
    page.fill("input[name=q]", "kubernetes")
    page.keyboard.press("Enter")
    page.wait_for_selector(".hit mark")
    assert page.locator(".hit mark").first.inner_text().lower() == "kubernetes"
    screenshot("search-page")


def test_hostile_messages_render_inert(staff_login, page, live_server, corpus):
    staff_login()
    page.goto(f"{live_server.url}/console/search/?q=probe-word")
    page.wait_for_selector(".hit")
    assert page.locator(".hit").count() == len(HOSTILE)
    assert page.dialogs == []
    assert page.evaluate("window.__xss") is None
    # The only elements inside excerpts are our own <mark>s; the text shows the tags literally.
    tags = page.eval_on_selector_all(".excerpt *", "els => els.map(e => e.tagName)")
    assert set(tags) == {"MARK"}
    text = page.locator(".hits").inner_text()
    assert "<script>alert('xss-script')</script>" in text
    assert "a literal <mark>probe-word</mark> tag" in text


def test_the_search_page_needs_a_staff_login(page, live_server, db):
    page.goto(f"{live_server.url}/console/search/?q=x")
    assert "/admin/login/" in page.url


def test_the_search_page_fits_a_phone(staff_login, page, live_server, corpus):
    staff_login()
    page.set_viewport_size({"width": 375, "height": 740})
    page.goto(f"{live_server.url}/console/search/?q=kubernetes")
    page.wait_for_selector(".hit")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375
