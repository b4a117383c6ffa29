"""Small request guards that must answer in the API's JSON shape."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import (
    BadRequest,
    PermissionDenied,
    RequestDataTooBig,
    SuspiciousOperation,
)
from django.http import Http404, HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from django.utils.html import escape

from hermes_site.errors import report

API_PREFIX = "/api/"


class ApiBodyLimit:
    """Reads an API request's body up front so that one over ``server.max_request_bytes``
    answers a JSON 413 instead of Django's HTML 400 from deep inside the framework."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(API_PREFIX) and request.method in ("POST", "PUT", "PATCH"):
            try:
                request.body  # noqa: B018 - Django enforces DATA_UPLOAD_MAX_MEMORY_SIZE here
            except RequestDataTooBig:
                limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
                detail = (
                    f"The request body is over {limit:,} bytes (server.max_request_bytes); "
                    "send fewer messages per request."
                )
                return HttpResponse(
                    json.dumps({"detail": detail}), status=413, content_type="application/json"
                )
        return self.get_response(request)


# Everything the console serves comes from this origin: no inline script or style, no CDN. Django's
# admin keeps to the same rule since 4.x, so one policy covers every HTML page.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicy:
    """A second wall behind escaping: if hostile message text ever reached the page as markup,
    the browser would still refuse to run it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html"):
            response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response


class UnexpectedErrors:
    """The last wall: an exception no view handled is logged with its traceback under an error
    id and answered with one line naming that id -- JSON for the API, a short page otherwise --
    whatever ``server.debug`` says (debug pages would show paths and code)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    # Django answers these itself (404, 403, 400): they are expected, not errors.
    EXPECTED = (Http404, PermissionDenied, BadRequest, SuspiciousOperation, MultiPartParserError)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, self.EXPECTED):
            return None
        message = report(exception, f"{request.method} {request.path[:200]}")
        if request.path.startswith(API_PREFIX):
            return HttpResponse(
                json.dumps({"detail": message}), status=500, content_type="application/json"
            )
        page = (
            "<!doctype html><title>Server error</title><h1>Server error</h1>"
            f"<p>{escape(message)}</p>"
        )
        return HttpResponse(page, status=500, content_type="text/html; charset=utf-8")
