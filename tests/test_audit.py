"""The operators' audit log: compress and reset from the console and the admin, threshold
override edits, key changes and erasure, each one row (who, when, what, on what), never
message content; browsable in the admin, never edited or deleted there."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from compression.models import ModelThresholdOverride
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import AuditEntry, Session

SECRET = "confidentialpangolin"


@pytest.fixture
def staff(db) -> Client:
    user = get_user_model().objects.create_superuser("op", "", "a-long-test-password")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def session(db) -> Session:
    channel = create_channel("tg")[0]
    session = services.open_session(channel, model="gpt-4o", system_prompt="sys").session
    services.append_messages(
        session,
        [
            {"role": "user", "content": f"my secret is {SECRET}"},
            {"role": "assistant", "content": "noted"},
        ],
        run_hooks=False,
    )
    return session


def entries(action: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action=action))


def no_content(entry: AuditEntry) -> bool:
    return SECRET not in json.dumps(entry.details) + entry.target


def test_compress_from_the_console_is_logged_without_the_focus_text(staff, session):
    staff.post(
        reverse("console:compress", args=[session.pk]), {"focus": f"about {SECRET}", "around": ""}
    )
    (entry,) = entries("compress")
    assert entry.actor == "admin:op"
    assert entry.details["via"] == "console"
    assert entry.details["session"] == str(session.pk)
    assert entry.details["focus_given"] is True
    assert entry.details["task"]
    assert no_content(entry)


def test_a_compress_that_queued_nothing_is_not_logged(staff, session):
    staff.post(reverse("console:compress", args=[session.pk]), {"around": "#9999"})
    assert entries("compress") == []


def test_reset_from_the_console_is_logged_with_the_rows_it_archived(staff, session):
    staff.post(reverse("console:reset", args=[session.pk]))
    (entry,) = entries("reset")
    assert entry.actor == "admin:op" and entry.details["via"] == "console"
    assert entry.details["rows_archived"] == 2
    assert no_content(entry)


def test_looking_at_the_reset_page_logs_nothing(staff, session):
    assert staff.get(reverse("console:reset", args=[session.pk])).status_code == 200
    assert not AuditEntry.objects.exists()


def test_admin_actions_on_sessions_are_logged(staff, session):
    url = reverse("admin:sessions_app_session_changelist")
    staff.post(url, {"action": "compress_now", "_selected_action": [session.pk]})
    staff.post(url, {"action": "reset_sessions", "_selected_action": [session.pk]})  # asks
    assert entries("reset") == []
    staff.post(
        url, {"action": "reset_sessions", "_selected_action": [session.pk], "confirm": "yes"}
    )
    staff.post(url, {"action": "clear_guards", "_selected_action": [session.pk]})
    assert [e.details["via"] for e in entries("compress")] == ["admin"]
    assert entries("reset")[0].details["rows_archived"] == 2
    assert entries("clear_guards")[0].details["sessions"] == [str(session.pk)]
    assert all(e.actor == "admin:op" and no_content(e) for e in AuditEntry.objects.all())


def test_threshold_override_edits_are_logged_with_what_changed(staff):
    add = reverse("admin:compression_modelthresholdoverride_add")
    staff.post(add, {"pattern": "claude", "ratio": "0.5", "enabled": "on"})
    override = ModelThresholdOverride.objects.get()
    (added,) = entries("override_add")
    assert added.details["values"]["ratio"] == 0.5 and added.target.endswith("claude")
    change = reverse("admin:compression_modelthresholdoverride_change", args=[override.pk])
    staff.post(change, {"pattern": "claude", "ratio": "0.6", "enabled": "on"})
    (changed,) = entries("override_change")
    assert changed.details["changed"] == {"ratio": [0.5, 0.6]}
    # Saving without a change logs nothing.
    staff.post(change, {"pattern": "claude", "ratio": "0.6", "enabled": "on"})
    assert len(entries("override_change")) == 1
    # The list's editable columns go through the same path.
    changelist = reverse("admin:compression_modelthresholdoverride_changelist")
    staff.post(
        changelist,
        {
            "form-TOTAL_FORMS": "1",
            "form-INITIAL_FORMS": "1",
            "form-0-id": str(override.pk),
            "form-0-ratio": "0.7",
            "form-0-threshold_tokens": "",
            "form-0-enabled": "on",
            "_save": "Save",
        },
    )
    assert entries("override_change")[0].details["changed"] == {"ratio": [0.6, 0.7]}
    staff.post(
        reverse("admin:compression_modelthresholdoverride_delete", args=[override.pk]),
        {"post": "yes"},
    )
    (deleted,) = entries("override_delete")
    assert deleted.details["values"]["pattern"] == "claude"
    assert not ModelThresholdOverride.objects.exists()


def test_key_changes_in_the_admin_are_logged(staff):
    staff.post(reverse("admin:sessions_app_channel_add"), {"name": "discord", **_no_keys()})
    (created,) = entries("key_create")
    assert created.actor == "admin:op" and created.details["channel"] == "discord"
    key = created.details["key"]
    from sessions_app.models import ApiKey

    api_key = ApiKey.objects.get(prefix=key)
    staff.post(
        reverse("admin:sessions_app_apikey_changelist"),
        {"action": "revoke", "_selected_action": [api_key.pk]},
    )
    (revoked,) = entries("key_revoke")
    assert revoked.details["key"] == key
    # Revoking again changes nothing and logs nothing.
    staff.post(
        reverse("admin:sessions_app_apikey_changelist"),
        {"action": "revoke", "_selected_action": [api_key.pk]},
    )
    assert len(entries("key_revoke")) == 1


def _no_keys() -> dict[str, str]:
    return {
        "keys-TOTAL_FORMS": "0",
        "keys-INITIAL_FORMS": "0",
        "keys-MIN_NUM_FORMS": "0",
        "keys-MAX_NUM_FORMS": "1000",
    }


def test_the_audit_log_is_browsable_but_never_added_edited_or_deleted(staff, session):
    staff.post(reverse("console:reset", args=[session.pk]))
    entry = AuditEntry.objects.get()
    page = staff.get(reverse("admin:sessions_app_auditentry_changelist"))
    assert page.status_code == 200 and "admin:op" in page.content.decode()
    assert staff.get(reverse("admin:sessions_app_auditentry_change", args=[entry.pk])).status_code
    assert staff.get(reverse("admin:sessions_app_auditentry_add")).status_code == 403
    delete = reverse("admin:sessions_app_auditentry_delete", args=[entry.pk])
    assert staff.post(delete, {"post": "yes"}).status_code == 403
    change = reverse("admin:sessions_app_auditentry_change", args=[entry.pk])
    staff.post(change, {"actor": "someone else", "action": "reset"})
    entry.refresh_from_db()
    assert entry.actor == "admin:op"
    filtered = staff.get(reverse("admin:sessions_app_auditentry_changelist"), {"action": "erase"})
    assert "admin:op" not in filtered.content.decode().split("<tbody>")[-1]
