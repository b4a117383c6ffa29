"""Real-browser tests: Debian's chromium driven by Playwright (never a downloaded browser)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("HERMES_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
# Screenshots are kept as test artifacts (CI may upload the folder); var/ is not committed.
ARTIFACTS = Path(
    os.environ.get("HERMES_TEST_ARTIFACTS")
    or Path(__file__).resolve().parents[2] / "var" / "test-artifacts"
)


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no chromium at {CHROMIUM}: install Debian's chromium to run browser tests")
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    # Playwright's sync API keeps an asyncio loop running in this thread, which makes Django's
    # async-safety guard refuse the ORM calls tests make around the browser; allowed only while
    # the browser runs.
    saved = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        yield from _launch(playwright_api)
    finally:
        if saved is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = saved


def _launch(playwright_api):
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.dialogs = dialogs  # any alert() a hostile message managed to run lands here
    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    page.csp_violations = violations  # anything the page tried that the policy refused
    yield page
    context.close()


@pytest.fixture
def staff_login(live_server, django_user_model, page):
    def login() -> None:
        django_user_model.objects.create_superuser("op", "", "a-long-test-password")
        page.goto(f"{live_server.url}/admin/login/")
        page.fill("#id_username", "op")
        page.fill("#id_password", "a-long-test-password")
        page.click("input[type=submit]")
        page.wait_for_url(f"{live_server.url}/admin/")

    return login


@pytest.fixture
def screenshot(page, request):
    """``screenshot("name")`` saves the page as ARTIFACTS/screenshots/<test>-<name>.png."""
    folder = ARTIFACTS / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    test = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)

    def take(name: str, *, full_page: bool = True) -> Path:
        path = folder / f"{test}-{name}.png"
        page.screenshot(path=path, full_page=full_page)
        assert path.stat().st_size > 1000, f"empty screenshot {path}"
        return path

    return take


def pytest_collection_modifyitems(items):
    """Every test here drives the browser: the quick lane (``-m "not browser"``) leaves them out."""
    for item in items:
        if "tests/browser/" in item.nodeid:
            item.add_marker(pytest.mark.browser)
