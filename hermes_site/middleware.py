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
