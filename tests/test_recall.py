"""session_search: the model asks for what compression took out of its context, in the turn the
service runs (against the loopback model scripted to call the tool) and through the API."""

from __future__ import annotations

import json

import pytest

from agent import recall
from compression.engine.compress import compress
from compression.testing.fake_model import FakeModelServer, Reply
from sessions_app import services
from sessions_app.models import Message, Session
from sessions_app.services.messages import pending_tool_calls
from tests.test_compression import turn

FACT = "the vault code is quokka-4471"


def call(arguments: dict | str, name: str = "session_search", id: str = "call_1") -> dict:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": id, "type": "function", "function": {"name": name, "arguments": text}}


@pytest.fixture
def chat_model():
    with FakeModelServer() as server:
        server.script.default = Reply("I could not find it.")
        yield server


@pytest.fixture
def remembered(make_gateway, hermes_config, chat_model) -> tuple[object, Session]:
    """A session whose only copy of FACT is an archived original, under a local summary."""
    hermes_config(model={"default": "gpt-4o", "base_url": chat_model.base_url})
    gw = make_gateway("recall")
    sid = gw.open(system_prompt="sys")["id"]
    head = [m for n in range(3) for m in turn(n)]  # the protected head
    fact = [{"role": "user", "content": f"Remember this: {FACT}."}]
    fact.append({"role": "assistant", "content": "Noted."})
    later = [m for n in range(3, 16) for m in turn(n)]
    gw.post(f"/sessions/{sid}/messages", {"messages": head + fact + later})
    session = Session.objects.get(pk=sid)
    assert compress(session).outcome in ("compressed", "fallback")
    original = Message.objects.get(session=session, content__contains=FACT, is_summary=False)
    assert original.kind == "archived"
    return gw, session


def test_a_turn_searches_an_archived_original_and_answers_with_the_fact(remembered, chat_model):
    gw, session = remembered
    chat_model.then(
        Reply(None, tool_calls=[call({"query": "vault code"})]),
        Reply("The vault code is quokka-4471."),
    )
    response = gw.post(f"/sessions/{session.pk}/turn", {"content": "What was the vault code?"})
    assert response.status_code == 200, response.content
    assert response.json()["reply"]["content"] == "The vault code is quokka-4471."

    first, second = chat_model.requests[-2:]
    assert [t["function"]["name"] for t in first.body["tools"]] == ["session_search"]
    # The model saw the tool's answer, with the fact, before answering.
    tool_message = second.body["messages"][-1]
    assert tool_message["role"] == "tool" and "quokka-4471" in tool_message["content"]

    rows = list(Message.objects.filter(session=session, active=True).order_by("position")[:1000])[
        -4:
    ]
    assert [r.role for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert rows[1].tool_calls[0]["function"]["name"] == "session_search"
    answer = json.loads(rows[2].content)
    found = [h for h in answer["hits"] if "quokka-4471" in h["excerpt"]]
    # The original itself, archived (the local summary may quote it too).
    assert "archived" in [h["kind"] for h in found]
    assert rows[2].tool_call_id == "call_1"


def test_around_a_position_returns_the_originals_there(remembered):
    _, session = remembered
    original = Message.objects.get(session=session, content__contains=FACT, is_summary=False)
    answer = recall.run(session, {"around": original.position})
    positions = [m["position"] for m in answer["messages"]]
    assert original.position in positions
    row = next(m for m in answer["messages"] if m["position"] == original.position)
    assert row["kind"] == "archived" and FACT in row["content"]
    # The summary names the positions it covers, so the model knows where to look.
    summary = Message.objects.get(session=session, is_summary=True, active=True)
    covered = f"[Originals #{summary.covers_from_position}-#{summary.covers_to_position} are kept"
    assert covered in summary.content


def test_channel_scope_reaches_the_channel_s_other_sessions_and_never_another_channel(
    remembered, make_gateway
):
    gw, session = remembered
    other = services.open_session(gw.channel, model="gpt-4o", title="Another chat").session
    services.append_messages(other, [{"role": "user", "content": "the wombat password is 77"}])
    stranger = make_gateway("elsewhere")
    outsider = services.open_session(stranger.channel, model="gpt-4o").session
    services.append_messages(outsider, [{"role": "user", "content": "the wombat secret is 99"}])

    mine = recall.run(session, {"query": "wombat"})
    assert mine["hits"] == [] and "note" in mine
    channel = recall.run(session, {"query": "wombat", "scope": "channel"})
    assert [h["session"] for h in channel["hits"]] == ["Another chat"]
    assert "99" not in json.dumps(channel)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ("{not json", "must be a JSON object"),
        ("[1, 2]", "must be a JSON object"),
        ({}, "give query"),
        ({"query": "x", "colour": "red"}, "unknown argument(s): colour"),
        ({"query": "x", "scope": "world"}, 'scope must be "session" or "channel"'),
        ({"query": "x", "limit": 0}, "limit must be a whole number from 1 to 20"),
        ({"query": "x", "limit": True}, "limit must be"),
        ({"around": "ten"}, "around must be a message position"),
        ({"around": 10_000}, "no message at position 10000"),
        ({"around": -1}, "no message at position -1"),
        ({"query": "x" * 1_001}, "1,000"),
        ({"query": "   "}, ""),
    ],
)
def test_bad_arguments_answer_the_model_with_an_error_it_can_act_on(remembered, arguments, said):
    _, session = remembered
    answer = recall.run(session, arguments)
    assert "error" in answer, answer
    assert said in answer["error"]


def test_unknown_tools_and_malformed_calls_get_error_results_and_the_turn_goes_on(
    remembered, chat_model
):
    gw, session = remembered
    chat_model.then(
        Reply(None, tool_calls=[call("{oops", id="a"), call({}, name="rm_rf", id="b")]),
        Reply("Sorry, I could not search."),
    )
    response = gw.post(f"/sessions/{session.pk}/turn", {"content": "search please"})
    assert response.status_code == 200, response.content
    results = Message.objects.filter(session=session, role="tool").order_by("position")
    errors = [json.loads(r.content)["error"] for r in results.filter(tool_call_id__in=["a", "b"])]
    assert "must be a JSON object" in errors[0] and "unknown tool 'rm_rf'" in errors[1]


def test_tool_rounds_are_bounded_and_the_last_call_turns_tools_off(
    remembered, chat_model, hermes_config
):
    gw, session = remembered
    hermes_config(
        model={"default": "gpt-4o", "base_url": chat_model.base_url}, recall={"max_rounds": 2}
    )
    # A model that never stops asking -- even when told tools are off.
    chat_model.script.default = Reply("still looking", tool_calls=[call({"query": "vault"})])
    before = len(chat_model.requests)
    response = gw.post(f"/sessions/{session.pk}/turn", {"content": "find it"})
    assert response.status_code == 200, response.content
    sent = chat_model.requests[before:]
    assert len(sent) == 3  # the first call and two rounds
    assert [r.body.get("tool_choice") for r in sent] == [None, None, "none"]
    reply = response.json()["reply"]
    assert reply["content"] == "still looking" and not reply.get("tool_calls")
    # Every call has its result: the conversation goes on.
    assert pending_tool_calls(Session.objects.get(pk=session.pk)) == set()
    chat_model.script.default = Reply("ok")
    assert gw.post(f"/sessions/{session.pk}/turn", {"content": "thanks"}).status_code == 200


def test_with_the_tool_off_the_turn_offers_no_tools(remembered, chat_model, hermes_config):
    gw, session = remembered
    hermes_config(
        model={"default": "gpt-4o", "base_url": chat_model.base_url}, recall={"tool": False}
    )
    gw.post(f"/sessions/{session.pk}/turn", {"content": "hello"})
    assert "tools" not in chat_model.requests[-1].body


def test_gateways_get_the_tool_s_schema_and_run_calls_through_the_api(remembered, make_gateway):
    gw, session = remembered
    schema = gw.get("/tools")
    assert schema.status_code == 200
    assert schema.json()["tools"] == [recall.schema()]
    ran = gw.post(f"/sessions/{session.pk}/tools/session_search", {"query": "vault code"})
    assert ran.status_code == 200, ran.content
    body = ran.json()
    assert "quokka-4471" in body["content"] and body["result"]["hits"]
    bad = gw.post(f"/sessions/{session.pk}/tools/session_search", {"limit": 99, "query": "x"})
    assert bad.status_code == 200 and "limit must be" in bad.json()["result"]["error"]
    other = make_gateway("not-yours")
    assert (
        other.post(f"/sessions/{session.pk}/tools/session_search", {"query": "x"}).status_code
        == 404
    )
