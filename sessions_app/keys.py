"""Channel bearer keys: ``hm_<prefix>_<secret>``, stored as a lookup prefix plus a SHA-256.

The secret has 256 bits of entropy, so a fast hash is enough (no password stretching needed); the
prefix finds the row without scanning, and the comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache

from django.db import connection, transaction
from django.utils import timezone

from core import later, plain
from sessions_app import audit
from sessions_app.models import ALL_SCOPES, ApiKey, AuditEntry, Channel, Scope

KEY_PREFIX = "hm_"
_PREFIX_BYTES = 6  # 12 hex characters


@dataclass(frozen=True)
class IssuedKey:
    """A freshly created key. ``plaintext`` exists only here: show it once, then drop it."""

    api_key: ApiKey
    plaintext: str


def hash_key(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


class InvalidScopes(ValueError):
    pass


def parse_scopes(text: str | Iterable[str]) -> str:
    """``"read,write"`` (commas or spaces) as the stored form, in canonical order; raises
    InvalidScopes naming the unknown ones."""
    words = text.replace(",", " ").split() if isinstance(text, str) else list(text)
    unknown = sorted(set(words) - set(Scope.values))
    if unknown:
        raise InvalidScopes(
            f"unknown scope(s) {', '.join(unknown)}; the scopes are {', '.join(Scope.values)}"
        )
    if not words:
        raise InvalidScopes(f"name at least one scope: {', '.join(Scope.values)}")
    return " ".join(s for s in Scope.values if s in words)


def describe(api_key: ApiKey) -> str:
    return f"key hm_{api_key.prefix}_… of channel {api_key.channel.name}"


def issue_key(
    channel: Channel,
    label: str = "",
    scopes: str = ALL_SCOPES,
    expires_at: datetime | None = None,
    actor: str | None = None,
) -> IssuedKey:
    """A new key; with ``actor`` (an operator's action, not a test or the demo) it goes into
    the audit log."""
    prefix = secrets.token_hex(_PREFIX_BYTES)
    plaintext = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    with transaction.atomic():
        api_key = ApiKey.objects.create(
            channel=channel,
            label=label,
            prefix=prefix,
            key_hash=hash_key(plaintext),
            scopes=parse_scopes(scopes),
            expires_at=expires_at,
        )
        if actor is not None:
            audit.record(
                actor,
                AuditEntry.Action.KEY_CREATE,
                describe(api_key),
                {
                    "key": api_key.prefix,
                    "channel": channel.name,
                    "scopes": api_key.scopes,
                    "expires_at": expires_at.isoformat() if expires_at else None,
                },
            )
    return IssuedKey(api_key=api_key, plaintext=plaintext)


@transaction.atomic
def create_channel(
    name: str,
    description: str = "",
    scopes: str = ALL_SCOPES,
    expires_at: datetime | None = None,
    actor: str | None = None,
) -> tuple[Channel, IssuedKey]:
    channel = Channel.objects.create(name=name, description=description)
    return channel, issue_key(
        channel, label="initial", scopes=scopes, expires_at=expires_at, actor=actor
    )


def revoke_key(api_key: ApiKey, actor: str | None = None) -> bool:
    """Revoke at once (the row stays: it is the key's history); False if it already was."""
    with transaction.atomic():
        if (
            ApiKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(
                revoked_at=timezone.now()
            )
            == 0
        ):
            return False
        api_key.refresh_from_db(fields=["revoked_at"])
        if actor is not None:
            audit.record(
                actor,
                AuditEntry.Action.KEY_REVOKE,
                describe(api_key),
                {"key": api_key.prefix, "channel": api_key.channel.name},
            )
    return True


def rotation_grace() -> timedelta:
    from core.config import get_config

    return timedelta(hours=get_config().keys.rotation_grace_hours)


def rotate_key(api_key: ApiKey, actor: str, grace: timedelta | None = None) -> IssuedKey:
    """A new key with the old one's channel and scopes; the old one keeps working for the grace
    period (``keys.rotation_grace_hours``) so the gateway can be redeployed, then expires. An
    earlier expiry of the old key stands. Raises ValueError for a revoked key."""
    grace = rotation_grace() if grace is None else grace
    with transaction.atomic():
        old = ApiKey.objects.select_for_update().select_related("channel").get(pk=api_key.pk)
        if old.revoked_at is not None:
            raise ValueError(f"{describe(old)} is revoked; issue a new key instead of rotating it")
        issued = issue_key(
            old.channel,
            label=f"rotated from hm_{old.prefix}_…",
            scopes=old.scopes,
            expires_at=None,
        )
        ends = timezone.now() + grace
        if old.expires_at is None or old.expires_at > ends:
            old.expires_at = ends
            old.save(update_fields=["expires_at"])
        audit.record(
            actor,
            AuditEntry.Action.KEY_ROTATE,
            describe(old),
            {
                "key": old.prefix,
                "new_key": issued.api_key.prefix,
                "channel": old.channel.name,
                "scopes": old.scopes,
                "old_expires_at": old.expires_at.isoformat(),
            },
        )
    return issued


def _split(plaintext: str) -> str | None:
    if not plaintext.startswith(KEY_PREFIX):
        return None
    prefix, sep, secret = plaintext[len(KEY_PREFIX) :].partition("_")
    if not sep or not secret or len(prefix) != _PREFIX_BYTES * 2:
        return None
    return prefix


class KeyExpired(Exception):
    def __init__(self, api_key: ApiKey) -> None:
        if api_key.expires_at is None:  # only a key that expires can have expired
            raise TypeError("KeyExpired is for a key with an expiry")
        when = api_key.expires_at.astimezone(UTC)
        super().__init__(f"hm_{api_key.prefix}_… expired at {when:%Y-%m-%d %H:%M} UTC")
        self.api_key = api_key


# PostgreSQL plans a statement it is sent on every run: the key's, a join, took a round trip of
# 0.17 ms against 0.08 for the same through a kept plan (0.28 against 0.19 ms a request through
# Django, at 1,000,000 messages). The function (migration 0019) keeps it, once per connection.
LIVE_KEY = "hermes_live_key"


def _live_key(prefix: str) -> ApiKey | None:
    """The unrevoked key with this prefix, with its channel. Every API request asks this, so it
    is one plain statement (core.plain.fetch_one): the ORM's query took 0.45 ms to build and run
    on SQLite, a raw() query 0.09-0.13, this 0.04 (the prefix is unique); on PostgreSQL, a call
    of LIVE_KEY. The row is converted (its times parsed) once per version of it (_converted),
    and new instances made from the values each time. The channel comes without its
    ``created_at``, which Django reads if something asks for it."""
    row = plain.fetch_one(_live_key_sql(connection.vendor), [prefix])
    if row is None:
        return None
    values = _converted.get(row)
    if values is None:
        api_key = plain.from_row(ApiKey, row)
        key_values = [getattr(api_key, name) for name in _KEY_FIELDS]
        values = (key_values, [api_key.channel_id, *row[len(_KEY_FIELDS) :]])
        if len(_converted) >= 1_000:  # a key's row changes at most once a minute (its last use)
            _converted.clear()
        _converted[row] = values
    alias = connection.alias
    api_key = ApiKey.from_db(alias, _KEY_FIELDS, values[0])
    api_key.channel = Channel.from_db(alias, ["id", "name", "description"], values[1])
    return api_key


@cache
def _live_key_sql(vendor: str) -> str:
    if vendor == "postgresql":
        return f"SELECT * FROM {LIVE_KEY}(%s)"  # noqa: S608 - our name
    keys, channels = ApiKey._meta.db_table, Channel._meta.db_table  # our tables' names
    return (
        f"SELECT {plain.columns(ApiKey, 'k')}, c.name, c.description "  # noqa: S608
        f"FROM {keys} k JOIN {channels} c ON c.id = k.channel_id "
        "WHERE k.prefix = %s AND k.revoked_at IS NULL"
    )


_KEY_FIELDS = [field.attname for field in ApiKey._meta.concrete_fields]
# A key's row as read -> its instances' values, converted.
_converted: dict[tuple, tuple[list, list]] = {}


def authenticate_key(plaintext: str) -> ApiKey | None:
    """The key presented, with its channel, or None (unknown, malformed or revoked). Raises
    KeyExpired for a genuine key past its ``expires_at``: the gateway is told why."""
    prefix = _split(plaintext)
    if prefix is None:
        return None
    api_key = _live_key(prefix)
    if api_key is None or not hmac.compare_digest(api_key.key_hash, hash_key(plaintext)):
        return None
    now = timezone.now()
    if api_key.expired(now):
        raise KeyExpired(api_key)
    if api_key.last_used_at is None or (now - api_key.last_used_at).total_seconds() > TOUCH_EVERY:
        _touch_later(api_key, now)
    return api_key


# A key's last use is written at most once a minute: an auth check must not turn every read into
# a write. Nor is it written on the request's path (core.later): on SQLite the write waits for
# the lock behind every append in flight (a first request of the minute paid 6 ms uncontended).
TOUCH_EVERY = 60
# Per key (its prefix), the last use seen when its touch was handed over: the requests that come
# before the write lands see the same one and hand over no other.
_handed: dict[str, datetime | None] = {}
_handed_lock = threading.Lock()


def _touch_later(api_key: ApiKey, now: datetime) -> None:
    prefix, seen = api_key.prefix, api_key.last_used_at
    with _handed_lock:
        if prefix in _handed and _handed[prefix] == seen:
            return
        if len(_handed) > 10_000:
            _handed.clear()
        _handed[prefix] = seen

    def touch() -> None:
        try:
            ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        except Exception:
            with _handed_lock:  # not written: the next request hands it over again
                _handed.pop(prefix, None)
            raise

    later.run_later(touch, "recording an API key's last use")


def authenticate(plaintext: str) -> Channel | None:
    """The channel a presented key belongs to, or None (unknown, malformed, revoked or
    expired)."""
    try:
        api_key = authenticate_key(plaintext)
    except KeyExpired:
        return None
    return api_key.channel if api_key is not None else None
