"""The admin: every model browsable by staff, history read-only, keys shown once."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from compression.models import CompressionEvent, ModelThresholdOverride
from sessions_app import services
from sessions_app.keys import authenticate, create_channel
from sessions_app.models import ApiKey, Channel, Message


@pytest.fixture
def staff(db) -> Client:
    user = get_user_model().objects.create_superuser("op", "", "a-long-test-password")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def session(db):
    channel = create_channel("tg")[0]
    session = services.open_session(channel, model="gpt-4", system_prompt="sys").session
    services.append_messages(
        session,
        [{"role": "user", "content": f"message <b>{n}</b>"} for n in range(6)],
    )
    services.rollback_messages(session, 1)
    CompressionEvent.objects.create(
        session=session, trigger="manual_api", outcome="skipped", reason="demo"
    )
    ModelThresholdOverride.objects.create(pattern="glm", ratio=0.4)
    return session


def test_every_model_has_a_changelist_and_a_change_page(staff, session):
    objects = [
        session.channel,
        ApiKey.objects.first(),
        session,
        Message.objects.filter(session=session).first(),
        CompressionEvent.objects.first(),
        ModelThresholdOverride.objects.first(),
    ]
    for obj in objects:
        meta = obj._meta
        changelist = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        assert staff.get(changelist).status_code == 200, changelist
        change = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
        assert staff.get(change).status_code == 200, change


def test_messages_are_filterable_by_kind_and_escaped(staff, session):
    url = reverse("admin:sessions_app_message_changelist")
    page = staff.get(
        url, {"kind": "rolled_back", "session__id__exact": session.pk}
    ).content.decode()
    assert "message &lt;b&gt;5&lt;/b&gt;" in page
    assert "message &lt;b&gt;4&lt;/b&gt;" not in page
    assert "<b>5</b>" not in page


def test_history_cannot_be_edited_or_deleted_in_the_admin(staff, session):
    message = Message.objects.filter(session=session).first()
    change = reverse("admin:sessions_app_message_change", args=[message.pk])
    staff.post(change, {"content": "rewritten"})
    message.refresh_from_db()
    assert message.content == "sys"
    delete = reverse("admin:sessions_app_message_delete", args=[message.pk])
    assert staff.post(delete, {"post": "yes"}).status_code == 403
    delete_session = reverse("admin:sessions_app_session_delete", args=[session.pk])
    assert staff.post(delete_session, {"post": "yes"}).status_code == 403
    assert Message.objects.filter(pk=message.pk).exists()


def test_adding_a_channel_in_the_admin_shows_its_key_once(staff):
    response = staff.post(
        reverse("admin:sessions_app_channel_add"),
        {"name": "discord", "description": "", "keys-TOTAL_FORMS": "0", "keys-INITIAL_FORMS": "0"},
        follow=True,
    )
    page = response.content.decode()
    keys = re.findall(r"hm_[0-9a-f]{12}_[A-Za-z0-9_-]+", page)
    assert len(keys) == 1
    assert authenticate(keys[0]) == Channel.objects.get(name="discord")
    # The plaintext is never shown again.
    channel = Channel.objects.get(name="discord")
    again = staff.get(reverse("admin:sessions_app_channel_change", args=[channel.pk]))
    assert keys[0] not in again.content.decode()


def test_revoking_a_key_in_the_admin_locks_it_out(staff):
    _, issued = create_channel("irc")
    staff.post(
        reverse("admin:sessions_app_apikey_changelist"),
        {"action": "revoke", "_selected_action": [issued.api_key.pk]},
    )
    assert authenticate(issued.plaintext) is None


def test_threshold_overrides_are_validated(staff):
    response = staff.post(
        reverse("admin:compression_modelthresholdoverride_add"),
        {"pattern": "claude", "ratio": "1.5", "enabled": "on"},
    )
    assert response.status_code == 200
    assert "less than or equal to 1.0" in response.content.decode()
    assert not ModelThresholdOverride.objects.exists()


def test_the_console_requires_a_staff_login(db):
    response = Client().get(reverse("admin:sessions_app_session_changelist"))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_a_threshold_cap_below_1000_tokens_is_refused(staff):
    response = staff.post(
        reverse("admin:compression_modelthresholdoverride_add"),
        {"pattern": "glm", "ratio": "0.5", "threshold_tokens": "0", "enabled": "on"},
    )
    assert response.status_code == 200
    assert "greater than or equal to 1000" in response.content.decode()
    assert not ModelThresholdOverride.objects.exists()


def test_compress_now_runs_through_the_task_queue(
    staff, session, django_capture_on_commit_callbacks
):
    from tests.test_compression import turn

    services.append_messages(session, [m for n in range(12) for m in turn(n)], run_hooks=False)
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(
            reverse("admin:sessions_app_session_changelist"),
            {"action": "compress_now", "_selected_action": [session.pk]},
            follow=True,
        )
    assert "Compression queued for 1 session" in response.content.decode()
    assert CompressionEvent.objects.filter(
        session=session, trigger="manual_admin", outcome="fallback"
    ).exists()


def test_reset_asks_for_confirmation_first(staff, session):
    url = reverse("admin:sessions_app_session_changelist")
    live_before = session.messages.filter(active=True).count()
    page = staff.post(url, {"action": "reset_sessions", "_selected_action": [session.pk]})
    assert page.status_code == 200 and "Yes, reset" in page.content.decode()
    assert session.messages.filter(active=True).count() == live_before
    done = staff.post(
        url,
        {"action": "reset_sessions", "_selected_action": [session.pk], "confirm": "yes"},
        follow=True,
    )
    assert "message(s) archived" in done.content.decode()
    assert session.messages.filter(active=True).count() == 1  # the system prompt
    assert session.messages.count() == 7  # nothing deleted
    (event,) = CompressionEvent.objects.filter(session=session, outcome="reset")
    assert event.trigger == "manual_admin"
    assert event.reason.startswith("reset from the admin by ")
    assert event.rows_archived == live_before - 1


def test_clear_guards_unlocks_a_session(staff, session):
    from datetime import timedelta

    from django.utils import timezone

    from sessions_app.models import Session

    later = timezone.now() + timedelta(hours=1)
    Session.objects.filter(pk=session.pk).update(
        cooldown_until=later, thrash_lock_until=later, failure_streak=3
    )
    staff.post(
        reverse("admin:sessions_app_session_changelist"),
        {"action": "clear_guards", "_selected_action": [session.pk]},
    )
    session.refresh_from_db()
    assert (session.cooldown_until, session.thrash_lock_until, session.failure_streak) == (
        None,
        None,
        0,
    )


def test_an_override_shows_the_threshold_it_makes_for_each_model_at_its_own_window(staff, session):
    page = staff.get(reverse("admin:compression_modelthresholdoverride_changelist")).content
    # glm at 0.4: of glm-4.5's 131,072 floored at 64,000; of glm-4.6's 200,000, 80,000.
    assert "glm-4.5 (131,072): 64,000; glm-4.6 (200,000): 80,000" in page.decode()
    # A model only sessions use counts too, at the window those sessions have.
    services.open_session(session.channel, model="zai/glm-5-air", context_window=1_000_000)
    ModelThresholdOverride.objects.create(pattern="no-such-model", ratio=0.6)
    page = staff.get(reverse("admin:compression_modelthresholdoverride_changelist"))
    text = page.content.decode()
    assert "zai/glm-5-air (1,000,000): 400,000" in text
    # No known model: the three reference windows.
    assert "no known model matches; at 128K / 200K / 1M windows: 76,800 / 120,000 / 600,000" in (
        text
    )


def test_the_admin_speaks_the_console_s_visual_language(admin_client):
    import re
    from pathlib import Path

    page = admin_client.get(reverse("admin:index")).content.decode()
    assert "hermes/admin.css" in page
    static = Path(__file__).resolve().parent.parent / "static" / "hermes"
    console = (static / "console.css").read_text()
    admin_css = (static / "admin.css").read_text()
    header = re.search(r"\.top \{[^}]*background: (#[0-9a-f]{6})", console).group(1)
    accent = re.search(r"--accent: (#[0-9a-f]{6})", console).group(1)
    assert f"--header-bg: {header}" in admin_css
    assert f"--primary: {accent}" in admin_css


def test_a_provider_scoped_override_shows_the_threshold_the_engine_uses(
    staff, session, hermes_config
):
    from compression.policy.threshold import threshold_for

    hermes_config(model={"provider": "openrouter"})
    ModelThresholdOverride.objects.filter(pattern="glm").delete()  # only the scoped one applies
    ModelThresholdOverride.objects.create(pattern="openrouter:glm-4.6", ratio=0.4)
    glm = services.open_session(session.channel, model="glm-4.6", context_window=200_000).session
    engine = threshold_for(glm).tokens
    assert engine == 80_000
    page = staff.get(reverse("admin:compression_modelthresholdoverride_changelist"))
    assert f"glm-4.6 (200,000): {engine:,}" in page.content.decode()


def test_an_override_below_0_75_says_it_replaces_the_small_window_raise_for_each_model(
    staff, session
):
    override = ModelThresholdOverride.objects.create(pattern="gpt-4o", ratio=0.5)
    change = reverse("admin:compression_modelthresholdoverride_change", args=[override.pk])
    text = staff.get(change).content.decode()
    assert (
        "Below 0.75: for a model with a window under 512K this override replaces the raise to "
        "0.75 (it is not raised) — gpt-4o (128,000) compresses at 64,000 instead of 96,000"
    ) in text
    # At or above 0.75 there is nothing to say.
    override.ratio = 0.8
    override.save()
    assert "Below 0.75" not in staff.get(change).content.decode()
    # A model with a large window is not affected, and the form says so.
    big = ModelThresholdOverride.objects.create(pattern="gemini-2.5-pro", ratio=0.5)
    change = reverse("admin:compression_modelthresholdoverride_change", args=[big.pk])
    assert "none of the models it matches has such a window" in staff.get(change).content.decode()
