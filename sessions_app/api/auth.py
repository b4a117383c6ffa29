"""Bearer-key authentication for the gateway API: one key, one channel."""

from __future__ import annotations

from django.http import HttpRequest
from ninja.security import HttpBearer

from sessions_app.keys import authenticate
from sessions_app.models import Channel


class ChannelKey(HttpBearer):
    openapi_description = "A channel key from `manage.py create_channel NAME` (hm_…)."

    def authenticate(self, request: HttpRequest, token: str) -> Channel | None:
        return authenticate(token.strip())
