from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from sessions_app.keys import authenticate
from sessions_app.models import ApiKey, Channel, Message, Session
from sessions_app.services import recount

KEY = re.compile(r"hm_[0-9a-f]{12}_[A-Za-z0-9_-]+")


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_channel_prints_a_working_key_once(db):
    output = run("create_channel", "telegram")
    (key,) = KEY.findall(output)
    assert authenticate(key) == Channel.objects.get(name="telegram")
    stored = ApiKey.objects.get()
    assert key not in (stored.prefix, stored.key_hash)
    assert stored.key_hash != key and len(stored.key_hash) == 64


def test_create_channel_refuses_an_existing_name_unless_asked_for_a_new_key(db):
    first = KEY.findall(run("create_channel", "discord"))[0]
    with pytest.raises(CommandError, match="--new-key"):
        run("create_channel", "discord")
    second = KEY.findall(run("create_channel", "discord", "--new-key"))[0]
    assert first != second
    assert authenticate(first) == authenticate(second) == Channel.objects.get(name="discord")


@pytest.mark.slow  # the whole demo: about 2 s each
def test_setup_demo_creates_a_login_a_key_and_a_long_mixed_conversation(db):
    output = run("setup_demo")
    (key,) = KEY.findall(output)
    assert authenticate(key).name == "demo"
    password = re.search(r"operator / (\S+)", output).group(1)
    assert get_user_model().objects.get(username="operator").check_password(password)

    main = Session.objects.get(external_id="demo-main")
    assert main.total_messages >= 400
    rows = Message.objects.filter(session=main)
    assert rows.filter(role="tool").count() > 20
    assert rows.filter(tool_calls__isnull=False).exists()
    assert rows.filter(content__contains="用Django写代码").exists()
    assert recount(main).live_tokens == main.live_tokens
    # Every tool call has its result right after it: the demo is a valid transcript.
    pending: set[str] = set()
    for row in rows.order_by("position"):
        if row.role == "tool":
            pending.remove(row.tool_call_id)
        else:
            assert not pending, f"calls without results before position {row.position}"
            pending = {call["id"] for call in row.tool_calls or ()}
    assert not pending


@pytest.mark.slow  # the whole demo: about 2 s each
def test_setup_demo_can_run_again_without_duplicating_anything(db):
    run("setup_demo")
    counts = (Session.objects.count(), Message.objects.count())
    output = run("setup_demo")
    assert (Session.objects.count(), Message.objects.count()) == counts
    assert "already loaded" in output
    assert "exists" in output
    assert len(KEY.findall(output)) == 1


@pytest.mark.slow  # the whole demo: about 2 s each
def test_the_demo_conversation_is_dated_over_its_two_weeks_in_order(db):
    from datetime import timedelta

    from django.utils import timezone

    run("setup_demo")
    main = Session.objects.get(external_id="demo-main")
    times = list(
        Message.objects.filter(session=main)
        .order_by("position")
        .values_list("created_at", flat=True)
    )
    assert times == sorted(times)
    assert times[-1] - times[0] >= timedelta(days=13, hours=23)
    assert timezone.now() - times[-1] < timedelta(minutes=5)
    main.refresh_from_db()
    assert main.created_at == times[0]
