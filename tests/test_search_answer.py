"""The search answer is built in JSON's own types (search.api.serialize) and written as it is,
not validated against ``SearchOut`` and encoded value by value on every request: these tests
hold the two ways to the same bytes, over hits of every kind a search returns."""

from __future__ import annotations

import json

import pytest

from hermes_site.api import ReadableJSON
from search.api import SearchOut, serialize
from search.service import Filters, search
from sessions_app.models import Message

from .test_search import planted  # noqa: F401 - the fixture


def _through_the_schema(data: dict) -> bytes:
    """What django-ninja answers for ``data`` with ``SearchOut`` as its response schema: validated,
    dumped and written by the API's renderer."""
    dumped = SearchOut.model_validate(data).model_dump()
    return ReadableJSON().render(None, dumped, response_status=200)


@pytest.mark.parametrize(
    ("q", "params", "index", "hits"),
    [
        ("kubernetes", {}, "words", 1),  # an archived original, its window across the summary
        ("zeppelin", {"window": 5}, "words", 1),  # the summary itself
        ("quokka", {"window": 0}, "words", 1),  # a live row (the other was rolled back), no window
        ("缓存", {}, "bigram", 1),
        ("user_by_ema", {}, "trigram", 1),
        ("% ", {}, "scan", 1),  # the bounded scan: a hit without a score
        ("Noted", {"limit": 3, "offset": 2}, "words", 3),  # a page past the first
        ("nothing-matches-this", {}, None, 0),
    ],
)
def test_a_search_answer_is_byte_for_byte_what_its_schema_would_write(
    hermes_config,
    gateway,
    planted,  # noqa: F811
    q,
    params,
    index,
    hits,
):
    # No query's best rows kept: on a busy machine a first lookup over search.ranked.SLOW_SECONDS
    # asks for them, and in the tests the refresh runs at once -- a write between the two
    # searches compared here, which should see the same rows. (The serialisation is what is
    # compared; ranking over kept rows is tests/test_ranked.py's.)
    hermes_config(search={"rank_queries": 0})
    response = gateway.get("/search", q=q, **params)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json; charset=utf-8"
    # Built again in process with the same arguments (nothing was written in between).
    session = Message.objects.filter(session_id=planted).first().session
    result = search(
        q,
        Filters(channel_id=session.channel_id),
        limit=params.get("limit", 20),
        offset=params.get("offset", 0),
        window=params.get("window", 2),
    )
    data = serialize(result, params.get("limit", 20), params.get("offset", 0))
    assert json.loads(response.content) == json.loads(_through_the_schema(data))
    assert response.content == _through_the_schema(data)
    assert (data["index"], len(data["hits"])) == (index, hits)
    if index == "scan":
        assert data["hits"][0]["score"] is None


def test_every_value_of_an_answer_is_already_of_its_json_type(gateway, planted):  # noqa: F811
    session = Message.objects.filter(session_id=planted).first().session
    result = search("Noted", Filters(channel_id=session.channel_id), window=3)
    assert result.hits
    data = serialize(result, 20, 0)
    # json.dumps without an encoder fails on anything that is not JSON's: a datetime, a UUID.
    assert json.loads(json.dumps(data)) == data


def _timings(response) -> dict[str, float]:
    """``Server-Timing: app;dur=1.234, search;dur=0.567`` as {name: ms}."""
    out = {}
    for metric in response["Server-Timing"].split(","):
        name, _, duration = metric.strip().partition(";dur=")
        out[name] = float(duration)
    return out


def test_a_search_answer_says_what_the_search_and_the_whole_request_cost_in_the_service(
    gateway,
    planted,  # noqa: F811
):
    response = gateway.get("/search", q="kubernetes")
    assert response.status_code == 200
    timings = _timings(response)
    assert set(timings) == {"search", "app"}
    assert 0 < timings["search"] <= timings["app"]
    refused = gateway.get("/search", q="")  # an error is timed too, without a search
    assert refused.status_code == 422 and set(_timings(refused)) == {"app"}
