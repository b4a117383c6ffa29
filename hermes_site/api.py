"""The gateway API (`/api/v1/`): one NinjaAPI, routers from each app, one error shape.

Every error is ``{"detail": "<what went wrong and what to do>"}`` with the right status code;
validation errors add ``errors`` with each field's location.
"""

from __future__ import annotations

from typing import Any

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.renderers import JSONRenderer

from agent.api import router as agent_router
from compression.api import router as compression_router
from compression.api_events import router as events_router
from core.answers import readable_json
from core.bodies import state_in_schema
from core.errors import report
from search.api import router as search_router
from search.query import MAX_QUERY_CHARS
from sessions_app.api.auth import UNSCOPED, ExpiredKey
from sessions_app.api.memory import router as memory_router
from sessions_app.api.routes import router as sessions_router
from sessions_app.services import ServiceError


class ReadableJSON(JSONRenderer):
    """The API's JSON (core.answers): UTF-8, Chinese as Chinese."""

    def render(self, request: HttpRequest, data: Any, *, response_status: int) -> Any:
        return readable_json(data, self.encoder_class)


class GatewayAPI(NinjaAPI):
    """States in the schema the body rule every endpoint enforces (``core.bodies``)."""

    def get_openapi_schema(self, **kwargs: Any) -> Any:
        schema = super().get_openapi_schema(**kwargs)
        # session_search answers refused arguments to the model instead of rejecting them.
        return state_in_schema(schema, exempt=frozenset({"agent_api_session_search"}))


api = GatewayAPI(
    renderer=ReadableJSON(),
    title="Hermes Memory gateway API",
    version="1",
    description=(
        "Store, compress and search long agent conversations. Authenticate with "
        "`Authorization: Bearer <channel key>`; a key sees only its own channel's sessions."
    ),
    auth=UNSCOPED,  # every route names its scope; one that does not refuses every key
    urls_namespace="api-v1",
)
api.add_router("/", sessions_router)
api.add_router("/", memory_router)
api.add_router("/", compression_router)
api.add_router("/", events_router)
api.add_router("/", agent_router)
api.add_router("/", search_router)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    detail = (
        str(exc)
        if isinstance(exc, ExpiredKey)
        else "Missing, malformed, unknown or revoked channel key. Send "
        "'Authorization: Bearer hm_…' with a key from `manage.py create_channel NAME`."
    )
    response = api.create_response(request, {"detail": detail}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="hermes"'
    return response


@api.exception_handler(ServiceError)
def _service_error(request: HttpRequest, exc: ServiceError) -> HttpResponse:
    return api.create_response(
        request, {"detail": exc.message, **exc.fields}, status=exc.status_code
    )


ROLE_TAGS = {"system", "user", "assistant", "tool"}  # the message union's branch names
CONTENT_TAGS = {"text", "parts", "null"}  # the content union's


def _location(loc: tuple) -> str:
    """A field's path as a person reads it: ``messages.0.content``, without the framework's
    wrappers or the names of union branches."""
    parts: list[str] = []
    previous: object = None
    for part in loc:
        skip = part in ("body", "payload", "query", "path")
        skip = skip or (isinstance(previous, int) and part in ROLE_TAGS)
        skip = skip or (previous == "content" and part in CONTENT_TAGS)
        if not skip:
            parts.append(str(part))
        previous = part if not skip or part in ("body", "payload") else previous
    return ".".join(parts) or "request"


# pydantic's wording where a person needs to know what the field is for.
EMPTY_QUERY = "the query is empty: type at least one word or character"
PLAINER = {
    ("tool_call_id", "missing"): "a tool message needs 'tool_call_id' naming the call it answers",
    ("q", "string_too_short"): EMPTY_QUERY,
    ("q", "string_pattern_mismatch"): EMPTY_QUERY,
    ("q", "string_too_long"): f"the query is too long; the limit is {MAX_QUERY_CHARS:,} characters",
}


# ...and where the type alone says it (the message union picks its shape by ``role``).
PLAINER_BY_TYPE = {
    "union_tag_not_found": "a message needs 'role': system, user, assistant or tool",
    "union_tag_invalid": "'role' must be system, user, assistant or tool",
}


def _message(error: dict) -> str:
    loc = error.get("loc") or ("",)
    kind = error.get("type", "")
    plainer = PLAINER.get((str(loc[-1]), kind)) or PLAINER_BY_TYPE.get(kind)
    return plainer or error.get("msg", "")


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    errors = [{"loc": _location(tuple(e.get("loc", ()))), "msg": _message(e)} for e in exc.errors]
    summary = "; ".join(f"{e['loc']}: {e['msg']}" for e in errors[:5])
    return api.create_response(
        request, {"detail": f"Invalid request: {summary}", "errors": errors}, status=422
    )


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    message = str(exc)
    if exc.status_code == 400 and message.startswith("Cannot parse request body"):
        message = (
            "The request body is not valid JSON in UTF-8 (or is larger than "
            "server.max_request_bytes). Send a JSON object with Content-Type: application/json."
        )
    return api.create_response(request, {"detail": message}, status=exc.status_code)


@api.exception_handler(Exception)
def _unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
    """Replaces django-ninja's own, which answers a traceback as text when DEBUG is on."""
    message = report(exc, f"{request.method} {request.path[:200]}")
    return api.create_response(request, {"detail": message}, status=500)


@api.exception_handler(OperationalError)
def _database_busy(request: HttpRequest, exc: OperationalError) -> HttpResponse:
    """A writer that outwaited the busy timeout wrote nothing (its transaction rolled back)."""
    if "locked" not in str(exc) and "busy" not in str(exc):
        return _unexpected(request, exc)
    response = api.create_response(
        request,
        {"detail": "The database is busy; nothing was written. Retry the request shortly."},
        status=503,
    )
    response["Retry-After"] = "1"
    return response
