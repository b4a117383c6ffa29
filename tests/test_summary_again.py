"""A weak summary can be written again from its originals by another model (the console's
"compress again with another model"), and any summary can be probed: questions only the
originals can answer, answered from the summary alone (manage.py probe_summary, the console)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from compression.engine.compress import compress
from compression.engine.probe import probe
from compression.engine.redo import resummarise
from compression.models import CompressionEvent
from compression.testing.fake_model import Fail, Reply, Respond
from sessions_app.models import Message
from sessions_app.services import InvalidInput, StateConflict
from tests.test_summary_scores import REGRESSION, planted_session, rows_of

Outcome = CompressionEvent.Outcome
WEAK = "## Goal\nThe user had a deploy problem. " * 30


def expected_items() -> list[str]:
    data, _ = rows_of(REGRESSION[[p.stem for p in REGRESSION].index("english")])
    return data["expected"]


def weak_summary(channel, model_server):
    session = planted_session(channel)
    model_server.script.default = Reply(WEAK)
    event = compress(session).events[0]
    assert event.below_floor is True
    return session, event


def test_summarising_again_hands_the_new_model_the_originals_not_the_weak_summary(
    summariser, model_server, channel
):
    session, weak = weak_summary(channel, model_server)
    good = "## Goal\nFix the deploy: " + ", ".join(expected_items()) + ". " + "item-3 " * 200
    model_server.script.default = Reply(good)
    live_before = session.live_messages
    event = resummarise(session, weak.summary_message_id, model_name="bigger-model")
    assert event.outcome == Outcome.COMPRESSED and event.summary_model == "bigger-model"
    request = model_server.requests[-1].body
    assert request["model"] == "bigger-model"
    prompt = request["messages"][-1]["content"]
    assert "ECONNREFUSED" in prompt and "The user had a deploy problem." not in prompt
    assert event.retention > weak.retention and event.below_floor is False
    session.refresh_from_db()
    assert session.live_messages == live_before  # one summary in place of one
    old = Message.objects.get(pk=weak.summary_message_id)
    new = event.summary_message
    assert not old.active and old.summarized_by_id == new.pk  # kept, under the new one
    assert (new.covers_from_position, new.covers_to_position) == (
        old.covers_from_position,
        old.covers_to_position,
    )
    assert Message.objects.filter(summarized_by=old).count() == weak.rows_archived


def test_a_model_that_fails_again_changes_nothing(summariser, model_server, channel):
    session, weak = weak_summary(channel, model_server)
    model_server.script.default = Fail(503, "overloaded")
    event = resummarise(session, weak.summary_message_id, model_name="other")
    assert event.outcome == Outcome.FAILED and "http_503" in event.error
    assert Message.objects.get(pk=weak.summary_message_id).active


def test_only_a_live_summary_can_be_written_again(summariser, model_server, channel):
    session, weak = weak_summary(channel, model_server)
    model_server.script.default = Reply("## Goal\n" + ", ".join(expected_items()) + " x" * 300)
    resummarise(session, weak.summary_message_id)
    with pytest.raises(StateConflict, match="absorbed"):
        resummarise(session, weak.summary_message_id)


def test_without_a_summary_model_there_is_nothing_to_write_again_with(hermes_config, channel):
    hermes_config()
    session = planted_session(channel)
    event = compress(session).events[0]
    with pytest.raises(InvalidInput, match="No summary model"):
        resummarise(session, event.summary_message_id)


def test_the_probe_asks_missed_items_first_and_checks_the_answers_against_the_originals(
    summariser, model_server, channel
):
    _, weak = weak_summary(channel, model_server)

    def fn(body):
        user = body["messages"][-1]["content"]
        numbered = [
            line for line in user.split("QUESTIONS", 1)[1].splitlines() if line[:1].isdigit()
        ]
        # Right on the first question only: the expected item is read back from the originals.
        first = numbered[0].split(". ", 1)[1]
        assert "____" in first
        return Reply("1. " + weak.salient_missed[0] + "\n2. UNKNOWN\n3. something else")

    model_server.script.default = Respond(fn)
    result = probe(weak, questions=3)
    assert result["asked"] == 3 and result["correct"] == 1
    first = result["questions"][0]
    assert first["item"] == weak.salient_missed[0] and first["missed_by_score"] is True
    assert [q["correct"] for q in result["questions"]] == [True, False, False]
    assert result["questions"][1]["answer"] == ""  # UNKNOWN
    weak.refresh_from_db()
    assert weak.probe["correct"] == 1
    sent = model_server.requests[-1].body["messages"]
    assert "Never guess" in sent[0]["content"]


def test_probe_questions_leave_masked(summariser, model_server, channel):
    from sessions_app import services
    from tests.test_compression import make_session, turn

    session = make_session(channel, turns=2)
    key = "sk-proj-" + "Q7" * 14
    services.append_messages(
        session,
        [
            {"role": "user", "content": f"Deploy billing-api v9.8.7 with OPENAI_API_KEY={key}"},
            {"role": "assistant", "content": f"Deployed v9.8.7 using {key} on ECONNRESET retry."},
        ]
        + [m for n in range(2, 12) for m in turn(n)],
    )
    session.refresh_from_db()
    model_server.script.default = Reply(WEAK)
    event = compress(session).events[0]
    model_server.script.default = Reply("1. UNKNOWN")
    probe(event, questions=6)
    assert key not in json.dumps(model_server.requests[-1].body)


def test_the_probe_command_prints_each_question_and_the_tally(summariser, model_server, channel):
    _, weak = weak_summary(channel, model_server)
    model_server.script.default = Reply("1. UNKNOWN\n2. UNKNOWN")
    out = StringIO()
    call_command("probe_summary", str(weak.pk), "--questions", "2", stdout=out)
    text = out.getvalue()
    assert "1. [wrong; missed by the score]" in text and "expected" in text
    assert f"event {weak.pk}: 0 of 2 answered from the summary (fake-summary)" in text
    with pytest.raises(CommandError, match="No compression event 999999"):
        call_command("probe_summary", "999999")
    with pytest.raises(CommandError, match="between 1 and 50"):
        call_command("probe_summary", str(weak.pk), "--questions", "0")


def test_a_failed_event_has_nothing_to_probe(summariser, model_server, channel):
    session = planted_session(channel)
    event = CompressionEvent.objects.create(session=session, trigger="manual_api", outcome="failed")
    with pytest.raises(InvalidInput, match="nothing to probe"):
        probe(event)


# --- The console ---------------------------------------------------------------------------


def test_the_provenance_panel_shows_the_score_what_was_missed_and_the_offers(
    admin_client, summariser, model_server, channel
):
    session, weak = weak_summary(channel, model_server)
    url = reverse("console:originals", args=[session.pk, weak.summary_message_id])
    page = admin_client.get(url).content.decode()
    assert 'id="provenance"' in page
    assert f"kept {weak.salient_kept} of {weak.salient_items} salient items" in page
    assert "under the floor" in page and "<code>ECONNREFUSED</code>" in page
    assert "This summary kept too little." in page and "Summarise again" in page
    assert "Probe this summary" in page
    timeline = admin_client.get(reverse("console:timeline", args=[session.pk])).content.decode()
    assert f"kept {weak.salient_kept} of {weak.salient_items}" in timeline
    assert 'class="score low"' in timeline


def test_the_console_queues_a_second_summary_and_a_probe(
    admin_client, summariser, model_server, channel, django_capture_on_commit_callbacks, settings
):
    session, weak = weak_summary(channel, model_server)
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": True}
    good = "## Goal\nFix the deploy: " + ", ".join(expected_items()) + ". " + "item-3 " * 200
    model_server.script.default = Reply(good)
    again = reverse("console:resummarise", args=[session.pk, weak.summary_message_id])
    response = admin_client.post(again, {"model": "bigger-model"})
    assert response.status_code == 302 and "follow=" in response["Location"]
    newer = CompressionEvent.objects.filter(session=session, pk__gt=weak.pk).get()
    assert newer.summary_model == "bigger-model" and newer.below_floor is False
    model_server.script.default = Reply("1. UNKNOWN")
    response = admin_client.post(reverse("console:probe", args=[session.pk, newer.pk]))
    assert response.status_code == 302
    newer.refresh_from_db()
    assert newer.probe is not None and newer.probe["asked"] >= 1
    page = admin_client.get(response["Location"]).content.decode()
    assert "answered from the summary" in page


def test_the_dashboard_shows_the_distribution_of_the_last_day(
    admin_client, summariser, model_server, channel
):
    weak_summary(channel, model_server)
    page = admin_client.get(reverse("console:dashboard")).content.decode()
    assert "Summary scores, last 24 hours" in page
    assert "1 written summary scored" in page and "1 under the floor" in page
