"""Each message carries its session's channel, so the filter every gateway search carries is
read from the row the search joins anyway (no per-query list of the channel's sessions)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext

from search.filters import Filters
from search.service import search
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Message


@pytest.fixture
def two_channels(db):
    sessions = []
    for name in ("ours", "theirs"):
        channel = create_channel(name)[0]
        session = services.open_session(channel, model="gpt-4o", system_prompt="sys").session
        services.append_messages(
            session,
            [
                {"role": "user", "content": f"where is the zanzibar cache of {name}"},
                {"role": "assistant", "content": f"the zanzibar cache of {name} is on disk"},
            ],
            run_hooks=False,
        )
        sessions.append(session)
    return sessions


def test_a_gateway_search_finds_only_its_channel_without_reading_the_sessions_table(
    two_channels,
):
    ours, _theirs = two_channels
    with CaptureQueriesContext(connection) as queries:
        result = search("zanzibar", Filters(channel_id=ours.channel_id), window=0)
    assert {hit.message.session_id for hit in result.hits} == {ours.pk}
    assert len(result.hits) == 2
    lookups = [q["sql"] for q in queries if "MATCH" in q["sql"] or "@@" in q["sql"]]
    assert lookups, [q["sql"] for q in queries]
    for sql in lookups:
        assert "sessions_app_session" not in sql, sql
        assert '"channel_id" = ' in sql or "m.channel_id = " in sql, sql


def test_every_row_of_a_session_carries_its_channel(two_channels):
    for session in two_channels:
        channels = set(Message.objects.filter(session=session).values_list("channel", flat=True))
        assert channels == {session.channel_id}


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_rows_written_before_it_their_sessions_channel():
    executor = MigrationExecutor(connection)
    before = [("sessions_app", "0009_live_rows_index")]
    # Every app's latest: going back undoes other apps' migrations that depend on these.
    latest = executor.loader.graph.leaf_nodes()
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps
        channel = old.get_model("sessions_app", "Channel").objects.create(name="legacy")
        session = old.get_model("sessions_app", "Session").objects.create(
            channel=channel, model="gpt-4o", context_window=128_000
        )
        old.get_model("sessions_app", "Message").objects.bulk_create(
            old.get_model("sessions_app", "Message")(
                session=session, position=p, role="user", content=f"old row {p}"
            )
            for p in range(3)
        )
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(latest)
    assert (
        list(Message.objects.filter(session_id=session.pk).values_list("channel_id", flat=True))
        == [channel.pk] * 3
    )


def test_a_word_only_in_another_channel_is_not_looked_for_row_by_row(two_channels):
    ours, theirs = two_channels
    services.append_messages(
        theirs, [{"role": "user", "content": "the quokka runbook"}], run_hooks=False
    )
    result = search("quokka", Filters(channel_id=ours.channel_id), window=0)
    assert result.hits == [] and result.total == 0
    assert result.tried == ["words", "trigram"]  # no scan after the substring index said none
    assert result.scan_reached is None and not result.has_more
    # Terms no index can look up (one or two characters) still end in the bounded scan.
    assert search("qu", Filters(channel_id=ours.channel_id), window=0).tried[-1] == "scan"
