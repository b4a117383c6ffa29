"""Small request guards that must answer in the API's JSON shape."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse

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
