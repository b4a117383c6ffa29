"""Small request guards that must answer in the API's JSON shape."""

from __future__ import annotations

import json
import logging
import time
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

from core.answers import add_server_timing
from core.errors import report
from core.instruments import REQUEST_SECONDS
from core.logs import (
    REQUEST_ID_HEADER,
    accept_request_id,
    bind_request_id,
    unbind,
)

API_PREFIX = "/api/"
request_log = logging.getLogger("hermes.request")

# Error answers up to this size get the request id added to their JSON body.
ERROR_BODY_LIMIT = 64 * 1024


def _route(request: HttpRequest) -> str:
    """The URL pattern that answered (``api/v1/sessions/<session_id>/messages``), never the
    path itself: ids in paths would make a metric label per session."""
    match = getattr(request, "resolver_match", None)
    if match is not None and match.route:
        return "/" + match.route
    if request.path.startswith("/" + settings.STATIC_URL.lstrip("/")):
        return "static"
    return "unmatched"


# Django answers any method name; a label per made-up one would grow the metrics without bound.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _channel(request: HttpRequest) -> str | None:
    """The channel whose key authenticated an API request (django-ninja's ``request.auth``)."""
    return getattr(getattr(request, "auth", None), "name", None)


def _with_request_id(response: HttpResponse, request_id: str) -> None:
    """Add ``request_id`` to a JSON error answer's body, whoever wrote it (the API's handlers,
    the guards above, the metrics view), so a person can quote one string to the operator."""
    if response.status_code < 400 or getattr(response, "streaming", False):
        return
    if not response.get("Content-Type", "").startswith("application/json"):
        return
    if len(response.content) > ERROR_BODY_LIMIT:
        return
    try:
        body = json.loads(response.content)
    except ValueError:
        return
    if isinstance(body, dict) and "request_id" not in body:
        body["request_id"] = request_id
        text = json.dumps(body, ensure_ascii=False)  # as the API writes it: UTF-8, no escapes
        try:
            response.content = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: keep the escapes rather than fail
            response.content = json.dumps(body)
        if response.has_header("Content-Length"):  # set by CommonMiddleware, for the old body
            response["Content-Length"] = str(len(response.content))


class RequestObserver:
    """Outermost: gives every request an id (the caller's ``X-Request-ID`` if short and safe,
    else a fresh one), times it for ``hermes_http_request_duration_seconds`` and the answer's
    ``Server-Timing`` (``app``) and, with ``server.log_format: json``, writes one log line for
    it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = accept_request_id(request.headers.get(REQUEST_ID_HEADER))
        request.request_id = request_id  # type: ignore[attr-defined]  # ours, read with getattr
        token = bind_request_id(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            seconds = time.perf_counter() - started
            route = _route(request)
            method = request.method if request.method in METHODS else "other"
            REQUEST_SECONDS.labels(route, method, str(response.status_code)).observe(seconds)
            response[REQUEST_ID_HEADER] = request_id
            add_server_timing(response, "app", seconds)
            _with_request_id(response, request_id)
            if settings.HERMES.server.log_format == "json":
                match = getattr(request, "resolver_match", None)
                session_id = match.kwargs.get("session_id") if match is not None else None
                request_log.info(
                    "%s %s %s %.1f ms",
                    method,
                    route,
                    response.status_code,
                    seconds * 1000,
                    extra={
                        "event": "request",
                        "route": route,
                        "method": method,
                        "status": response.status_code,
                        "ms": round(seconds * 1000, 1),
                        "session_id": str(session_id) if session_id is not None else None,
                        "channel": _channel(request),
                    },
                )
            return response
        finally:
            unbind(token)


class ApiErrorsAsJson:
    """Every error under the API is JSON: what Django or django-ninja answers in HTML or plain
    text before any endpoint runs -- a path no endpoint has (404), a method an endpoint does not
    take (405, its ``Allow`` kept) -- becomes ``{"detail": ...}`` with the same status."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code < 400
            or not request.path.startswith(API_PREFIX)
            or getattr(response, "streaming", False)
            or response.get("Content-Type", "").startswith("application/json")
        ):
            return response
        where = f"{request.method} {request.path[:200]}"
        if response.status_code == 404:
            detail = f"No endpoint answers {where}; the API's endpoints are listed at /api/v1/docs."
        elif response.status_code == 405:
            allowed = response.get("Allow", "")
            detail = f"{where}: this endpoint does not take {request.method}" + (
                f"; it takes {allowed}." if allowed else "."
            )
        else:
            detail = f"{where}: {response.reason_phrase}."
        answer = HttpResponse(
            json.dumps({"detail": detail}, ensure_ascii=False),
            status=response.status_code,
            content_type="application/json",
        )
        if response.has_header("Allow"):
            answer["Allow"] = response["Allow"]
        return answer


def _json_error(status: int, detail: str) -> HttpResponse:
    return HttpResponse(
        json.dumps({"detail": detail}, ensure_ascii=False),
        status=status,
        content_type="application/json",
    )


def is_json(content_type: str) -> bool:
    """``application/json``, or a ``+json`` type, whatever its parameters."""
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )


class ApiBodyLimit:
    """Reads an API request's body up front, so that one over ``server.max_request_bytes``
    answers a JSON 413 instead of Django's HTML 400 from deep inside the framework, and one
    that is not JSON answers 415 instead of being parsed as JSON whatever it says it is."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(API_PREFIX) and request.method in ("POST", "PUT", "PATCH"):
            try:
                body = request.body  # Django enforces DATA_UPLOAD_MAX_MEMORY_SIZE here
            except RequestDataTooBig:
                limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
                return _json_error(
                    413,
                    f"The request body is over {limit:,} bytes (server.max_request_bytes); "
                    "send fewer messages per request.",
                )
            given = request.content_type or ""
            if body and not is_json(request.META.get("CONTENT_TYPE", "")):
                return _json_error(
                    415,
                    f"The body is {given or 'of no declared type'}; the API takes JSON: send "
                    "it with 'Content-Type: application/json'.",
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
        request_id = getattr(request, "request_id", None)
        page = (
            "<!doctype html><title>Server error</title><h1>Server error</h1>"
            f"<p>{escape(message)}</p>"
            + (f"<p>Request id: {escape(request_id)}</p>" if request_id else "")
        )
        return HttpResponse(page, status=500, content_type="text/html; charset=utf-8")
