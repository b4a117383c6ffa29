"""Scoped and expiring channel keys: what each key may call, what an expired one is told, how
keys are created with scopes and rotated from the admin."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from hermes_site.api import api
from sessions_app.api.auth import ChannelKey
from sessions_app.keys import create_channel, issue_key
from sessions_app.models import ALL_SCOPES, ApiKey, AuditEntry, Scope
from tests.conftest import Gateway
from tests.processes import on_postgres

KEY = re.compile(r"hm_[0-9a-f]{12}_[A-Za-z0-9_-]+")
ROOT = Path(__file__).resolve().parent.parent

# Every API operation and the scope it needs: what docs/api.md tells gateway authors.
ROUTE_SCOPES = {
    ("POST", "/sessions"): "write",
    ("GET", "/sessions"): "read",
    ("GET", "/sessions/{session_id}"): "read",
    ("POST", "/sessions/{session_id}/messages"): "write",
    ("GET", "/sessions/{session_id}/messages"): "read",
    ("GET", "/sessions/{session_id}/context"): "read",
    ("POST", "/sessions/{session_id}/rollback"): "write",
    ("POST", "/sessions/{session_id}/reset"): "operate",
    ("POST", "/sessions/{session_id}/compress"): "operate",
    ("POST", "/sessions/{session_id}/turn"): "write",
    ("POST", "/sessions/{session_id}/model_error"): "write",
    ("POST", "/sessions/{session_id}/codex/notifications"): "write",
    ("GET", "/search"): "read",
    ("POST", "/search"): "read",
    ("GET", "/sessions/{session_id}/events"): "read",
    ("GET", "/tools"): "read",
    ("POST", "/sessions/{session_id}/tools/session_search"): "read",
    ("POST", "/sessions/{session_id}/messages/{position}/pin"): "write",
    ("DELETE", "/sessions/{session_id}/messages/{position}/pin"): "write",
    ("GET", "/sessions/{session_id}/memory"): "read",
    ("PUT", "/sessions/{session_id}/memory/{label}"): "write",
    ("DELETE", "/sessions/{session_id}/memory/{label}"): "write",
    ("GET", "/memory"): "read",
    ("PUT", "/memory/{label}"): "write",
    ("DELETE", "/memory/{label}"): "write",
}


def api_operations():
    """(method, path, operation) for every operation of every router mounted on the API."""
    for prefix, router in api._routers:
        for path, view in router.path_operations.items():
            full = "/" + f"{prefix}/{path}".strip("/").replace("//", "/")
            for operation in view.operations:
                for method in operation.methods:
                    yield method, full.replace("//", "/"), operation


def key_for(channel, scopes: str, **kwargs) -> Gateway:
    return Gateway(channel, issue_key(channel, scopes=scopes, **kwargs).plaintext)


def test_every_api_route_names_exactly_one_scope_and_the_documented_one():
    seen = {}
    for method, path, operation in api_operations():
        callbacks = operation.auth_callbacks
        scopes = [c.scope for c in callbacks if isinstance(c, ChannelKey)]
        assert len(callbacks) == 1 and len(scopes) == 1, f"{method} {path}: auth {callbacks}"
        assert scopes[0] in Scope.values, f"{method} {path} has no scope: add auth=READ/WRITE/…"
        seen[(method, path)] = scopes[0]
    assert seen == ROUTE_SCOPES
    documented = (ROOT / "docs" / "api.md").read_text()
    for (method, path), scope in ROUTE_SCOPES.items():
        assert f"| `{method} {path}` | `{scope}` |" in documented, (method, path)


def test_a_route_that_names_no_scope_refuses_every_key(db):
    from ninja.errors import AuthorizationError

    _, issued = create_channel("tg")
    with pytest.raises(AuthorizationError, match="no scope"):
        ChannelKey(None).authenticate(None, issued.plaintext)


def test_keys_made_before_scopes_existed_keep_every_scope():
    migration = importlib.import_module("sessions_app.migrations.0013_keys_and_audit")
    (add_scopes,) = [
        op
        for op in migration.Migration.operations
        if getattr(op, "name", None) == "scopes" and op.model_name == "apikey"
    ]
    assert add_scopes.field.default == ALL_SCOPES == "read write operate"
    assert ApiKey._meta.get_field("scopes").default == ALL_SCOPES


def test_a_read_only_key_reads_and_searches_but_cannot_write_or_operate(gateway):
    sid = gateway.open()["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "hi"}]})
    reader = key_for(gateway.channel, "read")
    assert reader.get(f"/sessions/{sid}/context").status_code == 200
    assert reader.get(f"/sessions/{sid}/messages").status_code == 200
    assert reader.get("/sessions").status_code == 200
    assert reader.get("/search", q="hi").status_code == 200
    refused = reader.post(
        f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "x"}]}
    )
    assert refused.status_code == 403
    assert "'write' scope" in refused.json()["detail"]
    assert "has: read" in refused.json()["detail"]
    compress = reader.post(f"/sessions/{sid}/compress", {"wait": False})
    assert compress.status_code == 403 and "'operate' scope" in compress.json()["detail"]
    reset = reader.post(f"/sessions/{sid}/reset")
    assert reset.status_code == 403 and "'operate' scope" in reset.json()["detail"]
    counters = gateway.get(f"/sessions/{sid}").json()["counters"]
    assert counters["total_messages"] == 1 and counters["live_messages"] == 1


def test_a_write_only_key_appends_but_cannot_read_the_context(gateway):
    sid = gateway.open()["id"]
    writer = key_for(gateway.channel, "write")
    appended = writer.post(
        f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "hello"}]}
    )
    assert appended.status_code == 201
    assert writer.post(f"/sessions/{sid}/rollback", {"count": 1}).status_code == 200
    context = writer.get(f"/sessions/{sid}/context")
    assert context.status_code == 403 and "'read' scope" in context.json()["detail"]
    search = writer.get("/search", q="hello")
    assert search.status_code == 403


def test_an_operate_key_resets_but_cannot_append(gateway):
    sid = gateway.open()["id"]
    operator = key_for(gateway.channel, "operate")
    assert operator.post(f"/sessions/{sid}/reset").status_code == 200
    assert operator.post("/sessions", {"model": "gpt-4o"}).status_code == 403


def test_an_expired_key_is_told_it_expired_and_an_unknown_one_is_not(gateway):
    old = key_for(gateway.channel, ALL_SCOPES, expires_at=timezone.now() - timedelta(seconds=1))
    response = old.get("/sessions")
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]
    assert response["WWW-Authenticate"].startswith("Bearer")
    unknown = Gateway(gateway.channel, old.key[:-4] + "AAAA").get("/sessions")
    assert unknown.status_code == 401 and "expired" not in unknown.json()["detail"]


def test_a_key_works_until_it_expires(gateway):
    soon = key_for(gateway.channel, "read", expires_at=timezone.now() + timedelta(hours=1))
    assert soon.get("/sessions").status_code == 200
    ApiKey.objects.filter(prefix=soon.key[3:15]).update(expires_at=timezone.now())
    assert soon.get("/sessions").status_code == 401


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_channel_issues_a_scoped_expiring_key_and_logs_it(db):
    output = run("create_channel", "discord", "--scopes", "read,operate", "--expires-in", "2h")
    (key,) = KEY.findall(output)
    assert "Scopes: read operate" in output and "Expires:" in output
    stored = ApiKey.objects.get()
    assert stored.scopes == "read operate"
    assert abs(stored.expires_at - (timezone.now() + timedelta(hours=2))) < timedelta(minutes=1)
    entry = AuditEntry.objects.get(action="key_create")
    assert entry.actor.startswith("os:")
    assert entry.details["scopes"] == "read operate" and entry.details["key"] == stored.prefix
    assert key not in str(entry.details) and stored.key_hash not in str(entry.details)
    gateway = Gateway(stored.channel, key)
    assert gateway.get("/sessions").status_code == 200
    assert gateway.post("/sessions", {"model": "m"}).status_code == 403


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--scopes", "read,admin", "unknown scope(s) admin"),
        ("--scopes", ",", "at least one scope"),
        ("--expires-in", "soon", "e.g. 90d"),
        ("--expires-in", "0d", "positive number"),
    ],
)
def test_create_channel_refuses_bad_scopes_and_durations_and_creates_nothing(
    db, flag, value, message
):
    with pytest.raises(CommandError, match=re.escape(message)):
        run("create_channel", "irc", flag, value)
    assert not ApiKey.objects.exists()


@pytest.mark.slow
def test_create_channel_with_a_bad_scope_exits_non_zero_without_a_traceback(tmp_path):
    config = tmp_path / "hermes.yaml"
    config.write_text(f"server:\n  data_dir: {tmp_path}\n")
    env = {"HERMES_CONFIG": str(config), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "manage.py", "create_channel", "x", "--scopes", "everything"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "unknown scope(s) everything" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
def staff(db) -> Client:
    user = get_user_model().objects.create_superuser("op", "", "a-long-test-password")
    client = Client()
    client.force_login(user)
    return client


def test_rotating_a_key_in_the_admin_shows_the_new_key_once_and_the_old_one_expires_later(
    staff, hermes_config
):
    hermes_config(keys={"rotation_grace_hours": 2})
    channel, issued = create_channel("slack", scopes="read write")
    page = staff.post(
        reverse("admin:sessions_app_apikey_changelist"),
        {"action": "rotate", "_selected_action": [issued.api_key.pk]},
    )
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    (new_key,) = KEY.findall(page.content.decode())
    new = Gateway(channel, new_key)
    old = Gateway(channel, issued.plaintext)
    assert new.get("/sessions").status_code == 200  # same channel, same scopes
    assert new.post("/sessions/x/reset").status_code == 403
    assert old.get("/sessions").status_code == 200  # still within its grace period
    issued.api_key.refresh_from_db()
    grace_end = timezone.now() + timedelta(hours=2)
    assert abs(issued.api_key.expires_at - grace_end) < timedelta(minutes=1)
    ApiKey.objects.filter(pk=issued.api_key.pk).update(expires_at=timezone.now())
    assert "expired" in old.get("/sessions").json()["detail"]
    # Shown once: the key's pages never show it again.
    for url in (
        reverse("admin:sessions_app_apikey_changelist"),
        reverse("admin:sessions_app_channel_change", args=[channel.pk]),
    ):
        assert new_key not in staff.get(url).content.decode()
    entry = AuditEntry.objects.get(action="key_rotate")
    assert entry.actor == "admin:op"
    assert entry.details["key"] == issued.api_key.prefix
    assert entry.details["new_key"] == new_key[3:15]
    assert new_key not in str(entry.details)


def test_a_revoked_key_is_not_rotated(staff):
    _, issued = create_channel("irc")
    staff.post(
        reverse("admin:sessions_app_apikey_changelist"),
        {"action": "revoke", "_selected_action": [issued.api_key.pk]},
    )
    response = staff.post(
        reverse("admin:sessions_app_apikey_changelist"),
        {"action": "rotate", "_selected_action": [issued.api_key.pk]},
        follow=True,
    )
    assert "is revoked" in response.content.decode()
    assert ApiKey.objects.count() == 1
    assert list(AuditEntry.objects.values_list("action", flat=True)) == ["key_revoke"]


def test_a_zero_grace_rotation_stops_the_old_key_at_once(staff, hermes_config):
    hermes_config(keys={"rotation_grace_hours": 0})
    channel, issued = create_channel("tui")
    staff.post(
        reverse("admin:sessions_app_apikey_changelist"),
        {"action": "rotate", "_selected_action": [issued.api_key.pk]},
    )
    response = Gateway(channel, issued.plaintext).get("/sessions")
    assert response.status_code == 401 and "expired" in response.json()["detail"]
    # The channel list counts the successor only: an expired key is not active.
    page = staff.get(reverse("admin:sessions_app_channel_changelist")).content.decode()
    assert '<td class="field-active_keys">1</td>' in page


def test_a_key_changed_after_it_was_read_is_read_as_it_now_is(db):
    """A key's row is converted once per version of it (sessions_app.keys._converted): a
    change to its scopes, its expiry or its channel, or its revocation, is what the next
    request sees."""
    from sessions_app.keys import authenticate_key, revoke_key

    channel, issued = create_channel("changing", scopes="read write")
    first = authenticate_key(issued.plaintext)
    assert first is not None and first.scope_set == {"read", "write"}
    assert authenticate_key(issued.plaintext) is not first  # an instance of its own each time
    ApiKey.objects.filter(pk=issued.api_key.pk).update(scopes="read")
    channel.name = "renamed"
    channel.save()
    again = authenticate_key(issued.plaintext)
    assert again.scope_set == {"read"} and again.channel.name == "renamed"
    revoke_key(issued.api_key)
    assert authenticate_key(issued.plaintext) is None


@pytest.mark.skipif(
    on_postgres(), reason="SQLite only: PostgreSQL's reads go through Django's cursor"
)
def test_a_statement_the_key_read_cannot_run_raises_django_s_error(db):
    """core.plain.fetch_one reads on the driver's connection on SQLite; its errors are still
    Django's, which the API answers (a locked database: 503)."""
    from django.db import OperationalError

    from core import plain

    with pytest.raises(OperationalError, match="no such table"):
        plain.fetch_one("SELECT 1 FROM no_such_table WHERE 1 = %s", [1])


@pytest.mark.skipif(
    on_postgres(), reason="SQLite only: PostgreSQL's reads go through Django's cursor"
)
def test_on_sqlite_a_key_is_read_in_one_statement_on_the_driver_s_connection(db, monkeypatch):
    """core.plain.fetch_one: no Django cursor is made for the key's read (its wrappers cost 20
    µs a statement), and the driver runs exactly the one statement."""
    from django.db import connection

    from core.sqlite_backend import base
    from sessions_app.keys import authenticate_key

    _, issued = create_channel("driver-read")
    authenticate_key(issued.plaintext)  # its first use of the minute: the touch comes after
    made: list[object] = []
    ran: list[str] = []
    connection.connection.set_trace_callback(ran.append)
    with monkeypatch.context() as patched:  # undone before the test's rollback needs a cursor
        patched.setattr(base.DatabaseWrapper, "create_cursor", lambda *a: made.append(a))
        try:
            found = authenticate_key(issued.plaintext)
        finally:
            connection.connection.set_trace_callback(None)
    assert found is not None and found.channel.name == "driver-read"
    assert made == [] and len(ran) == 1, ran
    assert f"k.prefix = '{issued.api_key.prefix}'" in ran[0], ran
