"""Bearer-key authentication for the gateway API: one key, one channel, some scopes.

Every route names the one scope it needs (``auth=SCOPED[...]``); the API's default, used by a
route that names none, refuses every key, so a new route cannot go unscoped by accident
(tests/test_keys_scopes.py also checks each route)."""

from __future__ import annotations

from typing import cast

from django.http import HttpRequest
from ninja.errors import AuthenticationError, AuthorizationError
from ninja.security import HttpBearer

from sessions_app.keys import KeyExpired, authenticate_key
from sessions_app.models import ApiKey, Channel, Scope


class ChannelRequest(HttpRequest):
    """The request a route behind a ChannelKey is handed, as the type checker sees it: Django's
    own request with the two attributes authentication sets, ``auth`` (django-ninja, from what
    ``ChannelKey.authenticate`` returns) and ``api_key`` (``authenticate`` itself)."""

    auth: Channel
    api_key: ApiKey


class ExpiredKey(AuthenticationError):
    """401 that says the key expired (not that it is unknown): the operator knows to rotate."""

    def __init__(self, message: str) -> None:
        super().__init__(401, message)


class ChannelKey(HttpBearer):
    openapi_description = "A channel key from `manage.py create_channel NAME` (hm_…)."

    def __init__(self, scope: str | None) -> None:
        super().__init__()
        self.scope = scope

    def authenticate(self, request: HttpRequest, token: str) -> Channel | None:
        try:
            api_key = authenticate_key(token.strip())
        except KeyExpired as exc:
            raise ExpiredKey(
                f"This channel key expired: {exc}. Use the key that replaced it, or issue a new "
                "one (admin: rotate key, or `manage.py create_channel NAME --new-key`)."
            ) from None
        if api_key is None:
            return None
        if self.scope is None:
            raise AuthorizationError(
                message="This route has no scope assigned, so no key may call it; this is a "
                "bug in the service: report it."
            )
        if self.scope not in api_key.scope_set:
            raise AuthorizationError(
                message=f"This key lacks the '{self.scope}' scope this request needs (it has: "
                f"{', '.join(sorted(api_key.scope_set)) or 'none'}). Use a key with "
                f"'{self.scope}', e.g. `manage.py create_channel NAME --new-key --scopes "
                f"{self.scope}`."
            )
        cast(ChannelRequest, request).api_key = api_key
        return api_key.channel


SCOPED = {scope: ChannelKey(scope) for scope in Scope.values}
READ = SCOPED[Scope.READ]
WRITE = SCOPED[Scope.WRITE]
OPERATE = SCOPED[Scope.OPERATE]
UNSCOPED = ChannelKey(None)
