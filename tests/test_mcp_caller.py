"""Who an MCP call is from: a channel key's channel and scopes, refused as the API refuses."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from mcp.server.mcpserver.exceptions import ToolError

from agent.mcp.caller import Refused, caller_for
from sessions_app.keys import create_channel, issue_key, revoke_key
from sessions_app.models import ApiKey

pytestmark = pytest.mark.django_db


def test_a_key_opens_its_channel_with_its_scopes_and_a_missing_scope_is_named():
    channel, issued = create_channel("mcp-unit")
    reader = issue_key(channel, scopes="read")
    caller = caller_for(reader.plaintext)
    assert caller.channel == channel and caller.scopes == {"read"}
    caller.need("read")
    with pytest.raises(ToolError, match=r"lacks the 'write' scope .*\(it has: read\)"):
        caller.need("write")
    assert caller_for(issued.plaintext).scopes == {"read", "write", "operate"}


@pytest.mark.parametrize(
    "key, says",
    [(None, "Missing channel key"), ("", "Missing channel key"), ("hm_nope", "Unknown or revoked")],
)
def test_no_key_or_an_unknown_one_is_refused_with_what_to_do(key, says):
    with pytest.raises(Refused, match=says):
        caller_for(key)


def test_a_revoked_or_expired_key_is_refused():
    channel, issued = create_channel("mcp-unit")
    revoke_key(ApiKey.objects.get(channel=channel))
    with pytest.raises(Refused, match="revoked"):
        caller_for(issued.plaintext)
    expiring = issue_key(channel, expires_at=timezone.now() + timedelta(seconds=1))
    ApiKey.objects.filter(prefix=expiring.api_key.prefix).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    with pytest.raises(Refused, match="expired"):
        caller_for(expiring.plaintext)
