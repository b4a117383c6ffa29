"""The API's OpenAPI schema and its behaviour agree: schemathesis generates requests from
``/api/v1/openapi.json`` (valid ones and ones that break it) and runs every built-in check on
each answer -- statuses, content types, response bodies against the schema, valid data
accepted, invalid data refused, no server errors.

The few rules OpenAPI cannot state are in the schema's descriptions and docs/api.md; valid
cases that break one of them are filtered out here (each named below), so every other
refusal of schema-valid data still fails this test.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.core.parameters import ParameterLocation

from compression.testing.fake_model import FakeModelServer, Reply
from core.bodies import NO_NUL
from hermes_site.wsgi import application
from search.query import MAX_TERMS, NOT_BLANK, parse_terms
from sessions_app import services
from sessions_app.keys import create_channel

load_all_checks()
ALL_CHECKS = CHECKS.get_all()

# Loading the schema reads no database: the module loads it once, at collection.
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)


def _moment(value) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def breaks_a_documented_rule(case) -> bool:
    """The rules a schema cannot state (docs/api.md, "Rules the schema cannot state")."""
    # (An automatic compression without focus, around_position or confirm: the schema states it.)
    query = case.query or {}
    if case.path.endswith("/search") and isinstance(case.body, dict):
        query = case.body  # POST /search: the same parameters in a body
    since, until = _moment(query.get("since")), _moment(query.get("until"))
    for moment in (since, until):
        try:
            if moment:
                moment.astimezone(UTC)
        except OverflowError:
            return True  # within the years 1-9999 once converted to UTC
    if since and until and since >= until:
        return True  # since must be earlier than until
    if isinstance(query.get("q"), str) and len(parse_terms(query["q"])) > MAX_TERMS:
        return True  # at most 32 terms
    # (No NUL in any body string or key: the schema states it, core.bodies.)
    body = case.body if isinstance(case.body, dict) else {}
    for message in body.get("messages", []):
        ids = [call.get("id") for call in (message.get("tool_calls") or [])]
        if len(ids) != len(set(ids)):
            return True  # tool call ids are unique within a message
    return False


@schema.hook
def filter_case(context, case) -> bool:
    mode = case.meta.generation.mode if case.meta is not None else None
    return not (mode is not None and mode.is_positive and breaks_a_documented_rule(case))


@pytest.fixture
def chat_model():
    with FakeModelServer() as server:
        server.script.default = Reply("## Goal\n" + "Checked and fine. " * 10)
        yield server


@pytest.fixture
def gateway_key(db, hermes_config, chat_model):
    hermes_config(
        model={"default": "gpt-4o", "base_url": chat_model.base_url},
        auxiliary={"compression": {"model": "s", "base_url": chat_model.base_url}},
        compression={"context_timeout_seconds": 5, "context_total_ceiling_seconds": 10},
    )
    channel, issued = create_channel("schemathesis")
    session = services.open_session(channel, model="gpt-4o", system_prompt="sys").session
    services.append_messages(
        session, [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    )
    # Requests go through the WSGI handler, whose end-of-request signal would close the test's
    # database connection (and its transaction); Django's own test client unhooks it the same way.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield issued.plaintext, str(session.pk)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    # HERMES_SCHEMA_EXAMPLES=300 makes the long run docs/api.md reports (about 10,000 requests).
    max_examples=int(os.environ.get("HERMES_SCHEMA_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
@pytest.mark.slow
def test_every_answer_matches_the_schema_with_every_check_on(case, gateway_key):
    key, session_id = gateway_key
    meta = case.meta

    def negative(location: ParameterLocation) -> bool:
        return meta is not None and meta.is_negative_at(location)

    # A real session, so routes go deep -- unless the path itself is what this case breaks.
    if "session_id" in (case.path_parameters or {}) and not negative(ParameterLocation.PATH):
        case.path_parameters["session_id"] = session_id
    # The channel key, unless the headers (a missing or broken key) are what it breaks.
    headers = None if negative(ParameterLocation.HEADER) else {"Authorization": f"Bearer {key}"}
    case.call_and_validate(headers=headers, checks=ALL_CHECKS)


def test_the_schema_states_the_rules_it_can(client):
    spec = json.loads(client.get("/api/v1/openapi.json").content)
    q = next(p for p in spec["paths"]["/api/v1/search"]["get"]["parameters"] if p["name"] == "q")
    assert q["schema"]["minLength"] == 1 and q["schema"]["pattern"] == NOT_BLANK
    tool = spec["components"]["schemas"]["ToolMessageIn"]
    assert "tool_call_id" in tool["required"]
    # No NUL anywhere in a body: every string, every key, every free-form value.
    user = spec["components"]["schemas"]["UserMessageIn"]
    assert user["properties"]["content"]["oneOf"][0]["pattern"] == NO_NUL
    assert user["propertyNames"] == {"pattern": NO_NUL}
    assert user["additionalProperties"] == {"$ref": "#/components/schemas/StorableJSON"}
    free = spec["components"]["schemas"]["StorableJSON"]["anyOf"]
    assert {"type": "string", "pattern": NO_NUL} in free
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            statuses = set(operation["responses"])
            assert {"401", "422", "503"} <= statuses, (method, path)
            if method == "post":
                assert {"400", "404", "409", "413", "415"} <= statuses, (method, path)


def test_json_booleans_and_integers_are_strict(gateway):
    sid = gateway.open()["id"]
    for path, body in [
        (f"/sessions/{sid}/reset", {"keep_system_prompt": 0}),
        (f"/sessions/{sid}/compress", {"wait": 0}),
        (f"/sessions/{sid}/compress", {"wait_seconds": False}),
        (f"/sessions/{sid}/rollback", {"count": "1"}),
        (f"/sessions/{sid}/rollback", {"count": True}),
    ]:
        response = gateway.post(path, body)
        assert response.status_code == 422, (path, body, response.content)
    # 1.0 is an integer in JSON Schema's sense, and accepted as one.
    gateway.post(f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "a"}]})
    assert gateway.post(f"/sessions/{sid}/rollback", {"count": 1.0}).status_code == 200


def test_every_timestamp_in_a_search_answer_carries_its_zone(gateway):
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(
        f"/sessions/{sid}/messages",
        {"messages": [{"role": "user", "content": "zebra crossing"}]},
    )
    body = gateway.get("/search", q="zebra").json()
    (hit,) = body["hits"]
    stamps = [hit["message"]["created_at"]]
    stamps += [row["created_at"] for row in hit["window"]]
    stamps += [hit["bookmarks"][end]["timestamp"] for end in ("start", "end")]
    for stamp in stamps:
        assert datetime.fromisoformat(stamp).tzinfo is not None, stamp


def test_unknown_or_repeated_query_parameters_are_refused(gateway):
    assert gateway.get("/sessions", limt=5).status_code == 422
    response = gateway.client.get(
        "/api/v1/sessions?limit=1&limit=2", HTTP_AUTHORIZATION=f"Bearer {gateway.key}"
    )
    assert response.status_code == 422 and "more than once" in response.json()["detail"]


@pytest.mark.parametrize(
    "path, body, where",
    [
        ("messages", {"messages": [{"role": "user", "content": "a\x00b"}]}, "messages.0.content"),
        ("messages", {"messages": [{"role": "user", "content": "a", "x": {"k\x00": 1}}]}, "x.k"),
        ("search", {"q": "a\x00b"}, "q"),
        ("sessions", {"title": "t\x00"}, "title"),
    ],
)
def test_a_nul_anywhere_in_a_body_is_refused_with_its_place(gateway, path, body, where):
    if path == "messages":
        path = f"sessions/{gateway.open()['id']}/messages"
    answer = gateway.post(f"/{path}", body)
    assert answer.status_code == 422
    assert where in answer.json()["errors"][0]["loc"]
    assert "NUL" in answer.json()["detail"]
