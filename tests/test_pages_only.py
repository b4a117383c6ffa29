"""Sessions, users, messages and CSRF for the pages and the admin only (core.pages_only)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory

from core.pages_only import (
    AuthenticationForPages,
    CsrfForPages,
    MessagesForPages,
    SessionForPages,
)


def _seen(path: str) -> set[str]:
    """What the four middlewares, chained as the settings chain them, left on a request."""
    found: set[str] = set()

    def view(request: HttpRequest) -> HttpResponse:
        found.update(a for a in ("session", "user", "_messages") if hasattr(request, a))
        if "CSRF_COOKIE" in request.META:
            found.add("csrf")
        return HttpResponse("ok")

    chain = MessagesForPages(view)
    chain = AuthenticationForPages(chain)
    chain = CsrfForPages(chain)
    chain = SessionForPages(chain)
    chain(RequestFactory().get(path, HTTP_COOKIE="csrftoken=" + "a" * 32))
    return found


@pytest.mark.parametrize(
    "path", ["/api/v1/search", "/api/v1/docs", "/mcp", "/healthz", "/readyz", "/metrics"]
)
def test_a_machine_facing_request_gets_no_session_user_messages_or_csrf_token(path, db):
    assert _seen(path) == set()


@pytest.mark.parametrize("path", ["/admin/", "/console/", "/console/search/"])
def test_a_page_request_still_gets_its_session_user_messages_and_csrf_token(path, db):
    assert _seen(path) == {"session", "user", "_messages", "csrf"}


@pytest.mark.parametrize(("path", "refused"), [("/api/v1/sessions", False), ("/console/", True)])
def test_the_csrf_check_django_runs_for_every_view_is_skipped_on_machine_paths_only(path, refused):
    """Django calls each middleware's process_view itself, whatever its __call__ did: a POST
    without a token to a view not marked exempt is refused on a page, let through on the API
    (whose key is its credential)."""

    def view(request: HttpRequest) -> HttpResponse:
        return HttpResponse("ok")

    request = RequestFactory().post(path, {})
    answer = CsrfForPages(view).process_view(request, view, (), {})
    assert (answer is not None and answer.status_code == 403) is refused


def test_a_page_form_posted_without_its_csrf_token_is_still_refused(db):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/admin/login/", {"username": "a", "password": "b"})
    assert response.status_code == 403


def test_an_operator_still_logs_in_to_the_admin_and_sees_it(db):
    User.objects.create_superuser("ops", password="a long enough password")
    client = Client(enforce_csrf_checks=True)
    form = client.get("/admin/login/")
    token = form.cookies["csrftoken"].value
    response = client.post(
        "/admin/login/",
        {"username": "ops", "password": "a long enough password", "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    assert client.get("/admin/").status_code == 200


def test_an_api_answer_to_a_logged_in_browser_sets_no_cookie_and_does_not_vary_by_one(gateway):
    User.objects.create_superuser("ops", password="a long enough password")
    gateway.client.login(username="ops", password="a long enough password")
    gateway.client.get("/admin/")  # a session and a CSRF cookie, sent with what follows
    response = gateway.get("/search", q="anything")
    assert response.status_code == 200
    assert not response.cookies
    assert "Cookie" not in response.get("Vary", "")


def test_the_admin_accepts_these_in_place_of_djangos_own(db):
    call_command("check", fail_level="ERROR")  # admin.E408-E410 would name them
