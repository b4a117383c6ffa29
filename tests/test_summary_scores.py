"""Every written summary is scored against the originals it replaces: the share of the span's
salient items the summary, head and tail still carry (compression.engine.retention), stored on
the event with what was missed, flagged under compression.scoring.floor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compression.engine.compress import compress
from compression.engine.retention import MISSED_KEPT, normalise, row_text, salient_items, score
from compression.models import CompressionEvent
from compression.testing.fake_model import Reply
from sessions_app import services
from sessions_app.models import Message
from tests.test_compression import make_session, turn

Outcome = CompressionEvent.Outcome
REGRESSION = sorted((Path(__file__).parent / "data" / "retention").glob("*.json"))


def rows_of(path: Path) -> tuple[dict, list[Message]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = [
        Message(role=m["role"], content=m.get("content"), tool_calls=m.get("tool_calls"))
        for m in data["messages"]
    ]
    return data, rows


@pytest.mark.parametrize("path", REGRESSION, ids=lambda p: p.stem)
def test_the_scorer_finds_every_expected_item_of_the_regression_set(path):
    data, rows = rows_of(path)
    found = {item.key for item in salient_items([row_text(r) for r in rows])}
    missing = [e for e in data["expected"] if normalise(e) not in found]
    assert missing == []


@pytest.mark.parametrize("path", REGRESSION, ids=lambda p: p.stem)
def test_a_summary_naming_every_item_keeps_them_all_and_one_naming_none_keeps_none(path):
    _, rows = rows_of(path)
    texts = [row_text(r) for r in rows]
    items = salient_items(texts)
    full = score(texts, ["\n".join(i.text for i in items)])
    assert (full.items, full.kept, full.missed, full.ratio) == (len(items), len(items), [], 1.0)
    empty = score(texts, ["The user and the agent worked on it."])
    assert empty.kept == 0 and empty.ratio == 0.0
    assert empty.missed == [i.text for i in items][:MISSED_KEPT]


def test_matching_ignores_case_and_spaces_and_a_path_is_carried_by_its_file_name():
    span = ["Latency was 120 ms in /srv/app/config/settings.py; see ECONNREFUSED."]
    kept = score(span, ["latency 120ms, settings.py, econnrefused"])
    assert kept.ratio == 1.0


def test_cjk_terms_count_when_they_recur_and_the_longest_form_is_taken():
    span = ["数据库连接失败。数据库连接池已满。请检查数据库连接配置。"]
    terms = [i.text for i in salient_items(span) if i.kind == "term"]
    assert "数据库连接" in terms
    assert "数据库" not in terms and "据库连" not in terms  # inside the longer term, as often


def test_nothing_salient_is_nothing_lost():
    assert score(["ok", "thanks"], ["fine"]).ratio == 1.0


def test_masked_secrets_are_not_items():
    items = salient_items(["use [REDACTED:api_key] then [REDACTED:api_key] again"])
    assert all("redacted" not in i.key and "api_key" not in i.key for i in items)


# --- On the event -------------------------------------------------------------------------


def planted_session(channel):
    """Twelve turns, with the regression set's English span in the middle."""
    data, _ = rows_of(REGRESSION[[p.stem for p in REGRESSION].index("english")])
    session = make_session(channel, turns=2)
    services.append_messages(session, data["messages"])
    services.append_messages(session, [m for n in range(2, 12) for m in turn(n)])
    session.refresh_from_db()
    return session


def test_a_model_summary_that_carries_the_items_scores_high(summariser, model_server, channel):
    session = planted_session(channel)
    data, _ = rows_of(REGRESSION[[p.stem for p in REGRESSION].index("english")])
    carried = ", ".join(data["expected"])
    middle = [f"item-{n}" for n in range(12)] + [f"step {n}.0" for n in range(12)]
    model_server.script.default = Reply(
        f"## Goal\nFix the deploy: {carried}.\n## Completed actions\n" + ", ".join(middle) * 3
    )
    event = compress(session).events[0]
    assert event.outcome == Outcome.COMPRESSED
    assert event.salient_items and event.salient_kept is not None
    assert event.retention == pytest.approx(event.salient_kept / event.salient_items, abs=1e-4)
    assert event.retention >= 0.6 and event.below_floor is False
    assert not any(normalise(e) in map(normalise, event.salient_missed) for e in data["expected"])


def test_a_summary_that_drops_them_is_flagged_under_the_floor_with_what_it_missed(
    summariser, model_server, channel
):
    session = planted_session(channel)
    model_server.script.default = Reply("## Goal\nThe user had a deploy problem. " * 30)
    event = compress(session).events[0]
    assert event.outcome == Outcome.COMPRESSED
    assert event.retention < 0.6 and event.below_floor is True
    assert "ECONNREFUSED" in event.salient_missed
    assert len(event.salient_missed) <= MISSED_KEPT


def test_a_floor_of_zero_flags_nothing(summariser, model_server, channel):
    summariser(scoring={"floor": 0})
    model_server.script.default = Reply("## Goal\nThe user had a deploy problem. " * 30)
    event = compress(planted_session(channel)).events[0]
    assert event.retention < 0.6 and event.below_floor is False


def test_the_local_fallback_is_scored_the_same_way(hermes_config, channel):
    hermes_config()
    event = compress(planted_session(channel)).events[0]
    assert event.outcome == Outcome.FALLBACK
    assert event.retention is not None and event.salient_items > 0


def test_the_api_reports_the_score_of_each_pass_and_event(gateway):
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [m for n in range(12) for m in turn(n)]})
    body = gateway.post(f"/sessions/{sid}/compress", {}).json()
    scored = body["passes"][0]
    assert 0 <= scored["retention"] <= 1 and scored["salient_items"] >= scored["salient_kept"]
    assert isinstance(scored["salient_missed"], list) and scored["redactions"] == {}
    events = gateway.get(f"/sessions/{sid}/events").json()["items"]
    assert events[0]["retention"] == scored["retention"]


def test_decisions_and_failures_carry_no_score(summariser, model_server, channel):
    from compression.testing.fake_model import Fail

    summariser(abort_on_summary_failure=True)
    model_server.script.default = Fail(500, "down")
    event = compress(planted_session(channel)).events[0]
    assert event.outcome == Outcome.FAILED and event.retention is None


# --- Pins, memory blocks and a focus reach the summariser ---------------------------------


def test_pins_memory_blocks_and_the_focus_reach_the_summary_request(
    gateway, summariser, model_server
):
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [m for n in range(12) for m in turn(n)]})
    pinned = Message.objects.get(session_id=sid, content__startswith="Question 5:")
    assert gateway.post(f"/sessions/{sid}/messages/{pinned.position}/pin").status_code == 200
    assert gateway.put("/memory/user", {"text": "Ada deploys on Fridays."}).status_code == 201
    assert gateway.put(f"/sessions/{sid}/memory/keys", {"text": "GITHUB_TOKEN=ghp_" + "a1" * 18})
    model_server.script.default = Reply("## Goal\nItems. " + "item fine. " * 60)
    response = gateway.post(f"/sessions/{sid}/compress", {"focus": "the item-7 question"})
    assert response.status_code == 200, response.content
    prompt = model_server.requests[-1].body["messages"][-1]["content"]
    keep = prompt.split("<keep-in-detail>", 1)[1].split("</keep-in-detail>", 1)[0]
    assert "KEEP IN DETAIL" in prompt and "Never summarise them away" in prompt
    assert "Ada deploys on Fridays." in keep  # the channel's block
    assert f"[#{pinned.position} user, pinned]" in keep and "Question 5:" in keep
    assert "ghp_" not in prompt and "[REDACTED:api_key]" in keep  # masked like the rest
    assert "Focus: keep the most detail about: the item-7 question" in prompt
    # The pinned row stays live beside the summary, not inside the span summarised.
    transcript = prompt.split("TRANSCRIPT TO SUMMARISE:", 1)[1].split("KEEP IN DETAIL", 1)[0]
    assert "Question 5:" not in transcript


def test_without_pins_or_blocks_there_is_no_keep_block(summariser, model_server, channel):
    model_server.script.default = Reply("## Goal\nItems. " + "item fine. " * 60)
    compress(make_session(channel))
    assert "<keep-in-detail>" not in model_server.requests[-1].body["messages"][-1]["content"]
