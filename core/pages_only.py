"""Django's session, authentication, messages and CSRF middleware, for the pages and the admin
only.

The machine-facing paths -- the API, MCP, health checks and metrics -- authenticate by key or
token, keep no session, show no messages and take no form, so on them these four did nothing
but cost time on every request: about 70 µs together in process, about 0.1 ms per request over
HTTP (``GET /healthz`` under gunicorn, p50 and p95). Their answers are byte for byte what they
were: none of the four wrote anything to an answer that read no session, user or token.

Django's admin checks accept these subclasses in place of its own (admin.E408-E410)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware

from core.middleware import API_PREFIX

# Paths no person's browser session reaches: the API (its docs page included: it reads no
# session either), the MCP endpoint, the health checks and the metrics.
MACHINE_PREFIXES = (API_PREFIX, "/mcp", "/healthz", "/readyz", "/metrics")


def for_machines(request: HttpRequest) -> bool:
    return request.path_info.startswith(MACHINE_PREFIXES)


class _PagesOnly:
    """Runs the middleware it is mixed into for every path but the machine-facing ones."""

    sync_capable = True
    async_capable = False  # the service is WSGI; under ASGI Django would adapt it
    get_response: Any

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if for_machines(request):
            return self.get_response(request)
        return super().__call__(request)  # type: ignore[misc]  # the middleware's own


class SessionForPages(_PagesOnly, SessionMiddleware):
    pass


class AuthenticationForPages(_PagesOnly, AuthenticationMiddleware):
    pass


class MessagesForPages(_PagesOnly, MessageMiddleware):
    pass


class CsrfForPages(_PagesOnly, CsrfViewMiddleware):
    def process_view(self, request: HttpRequest, callback, callback_args, callback_kwargs):
        # Django calls every middleware's process_view itself, whatever __call__ did.
        if for_machines(request):
            return None
        return super().process_view(request, callback, callback_args, callback_kwargs)
