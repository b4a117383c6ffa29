"""Who is calling: the channel a key opens, with that key's scopes, checked on every call."""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.mcpserver.exceptions import ToolError

from sessions_app.keys import KeyExpired, authenticate_key
from sessions_app.models import ApiKey, Channel

# Where the HTTP view leaves the caller for the tools: a WSGI environ key no client can send
# (headers arrive as HTTP_*), carried into the ASGI scope by a2wsgi as ``wsgi_environ``.
ENVIRON_KEY = "hermes.mcp.caller"


@dataclass(frozen=True)
class Caller:
    channel: Channel
    scopes: frozenset[str]

    @classmethod
    def of(cls, api_key: ApiKey) -> Caller:
        return cls(channel=api_key.channel, scopes=frozenset(api_key.scope_set))

    def need(self, scope: str) -> None:
        if scope not in self.scopes:
            have = ", ".join(sorted(self.scopes)) or "none"
            raise ToolError(
                f"this key lacks the '{scope}' scope this tool needs (it has: {have}); use a "
                f"key with '{scope}' (manage.py create_channel NAME --scopes …)"
            )


class Refused(Exception):
    """A key that opens nothing: unknown, revoked or expired. The text says which and what to
    do, without echoing the key."""


def caller_for(plaintext: str | None) -> Caller:
    if not plaintext:
        raise Refused(
            "Missing channel key. Send 'Authorization: Bearer hm_…' with a key from "
            "`manage.py create_channel NAME`."
        )
    try:
        api_key = authenticate_key(plaintext.strip())
    except KeyExpired as exc:
        raise Refused(
            f"This channel key expired: {exc}. Use the key that replaced it, or issue a new one."
        ) from None
    if api_key is None:
        raise Refused("Unknown or revoked channel key.")
    return Caller.of(api_key)
