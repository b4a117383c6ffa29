"""core.plain reads a model's row as the ORM would: every column's value and type, on both
backends (on SQLite a time is text and a flag 0 or 1 until converted)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from core import plain
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import ApiKey, Message, Session


def _same_as_orm(model, found) -> None:
    orm = model.objects.get(pk=found.pk)
    for field in model._meta.concrete_fields:
        ours, theirs = getattr(found, field.attname), getattr(orm, field.attname)
        assert ours == theirs and type(ours) is type(theirs), field.attname
    assert not found._state.adding and found._state.db == orm._state.db


def _read(model, pk):
    table = model._meta.db_table
    return plain.read_one(
        model,
        f"SELECT {plain.columns(model, 't')}, 42 FROM {table} t WHERE t.id = %s",  # noqa: S608
        [model._meta.pk.get_db_prep_value(pk, connection)],
    )


@pytest.mark.django_db
def test_a_key_a_session_and_a_message_read_plainly_equal_what_the_orm_reads():
    channel, issued = create_channel("plain-rows")
    key = ApiKey.objects.get(prefix=issued.api_key.prefix)
    ApiKey.objects.filter(pk=key.pk).update(
        last_used_at=timezone.now(), expires_at=timezone.now() + timedelta(days=3)
    )
    session = services.open_session(channel, model="gpt-4o", system_prompt="sys").session
    services.append_messages(
        session,
        [
            {"role": "user", "content": "数据库 migration"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "/etc/hosts"}'},
                    }
                ],
            },
        ],
        run_hooks=False,
    )
    message = Message.objects.filter(session=session).exclude(tool_calls=None).get()

    for model, pk in ((ApiKey, key.pk), (Session, session.pk), (Message, message.pk)):
        found = _read(model, pk)
        assert found is not None
        instance, extra = found
        _same_as_orm(model, instance)
        assert extra == (42,)  # the columns after the model's, as they came


@pytest.mark.django_db
def test_no_row_is_none():
    assert _read(ApiKey, 10**9) is None
