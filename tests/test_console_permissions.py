"""Who may look at and act on the console: anonymous visitors, logged-in non-staff users and
gateways holding a channel key get nothing; staff may look; acting needs the change right."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from compression.models import CompressionEvent
from core.middleware import CONTENT_SECURITY_POLICY
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Message, Session
from tests.test_compression import turn

PASSWORD = "a-long-test-password"


@pytest.fixture
def world(db):
    channel, issued = create_channel("perm")
    session = services.open_session(channel, model="gpt-4o", system_prompt="sys").session
    services.append_messages(session, [m for n in range(12) for m in turn(n)], run_hooks=False)
    later = timezone.now() + timedelta(hours=1)
    Session.objects.filter(pk=session.pk).update(cooldown_until=later, failure_streak=2)
    session.refresh_from_db()
    return session, issued.plaintext


def _client(user=None, **headers) -> Client:
    client = Client(**headers)
    if user is not None:
        client.force_login(user)
    return client


def _user(name: str, *, staff: bool, perms: tuple[str, ...] = ()):
    user = get_user_model().objects.create_user(name, "", PASSWORD, is_staff=staff)
    for codename in perms:
        app_label = "sessions_app" if codename.endswith(("_session", "_message")) else "compression"
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    return user


def _pages(session: Session) -> list[str]:
    return [
        reverse("console:dashboard"),
        reverse("console:timeline", args=[session.pk]),
        reverse("console:reset", args=[session.pk]),
        reverse("search:page") + "?q=item",
        reverse("admin:index"),
        reverse("admin:sessions_app_session_changelist"),
        reverse("admin:sessions_app_session_change", args=[session.pk]),
        reverse("admin:sessions_app_message_changelist"),
        reverse("admin:compression_compressionevent_changelist"),
        reverse("admin:compression_modelthresholdoverride_changelist"),
        reverse("admin:sessions_app_channel_changelist"),
    ]


def _act(client: Client, session: Session) -> list[int]:
    """Every action the console offers, as a POST; returns the status codes."""
    changelist = reverse("admin:sessions_app_session_changelist")
    selected = {"_selected_action": [session.pk]}
    return [
        client.post(reverse("console:compress", args=[session.pk]), {"focus": "x"}).status_code,
        client.post(reverse("console:reset", args=[session.pk])).status_code,
        client.post(changelist, {"action": "compress_now", **selected}).status_code,
        client.post(
            changelist, {"action": "reset_sessions", "confirm": "yes", **selected}
        ).status_code,
        client.post(changelist, {"action": "clear_guards", **selected}).status_code,
        client.post(
            reverse("admin:compression_modelthresholdoverride_add"),
            {"pattern": "gpt", "ratio": "0.3", "enabled": "on"},
        ).status_code,
    ]


def _untouched(session: Session) -> None:
    before = (session.live_messages, session.cooldown_until, session.failure_streak)
    session.refresh_from_db()
    assert (session.live_messages, session.cooldown_until, session.failure_streak) == before
    assert not CompressionEvent.objects.exists()
    assert Message.objects.filter(session=session, active=False).count() == 0


@pytest.mark.parametrize("who", ["anonymous", "non-staff user", "gateway with a channel key"])
def test_outsiders_are_sent_to_the_login_page_and_change_nothing(
    world, who, django_capture_on_commit_callbacks
):
    session, key = world
    client = {
        "anonymous": lambda: _client(),
        "non-staff user": lambda: _client(_user("visitor", staff=False, perms=("change_session",))),
        "gateway with a channel key": lambda: _client(HTTP_AUTHORIZATION=f"Bearer {key}"),
    }[who]()
    for url in [
        *_pages(session),
        reverse("console:events", args=[session.pk]),  # JSON
        reverse("console:message", args=[Message.objects.filter(session=session).first().pk]),
    ]:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("admin:login")), url
    with django_capture_on_commit_callbacks(execute=True):  # anything queued would run
        statuses = _act(client, session)
    assert statuses == [302] * len(statuses)
    _untouched(session)


def test_staff_without_the_change_right_may_look_but_not_act(
    world, django_capture_on_commit_callbacks
):
    session, _ = world
    client = _client(_user("viewer", staff=True, perms=("view_session", "view_message")))
    for url in (
        reverse("console:dashboard"),
        reverse("console:timeline", args=[session.pk]),
        reverse("search:page") + "?q=item",
        reverse("admin:sessions_app_session_changelist"),
    ):
        assert client.get(url).status_code == 200, url
    changelist = client.get(reverse("admin:sessions_app_session_changelist")).content.decode()
    assert "compress_now" not in changelist and "reset_sessions" not in changelist
    assert client.get(reverse("console:reset", args=[session.pk])).status_code == 403
    timeline = client.get(reverse("console:timeline", args=[session.pk])).content.decode()
    assert reverse("console:compress", args=[session.pk]) not in timeline  # no buttons to press
    assert reverse("console:reset", args=[session.pk]) not in timeline
    with django_capture_on_commit_callbacks(execute=True):
        statuses = _act(client, session)
    assert statuses[:2] == [403, 403]  # the console's own buttons
    assert statuses[5] == 403  # overrides need their own add right
    _untouched(session)


def test_staff_with_the_change_right_get_every_action(world, django_capture_on_commit_callbacks):
    session, _ = world
    client = _client(_user("operator", staff=True, perms=("view_session", "change_session")))
    changelist = client.get(reverse("admin:sessions_app_session_changelist")).content.decode()
    for action in ("compress_now", "reset_sessions", "clear_guards"):
        assert f'value="{action}"' in changelist
    response = client.post(
        reverse("admin:sessions_app_session_changelist"),
        {"action": "clear_guards", "_selected_action": [session.pk]},
    )
    assert response.status_code == 302
    session.refresh_from_db()
    assert session.cooldown_until is None and session.failure_streak == 0
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("console:compress", args=[session.pk]), {"around": "9"})
    assert response.status_code == 302
    assert CompressionEvent.objects.filter(session=session, trigger="manual_admin").exists()


def test_compressing_around_a_message_that_does_not_exist_queues_nothing(world, admin_client):
    session, _ = world
    url = reverse("console:compress", args=[session.pk])
    for around in ("9999", "abc", "-3", "9" * 40, "²", "##5", "5" * 11):
        response = admin_client.post(url, {"around": around, "focus": "x"}, follow=True)
        assert response.status_code == 200, around
        assert "Nothing was queued" in response.content.decode(), around
    response = admin_client.post(url, {"focus": "f" * 501}, follow=True)
    assert "Nothing was queued" in response.content.decode()
    assert not CompressionEvent.objects.exists()


def test_an_admin_action_on_ids_that_are_not_ids_does_nothing_and_says_so(world, admin_client):
    session, _ = world
    for url in (
        reverse("admin:sessions_app_session_changelist"),
        reverse("admin:sessions_app_channel_changelist"),
        reverse("admin:sessions_app_apikey_changelist"),
    ):
        for bogus in ("not-an-id", "²", "1" * 60):
            action = "revoke" if "apikey" in url else "delete_selected"
            if "session_" in url:
                action = "reset_sessions"
            response = admin_client.post(
                url, {"action": action, "_selected_action": [bogus]}, follow=True
            )
            assert response.status_code == 200, (url, bogus)
            assert "nothing was done" in response.content.decode(), (url, bogus)
    session.refresh_from_db()
    assert session.live_messages > 1  # the reset never ran


def test_every_html_page_carries_a_content_security_policy(world, admin_client):
    session, _ = world
    for url in _pages(session):
        response = admin_client.get(url)
        assert response.status_code == 200, url
        assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY, url


def test_the_guard_state_filter_shows_who_is_held_back(world, admin_client):
    session, _ = world
    calm = services.open_session(session.channel, model="gpt-4o", system_prompt="sys").session
    url = reverse("admin:sessions_app_session_changelist")
    cooling = admin_client.get(url, {"state": "cooldown"}).content.decode()
    assert str(session.pk) in cooling and str(calm.pk) not in cooling
    clear = admin_client.get(url, {"state": "clear"}).content.decode()
    assert str(calm.pk) in clear and str(session.pk) not in clear
    later = timezone.now() + timedelta(hours=1)
    held = {
        "locked": {"thrash_lock_until": later},
        "compressing": {"compressing_until": later},
        "failing": {"failure_streak": 3},
    }
    for state, fields in held.items():
        one = services.open_session(session.channel, model="gpt-4o", system_prompt=state).session
        Session.objects.filter(pk=one.pk).update(**fields)
        page = admin_client.get(url, {"state": state}).content.decode()
        assert str(one.pk) in page and str(calm.pk) not in page, state
    assert "cooldown until" in cooling and "2 failures in a row" in cooling


def test_the_dashboard_counts_every_held_session_and_lists_the_first_fifty(world, admin_client):
    session, _ = world
    later = timezone.now() + timedelta(hours=1)
    for n in range(55):
        extra = services.open_session(session.channel, model="gpt-4o", system_prompt=f"{n}")
        Session.objects.filter(pk=extra.session.pk).update(cooldown_until=later)
    page = admin_client.get(reverse("console:dashboard")).content.decode()
    assert "Sessions in cooldown (56, the first 50 shown)" in page


def test_the_channel_list_counts_keys_and_sessions_in_one_query(
    world, admin_client, django_assert_max_num_queries
):
    for n in range(5):
        channel, _ = create_channel(f"more-{n}")
        services.open_session(channel, model="gpt-4o", system_prompt="s")
    admin_client.get(reverse("admin:sessions_app_channel_changelist"))  # warm the login
    with django_assert_max_num_queries(8):
        page = admin_client.get(reverse("admin:sessions_app_channel_changelist"))
    assert page.status_code == 200


def test_a_guard_whose_time_has_passed_holds_nothing_on_any_page_or_in_the_api(world, admin_client):
    """The timeline, the dashboard, the admin and the API read the same guards: a cooldown and
    a lock that ended four minutes ago are shown as over (not in red, not "until")."""
    session, key = world
    past = timezone.now() - timedelta(minutes=4)
    Session.objects.filter(pk=session.pk).update(cooldown_until=past, thrash_lock_until=past)
    timeline = admin_client.get(reverse("console:timeline", args=[session.pk])).content.decode()
    assert "cooldown until" not in timeline and "lock until" not in timeline
    assert '<p class="hint" id="guards">Guards: 2 failures in a row.</p>' in timeline
    dashboard = admin_client.get(reverse("console:dashboard")).content.decode()
    assert str(session) not in dashboard.split("Sessions in cooldown")[1].split("</ul>")[0]
    admin = admin_client.get(reverse("admin:sessions_app_session_changelist")).content.decode()
    assert "cooldown until" not in admin and "lock until" not in admin
    answer = (
        Client()
        .get(f"/api/v1/sessions/{session.pk}", HTTP_AUTHORIZATION=f"Bearer {key}")
        .json()["guard"]
    )
    assert answer["cooling_down"] is False and answer["thrash_locked"] is False
    # Still held: red, with its time.
    Session.objects.filter(pk=session.pk).update(cooldown_until=timezone.now() + timedelta(hours=1))
    timeline = admin_client.get(reverse("console:timeline", args=[session.pk])).content.decode()
    assert '<p class="errors" id="guards">Guards: cooldown until' in timeline
    answer = (
        Client()
        .get(f"/api/v1/sessions/{session.pk}", HTTP_AUTHORIZATION=f"Bearer {key}")
        .json()["guard"]
    )
    assert answer["cooling_down"] is True
