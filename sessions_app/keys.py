"""Channel bearer keys: ``hm_<prefix>_<secret>``, stored as a lookup prefix plus a SHA-256.

The secret has 256 bits of entropy, so a fast hash is enough (no password stretching needed); the
prefix finds the row without scanning, and the comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from sessions_app.models import ApiKey, Channel

KEY_PREFIX = "hm_"
_PREFIX_BYTES = 6  # 12 hex characters


@dataclass(frozen=True)
class IssuedKey:
    """A freshly created key. ``plaintext`` exists only here: show it once, then drop it."""

    api_key: ApiKey
    plaintext: str


def hash_key(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


def issue_key(channel: Channel, label: str = "") -> IssuedKey:
    prefix = secrets.token_hex(_PREFIX_BYTES)
    plaintext = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.create(
        channel=channel, label=label, prefix=prefix, key_hash=hash_key(plaintext)
    )
    return IssuedKey(api_key=api_key, plaintext=plaintext)


@transaction.atomic
def create_channel(name: str, description: str = "") -> tuple[Channel, IssuedKey]:
    channel = Channel.objects.create(name=name, description=description)
    return channel, issue_key(channel, label="initial")


def revoke_key(api_key: ApiKey) -> None:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])


def _split(plaintext: str) -> str | None:
    if not plaintext.startswith(KEY_PREFIX):
        return None
    prefix, sep, secret = plaintext[len(KEY_PREFIX) :].partition("_")
    if not sep or not secret or len(prefix) != _PREFIX_BYTES * 2:
        return None
    return prefix


def authenticate(plaintext: str) -> Channel | None:
    """The channel a presented key belongs to, or None (unknown, malformed or revoked)."""
    prefix = _split(plaintext)
    if prefix is None:
        return None
    api_key = (
        ApiKey.objects.select_related("channel")
        .filter(prefix=prefix, revoked_at__isnull=True)
        .first()
    )
    if api_key is None or not hmac.compare_digest(api_key.key_hash, hash_key(plaintext)):
        return None
    now = timezone.now()
    # Touch at most once a minute: an auth check must not turn every read into a write.
    if api_key.last_used_at is None or (now - api_key.last_used_at).total_seconds() > 60:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    return api_key.channel
