"""Recall through the API: planted facts survive archiving and summarising; rolled-back ones leave
the index; every query is safe; excerpts never become markup."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from search import fts, pg
from search.service import Filters, search
from sessions_app import services
from sessions_app.models import Message, Session

FACTS = [
    "We deploy with kubernetes on Fridays.",  # 0 English word
    "Le café est fermé le lundi.",  # 1 diacritics
    "缓存失效了",  # 2 Chinese: 缓存 / 失效
    "数据库迁移失败，请检查日志",  # noqa: RUF001 - 3 Chinese, with its own comma
    "帮我用Django写代码吧",  # 4 Latin glued to CJK
    "Call get_user_by_email_address() before saving.",  # 5 code identifier
    "Edit /etc/nginx/sites-enabled/hermes.conf and reload.",  # 6 path
    "Escalate to ops-team@example.com if it fails.",  # 7 e-mail
    "The feature-flag-rollout starts at 100% on Monday.",  # 8 hyphens and %
    'He typed NOT "AND" (x OR y) into the box.',  # 9 FTS5 syntax as text
    "本番環境にデプロイしました",  # 10 Japanese
    "배포가 완료되었습니다",  # 11 Korean
    "Go is the language of the sidecar.",  # 12 two-letter word
]


def _summary(session: Session, text: str, covers: list[Message]) -> Message:
    row = services.append_messages(session, [{"role": "assistant", "content": text}]).messages[0]
    Message.objects.filter(pk=row.pk).update(
        is_summary=True,
        covers_from_position=covers[0].position,
        covers_to_position=covers[-1].position,
    )
    # The archive step of a compression: one bulk UPDATE over the replaced originals.
    Message.objects.filter(pk__in=[m.pk for m in covers]).update(
        active=False, compressed=True, archive_reason="compression", summarized_by=row
    )
    return row


@pytest.fixture
def planted(gateway):
    """A session whose facts are archived under a summary, plus a rolled-back fact."""
    sid = gateway.open(system_prompt="You are helpful.", title="planted")["id"]
    session = Session.objects.get(pk=sid)
    messages = []
    for n, fact in enumerate(FACTS):
        messages.append({"role": "user", "content": fact})
        messages.append({"role": "assistant", "content": f"Noted, item {n}."})
    response = gateway.post(f"/sessions/{sid}/messages", {"messages": messages})
    assert response.status_code == 201
    originals = list(Message.objects.filter(session=session, position__gte=1).order_by("position"))
    _summary(session, "Summary: the team talked about zeppelin maintenance.", originals)
    tail = [
        {"role": "user", "content": "A rolled back note about zanzibar."},
        {"role": "assistant", "content": "Tail answer about the quokka."},
    ]
    gateway.post(f"/sessions/{sid}/messages", {"messages": tail})
    gateway.post(f"/sessions/{sid}/rollback", {"count": 2})
    gateway.post(
        f"/sessions/{sid}/messages",
        {"messages": [{"role": "user", "content": "Final live question about the quokka."}]},
    )
    return sid


def found(gateway, q: str, **params) -> dict:
    response = gateway.get("/search", q=q, **params)
    assert response.status_code == 200, response.content
    return response.json()


def contents(body: dict) -> list[str]:
    ids = [hit["message"]["id"] for hit in body["hits"]]
    by_id = Message.objects.in_bulk(ids)
    return [by_id[i].content for i in ids]


@pytest.mark.parametrize(
    ("query", "fact", "index"),
    [
        ("kubernetes", 0, "words"),
        ("KUBERNETES", 0, "words"),
        ("kube*", 0, "words"),
        ("cafe", 1, "words"),
        ("fermé", 1, "words"),
        ("缓", 2, "bigram"),
        ("缓存", 2, "bigram"),
        ("失效", 2, "bigram"),
        ("缓存失效", 2, "trigram"),
        ("迁移失败", 3, "trigram"),
        ("数据库迁移", 3, "trigram"),
        ("数据库迁移失败", 3, "trigram"),
        ("败", 3, "bigram"),
        ("Django", 4, "words"),
        ("写代码", 4, "trigram"),
        ("代码", 4, "bigram"),
        ("用Django写", 4, "trigram"),
        ("用Django写代码", 4, "trigram"),
        ("get_user_by_email_address", 5, "words"),
        ("user_by_ema", 5, "trigram"),
        ("/etc/nginx/sites-enabled/hermes.conf", 6, "words"),
        ("sites-enab", 6, "trigram"),
        ("ops-team@example.com", 7, "words"),
        ("feature-flag-rollout", 8, "words"),
        ("100%", 8, "words"),
        ('NOT "AND" (x OR y)', 9, "words"),
        ("本番環境", 10, "trigram"),
        ("배포", 11, "bigram"),
        ("Go", 12, "words"),
    ],
)
def test_a_planted_fact_is_found_after_archiving(gateway, planted, query, fact, index):
    body = found(gateway, query)
    assert FACTS[fact] in contents(body), body
    assert body["index"] == index
    kinds = {
        text: h["message"]["kind"] for text, h in zip(contents(body), body["hits"], strict=False)
    }
    assert kinds[FACTS[fact]] == "archived"


def test_a_word_in_a_summary_is_found_like_any_other(gateway, planted):
    body = found(gateway, "zeppelin")
    assert [h["message"]["kind"] for h in body["hits"]] == ["summary"]
    assert body["hits"][0]["message"]["is_summary"] is True


def test_rolled_back_rows_are_not_found_by_gateways(gateway, planted):
    assert found(gateway, "zanzibar")["hits"] == []
    # The live question is found, the rolled-back answer with the same word is not.
    kinds = [h["message"]["kind"] for h in found(gateway, "quokka")["hits"]]
    assert kinds == ["live"]


def test_operators_can_opt_in_to_rolled_back_rows(planted):
    result = search("zanzibar", Filters(include_rolled_back=True))
    assert [h.rolled_back for h in result.hits] == [True]
    assert result.hits[0].message.kind == "rolled_back"


def test_a_two_character_query_with_no_index_hit_ends_in_a_bounded_scan(gateway, planted):
    # "%" has no word characters: no index can take it, the scan still answers.
    body = found(gateway, "%")
    assert body["index"] == "scan"
    assert FACTS[8] in contents(body)
    assert body["tried"] == ["scan"]


def test_the_fallback_order_is_recorded(gateway, planted):
    body = found(gateway, "user_by_ema")
    assert body["tried"] == ["words", "trigram"]


def test_filters_narrow_the_hits(gateway, planted):
    sid = planted
    assert found(gateway, "quokka", kind="archived")["hits"] == []
    assert len(found(gateway, "kubernetes", role="user")["hits"]) == 1
    assert found(gateway, "kubernetes", role="assistant")["hits"] == []
    assert len(found(gateway, "kubernetes", session=sid)["hits"]) == 1
    other = gateway.open(title="other")["id"]
    assert found(gateway, "kubernetes", session=other)["hits"] == []
    assert found(gateway, "kubernetes", since="2999-01-01T00:00:00Z")["hits"] == []
    assert len(found(gateway, "kubernetes", until="2999-01-01T00:00:00Z")["hits"]) == 1


def test_another_channels_key_finds_nothing(make_gateway, planted, gateway):
    stranger = make_gateway("stranger")
    assert stranger.get("/search", q="kubernetes").json()["hits"] == []
    assert stranger.get("/search", q="kubernetes", session=planted).json()["hits"] == []


def test_a_hit_has_an_excerpt_a_window_and_bookmarks(gateway, planted):
    body = found(gateway, "kubernetes", window=2)
    (hit,) = body["hits"]
    assert "<mark>kubernetes</mark>" in hit["excerpt_html"]
    positions = [row["position"] for row in hit["window"]]
    hit_position = hit["message"]["position"]
    assert positions == [hit_position - 1, hit_position, hit_position + 1, hit_position + 2]
    assert [row["is_hit"] for row in hit["window"]] == [False, True, False, False]
    assert {row["kind"] for row in hit["window"]} == {"live", "archived"}
    start, end = hit["bookmarks"]["start"], hit["bookmarks"]["end"]
    assert (start["position"], end["position"]) == (positions[0], positions[-1])
    session = Session.objects.get(pk=planted)
    assert start["of"] == session.total_messages
    assert start["role"] == "system" and start["lead"] == "You are helpful."


def test_summaries_and_originals_are_scored_alike(gateway):
    sid = gateway.open()["id"]
    session = Session.objects.get(pk=sid)
    gateway.post(
        f"/sessions/{sid}/messages",
        {"messages": [{"role": "user", "content": "identical words about walrus"}]},
    )
    original = Message.objects.get(session=session, content__contains="walrus")
    _summary(session, "identical words about walrus", [original])
    scores = {h["message"]["kind"]: h["score"] for h in found(gateway, "walrus")["hits"]}
    assert scores.keys() == {"summary", "archived"}
    assert scores["summary"] == pytest.approx(scores["archived"])


# --- Index maintenance ----------------------------------------------------------------------


def _assert_every_index_holds_every_indexed_row() -> None:
    """SQLite's FTS5 tables are separate from the messages and are counted; PostgreSQL's are
    expression indexes it maintains with the table itself, which have no row count to compare, so
    there the tests rely on what search finds."""
    if connection.vendor != "sqlite":
        with connection.cursor() as cursor:
            assert pg.invalid_indexes(cursor) == []
        return
    with connection.cursor() as cursor:
        assert fts.count_mismatches(cursor) == {}
        fts.integrity_check(cursor)


def test_bulk_archiving_thousands_of_rows_keeps_every_row_findable(gateway):
    sid = gateway.open()["id"]
    session = Session.objects.get(pk=sid)
    batch = [{"role": "user", "content": f"needle-{n} 内容{n}"} for n in range(1000)]
    for _ in range(3):
        services.append_messages(session, batch)
    Message.objects.filter(session=session).update(active=False, compressed=True)
    assert Message.objects.filter(session=session, compressed=True).count() == 3000
    _assert_every_index_holds_every_indexed_row()
    assert len(found(gateway, "needle-999", limit=100)["hits"]) == 3


def test_rolling_back_removes_rows_from_every_index(gateway, planted):
    _assert_every_index_holds_every_indexed_row()
    rolled_back = Message.objects.filter(active=False, compressed=False)
    assert rolled_back.count() == 2
    for row in rolled_back:
        for query in (row.content, row.content[1:-1], row.content.split()[0]):
            ids = {h["message"]["id"] for h in found(gateway, query, limit=100)["hits"]}
            assert row.pk not in ids, (query, found(gateway, query)["index"])


def test_editing_a_rows_text_reindexes_it(gateway, planted):
    row = Message.objects.get(content=FACTS[0])
    Message.objects.filter(pk=row.pk).update(content="We deploy with nomad now.")
    assert found(gateway, "kubernetes")["hits"] == []
    assert found(gateway, "nomad")["hits"][0]["message"]["id"] == row.pk
    _assert_every_index_holds_every_indexed_row()


def test_tool_call_arguments_are_searchable(gateway):
    sid = gateway.open()["id"]
    gateway.post(
        f"/sessions/{sid}/messages",
        {
            "messages": [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {
                                "name": "read_file",
                                "arguments": '{"path": "/srv/app/settings_prod.py"}',
                            },
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "DEBUG = False"},
            ]
        },
    )
    body = found(gateway, "settings_prod.py")
    assert [h["message"]["role"] for h in body["hits"]] == ["assistant"]
    assert "<mark>settings_prod.py</mark>" in body["hits"][0]["excerpt_html"]
    # The bounded scan reads the same text as the indexes on both backends: a call's name and
    # arguments, not the JSON around them ("id" is a key of every tool call).
    scanned = found(gateway, "id")
    assert scanned["index"] is None and scanned["hits"] == []
    assert [h["message"]["role"] for h in found(gateway, "_p")["hits"]] == ["assistant"]


# --- Bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"q": ""}, "empty"),
        ({"q": "   "}, "empty"),
        ({"q": "\t\n"}, "empty"),
        ({"q": "x" * 10_000}, "limit is 1,000"),
        ({"q": "a", "kind": "rolled_back"}, "kind"),
        ({"q": "a", "session": "not-a-uuid"}, "session"),
        ({"q": "a", "role": "wizard"}, "role"),
        ({"q": "a", "limit": 0}, "limit"),
        ({"q": "a", "since": "yesterday"}, "since"),
        ({"q": "a", "since": "2030-01-01T00:00:00Z", "until": "2020-01-01T00:00:00Z"}, "since"),
        ({"q": "a", "since": "0001-01-01T00:00:00+01:00"}, "years 1-9999"),
        ({"q": "a", "until": "9999-12-31T23:59:00-01:00"}, "years 1-9999"),
        ({}, "q"),
    ],
)
def test_bad_search_input_is_a_clear_422(gateway, params, fragment):
    response = gateway.client.get(
        "/api/v1/search", params, HTTP_AUTHORIZATION=f"Bearer {gateway.key}"
    )
    assert response.status_code == 422, response.content
    assert fragment in response.json()["detail"]


def test_a_since_not_before_until_is_located_at_until_by_get_and_by_post(gateway):
    params = {"q": "a", "since": "2030-01-01T00:00:00Z", "until": "2020-01-01T00:00:00Z"}
    by_get = gateway.client.get(
        "/api/v1/search", params, HTTP_AUTHORIZATION=f"Bearer {gateway.key}"
    )
    by_post = gateway.post("/search", params)
    for response in (by_get, by_post):
        assert response.status_code == 422, response.content
        assert [e["loc"] for e in response.json()["errors"]] == ["until"]
        assert "'since' must be earlier than 'until'" in response.json()["detail"]
    equal = {**params, "until": params["since"]}
    assert gateway.post("/search", equal).json()["errors"][0]["loc"] == "until"


def test_bad_search_input_by_post_is_the_same_422(gateway):
    params = {"q": "a", "since": "2030-01-01T00:00:00Z", "until": "2020-01-01T00:00:00Z"}
    for body, fragment in [
        (params, "since"),
        ({"q": "x" * 1_001}, "limit is 1,000"),
        ({"q": "a", "limit": 0}, "limit"),
        ({"q": "a", "color": "red"}, "color"),
        ({"q": "a", "since": 0}, "ISO 8601"),
        ({"q": "a", "limit": "5"}, "limit"),
        ({"q": "a", "window": True}, "window"),
        ({"q": 5}, "q"),
        ({}, "q"),
    ]:
        response = gateway.post("/search", body)
        assert response.status_code == 422, (body, response.content)
        assert fragment in response.json()["detail"]


@pytest.mark.parametrize(
    "params",
    [
        {"q": "quokka"},
        {"q": "缓存失效", "window": 1},
        {"q": "quokka", "role": "user", "limit": 1, "offset": 0},
        {"q": "kubernetes", "kind": "archived"},
    ],
)
def test_post_search_answers_as_get_search_does(gateway, planted, params):
    by_get = found(gateway, **params)
    response = gateway.post("/search", params)
    assert response.status_code == 200, response.content
    by_post = response.json()
    for answer in (by_get, by_post):
        answer.pop("request_id", None)
    assert by_post == by_get
    assert by_get["hits"] or params["q"] == "kubernetes"


def test_post_search_takes_nulls_for_filters_it_does_not_use(gateway, planted):
    body = {"q": "quokka", "session": None, "role": None, "since": None, "before": None}
    response = gateway.post("/search", body)
    assert response.status_code == 200, response.content
    assert response.json()["hits"] == found(gateway, "quokka")["hits"]


def test_a_thousand_cjk_characters_are_searched_by_post(gateway, planted):
    """Percent-encoded, 1,000 CJK characters are 9,000 bytes: over the longest request line a
    web server takes (gunicorn's 8,190), so a long query goes in a body."""
    q = ("缓存失效" * 250)[:1_000]
    response = gateway.post("/search", {"q": q})
    assert response.status_code == 200, response.content
    assert response.json()["query"] == q


@pytest.mark.parametrize(
    "q",
    [
        '"unbalanced',
        'a"b"c"',
        "!!!",
        "***",
        "*",
        "-",
        ":",
        "^",
        "()",
        "NEAR(a b)",
        "a AND",
        "OR",
        "x\x00y\x07z",
        '""',
        "'",
        "\\",
        "%_%",
        "a:b c^d",
        "😀",
        "NOT",
    ],
)
def test_odd_queries_answer_200(gateway, planted, q):
    response = gateway.get("/search", q=q)
    assert response.status_code == 200, (q, response.content)


# --- XSS ---------------------------------------------------------------------------------------

HOSTILE = [
    "<script>alert('xss-probe')</script>",
    '<img src=x onerror="alert(1)"> xss-probe',
    '<a href="javascript:alert(1)">xss-probe</a>',
    "a literal <mark>xss-probe</mark> tag",
]


def only_mark_tags(html: str) -> bool:
    return all(tag in ("<mark>", "</mark>") for tag in re.findall(r"<[^>]*>", html))


def test_hostile_content_is_inert_in_api_excerpts(gateway):
    sid = gateway.open()["id"]
    gateway.post(
        f"/sessions/{sid}/messages",
        {"messages": [{"role": "user", "content": text} for text in HOSTILE]},
    )
    body = found(gateway, "xss-probe")
    assert len(body["hits"]) == len(HOSTILE)
    for hit in body["hits"]:
        assert only_mark_tags(hit["excerpt_html"]), hit["excerpt_html"]
        assert "<mark>xss-probe</mark>" in hit["excerpt_html"]
    joined = " ".join(h["excerpt_html"] for h in body["hits"])
    assert "&lt;script&gt;" in joined and "&lt;mark&gt;" in joined


def test_hostile_content_is_inert_on_the_search_page(gateway, admin_client):
    sid = gateway.open()["id"]
    gateway.post(
        f"/sessions/{sid}/messages",
        {"messages": [{"role": "user", "content": text} for text in HOSTILE]},
    )
    page = admin_client.get("/console/search/", {"q": "xss-probe"}).content.decode()
    assert "<script>alert" not in page
    assert "<img src=x" not in page
    assert 'href="javascript:' not in page
    assert "&lt;script&gt;alert(&#x27;xss-probe&#x27;)&lt;/script&gt;" in page
    assert "a literal &lt;mark&gt;<mark>xss-probe</mark>&lt;/mark&gt; tag" in page


def test_the_search_page_needs_staff_and_shows_errors(client, admin_client, db):
    assert client.get("/console/search/", {"q": "x"}).status_code == 302
    response = admin_client.get("/console/search/", {"q": "x", "kind": "bogus"})
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    response = admin_client.get("/console/search/", {"q": "x", "since": "0001-01-01 00:00+01:00"})
    assert response.status_code == 400
    assert "years 1-9999" in response.content.decode()
    backwards = {"q": "x", "since": "2030-01-01 00:00", "until": "2020-01-01 00:00"}
    response = admin_client.get("/console/search/", backwards)
    assert response.status_code == 400
    assert response.context["form"].errors == {"until": ["'since' must be earlier than 'until'."]}
    assert admin_client.get("/console/search/").status_code == 200


def test_ranking_is_bounded_to_the_newest_matches_and_says_so(gateway):
    sid = gateway.open()["id"]
    session = Session.objects.get(pk=sid)
    services.append_messages(
        session, [{"role": "user", "content": f"common word plus marker{n}"} for n in range(30)]
    )
    full = search("common", Filters(rank_window=100), limit=50)
    assert len(full.hits) == 30 and full.ranked_within is None
    capped = search("common", Filters(rank_window=10), limit=50)
    assert capped.ranked_within == 10
    newest = sorted(Message.objects.filter(session=session).values_list("pk", flat=True))[-10:]
    assert sorted(h.message.pk for h in capped.hits) == newest
    assert found(gateway, "common")["ranked_within"] is None


def test_a_cjk_term_found_only_token_by_token_falls_back_to_the_bigram_index(gateway):
    sid = gateway.open()["id"]
    gateway.post(
        f"/sessions/{sid}/messages",
        {"messages": [{"role": "user", "content": "帮我用 Django 写个脚本"}]},
    )
    body = found(gateway, "用Django写", session=sid)
    assert body["tried"] == ["trigram", "bigram"]
    assert body["index"] == "bigram"
    assert contents(body) == ["帮我用 Django 写个脚本"]


def test_a_window_reaches_past_a_block_of_rolled_back_rows(gateway):
    sid = gateway.open()["id"]
    session = Session.objects.get(pk=sid)
    services.append_messages(
        session,
        [
            {"role": "user", "content": "before the needle"},
            {"role": "user", "content": "the walrus-needle row"},
        ],
    )
    services.append_messages(
        session, [{"role": "user", "content": f"undone {n}"} for n in range(8)]
    )
    services.rollback_messages(session, 8)
    services.append_messages(session, [{"role": "user", "content": f"after {n}"} for n in range(3)])
    (hit,) = found(gateway, "walrus-needle", window=2)["hits"]
    leads = [row["lead"] for row in hit["window"]]
    assert leads == ["before the needle", "the walrus-needle row", "after 0", "after 1"]


def test_a_time_bound_with_an_offset_postgresql_cannot_read_is_compared_in_utc(gateway):
    # ISO 8601 allows offsets up to ±23:59; PostgreSQL refuses beyond ±15:59.
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "Øx"}]})
    response = gateway.get(
        "/search", q="Øx", since="2000-01-01T00:00:00-18:28", until="2704-06-26T09:23:42+20:30"
    )
    assert response.status_code == 200, response.content
    assert [h["message"]["role"] for h in response.json()["hits"]] == ["user"]


def test_a_time_bound_without_a_zone_is_utc_beside_one_with_a_zone(gateway):
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "yak"}]})
    response = gateway.get(
        "/search", q="yak", since="2000-01-01T00:00:00", until="2999-01-02T00:00:00Z"
    )
    assert response.status_code == 200, response.content
    assert len(response.json()["hits"]) == 1
    response = gateway.get(
        "/search", q="yak", since="2999-01-01T00:00:00", until="2999-01-01T00:00:00Z"
    )
    assert response.status_code == 422  # the same instant: since is not before until


def test_a_phrase_is_marked_whole_not_its_pieces_elsewhere():
    from search.query import parse
    from search.results import excerpt_html

    text = "我们的用户用Django写了一个服务"
    assert excerpt_html(text, parse("用Django写").needles) == (
        "我们的用户<mark>用Django写</mark>了一个服务"
    )
    # Where the phrase is not in the text, its pieces still show why the row matched.
    apart = excerpt_html("用 Python 还是 Django 写", parse("用Django写").needles)
    assert "<mark>Django</mark>" in apart and "<mark>用</mark>" in apart
    # Separate words are each marked.
    assert excerpt_html("kubectl then apply", parse("kubectl apply").needles) == (
        "<mark>kubectl</mark> then <mark>apply</mark>"
    )


def test_an_answer_says_how_many_messages_matched(db):
    from sessions_app import services
    from sessions_app.keys import create_channel

    channel = create_channel("totals")[0]
    session = services.open_session(channel, model="gpt-4o").session
    services.append_messages(
        session,
        [{"role": "user", "content": f"zebra number {i} and ab{i}"} for i in range(30)],
        run_hooks=False,
    )
    answer = search("zebra", limit=5)
    assert (answer.total, answer.total_exact, len(answer.hits)) == (30, True, 5)
    assert search("zebra", limit=5, offset=40).total == 30  # a page past the end still counts
    capped = search("zebra", Filters(rank_window=10), limit=5)
    assert (capped.total, capped.total_exact) == (10, False)  # "at least 10"
    # The scan counts to one past the page.
    scan = search("b1", limit=3)
    assert scan.index == "scan"
    assert (scan.total, scan.total_exact) == (4, False)
    everything = search("b1", limit=50)
    assert (everything.total, everything.total_exact) == (11, True)


def _many(count: int, planted: dict[int, str]) -> list[int]:
    from sessions_app import services
    from sessions_app.keys import create_channel

    channel = create_channel(f"scan-{count}")[0]
    session = services.open_session(channel, model="gpt-4o").session
    rows = [{"role": "user", "content": planted.get(i, f"filler {i}")} for i in range(count)]
    services.append_messages(session, rows, run_hooks=False)
    return list(
        Message.objects.filter(session=session).order_by("position").values_list("pk", flat=True)
    )


def test_the_scan_goes_on_to_older_chunks_and_finds_the_oldest_row(db):
    ids = _many(3_000, {5: "an old xzqy fragment"})
    # Chunks of 1,000 rows with time to spare: one answer reads them all.
    answer = search("zq", Filters(scan_rows=1_000, scan_seconds=30))
    assert answer.index == "scan"
    assert [h.message.pk for h in answer.hits] == [ids[5]]
    assert (answer.scan_reached, answer.next_before, answer.has_more) == (None, None, False)
    assert (answer.total, answer.total_exact) == (1, True)


def test_a_scan_out_of_time_says_how_far_it_read_and_continues_below(db):
    ids = _many(3_000, {5: "an old xzqy fragment"})
    first = search("zq", Filters(scan_rows=1_000, scan_seconds=0))
    assert first.hits == [] and first.index == "scan"
    assert first.scan_reached == first.next_before == ids[-1] + 1 - 1_000
    assert first.has_more and not first.total_exact
    cursor, seen = first.next_before, []
    while cursor is not None:
        page = search("zq", Filters(scan_rows=1_000, scan_seconds=0, before_id=cursor))
        seen += [h.message.pk for h in page.hits]
        cursor = page.next_before
    assert seen == [ids[5]]


def test_the_api_continues_a_scan_with_before(gateway):
    sid = gateway.open()["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": [{"role": "user", "content": "xzqy a"}]})
    body = gateway.get("/search", q="zq").json()
    assert body["index"] == "scan" and body["next_before"] is None
    assert body["scan_reached"] is None and len(body["hits"]) == 1
    older = gateway.get("/search", q="zq", before=body["hits"][0]["message"]["id"]).json()
    assert older["hits"] == []
    assert gateway.get("/search", q="zq", before=0).status_code == 422


def test_the_search_page_offers_to_search_older_messages(admin_client, hermes_config):
    hermes_config(search={"scan_rows": 1_000, "scan_seconds": 0})
    ids = _many(2_500, {3: "an old xzqy fragment"})
    page = admin_client.get("/console/search/", {"q": "zq"}).content.decode()
    assert "The scan stopped at message" in page and "search older messages" in page
    cursor = ids[-1] + 1 - 1_000
    assert f"before={cursor}" in page
    older = admin_client.get("/console/search/", {"q": "zq", "before": ids[10]}).content.decode()
    assert "xzqy" in older and "search older messages" not in older


@pytest.mark.django_db
def test_the_search_triggers_survive_every_migration_of_the_messages_table():
    """A migration that makes SQLite rebuild the messages table (Django does for a NOT NULL
    column) silently drops its triggers, and new messages stop being searchable."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: PostgreSQL's indexes are not triggers")
    with connection.cursor() as cursor:
        assert fts.triggers_present(cursor)


@pytest.mark.django_db(transaction=True)
def test_a_migrate_puts_back_search_triggers_a_table_rebuild_dropped():
    """The safety net for the next migration that makes SQLite rebuild the messages table:
    post_migrate (sent for sessions_app: search has no models module) recreates the triggers
    and refills the indexes, so messages stay findable."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: PostgreSQL's indexes are not triggers")
    from django.core.management import call_command

    from sessions_app.keys import create_channel

    session = services.open_session(create_channel("rebuilt")[0], model="gpt-4o").session
    services.append_messages(session, [{"role": "user", "content": "quokka sighting"}])
    with connection.cursor() as cursor:
        for trigger in fts.TRIGGERS:
            cursor.execute(f"DROP TRIGGER {trigger}")
        assert not fts.triggers_present(cursor)
    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        assert fts.triggers_present(cursor)
    services.append_messages(session, [{"role": "user", "content": "wombat sighting"}])
    found = {h.message.content for h in search("sighting", Filters()).hits}
    assert found == {"quokka sighting", "wombat sighting"}


@pytest.mark.django_db(transaction=True)
def test_a_migrate_puts_back_the_channel_index_a_table_rebuild_dropped():
    """A gateway's search reads its channel from that index by name: without it every search
    would fail."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: the index is SQLite's")
    from django.core.management import call_command

    from sessions_app.keys import create_channel

    channel = create_channel("rebuilt-channel")[0]
    session = services.open_session(channel, model="gpt-4o").session
    services.append_messages(session, [{"role": "user", "content": "quokka sighting"}])
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {fts.CHANNEL_INDEX}")
    call_command("migrate", verbosity=0)
    found = search("sighting", Filters(channel_id=channel.pk)).hits
    assert [h.message.content for h in found] == ["quokka sighting"]
    with connection.cursor() as cursor:
        assert fts.ensure_channel_index(cursor) is False  # present: nothing to do


def test_a_pages_hits_are_read_with_their_sessions_and_channels_in_one_statement(planted):
    from django.test.utils import CaptureQueriesContext

    from search.rows import MESSAGE_COLUMNS, read_hits

    ids = list(Message.objects.filter(session_id=planted).values_list("pk", flat=True)[:5])
    with CaptureQueriesContext(connection) as queries:
        read = read_hits([*ids, 10**9])  # an id that no longer exists is left out
        names = {m.session.channel.name for m in read.values()}
    assert len(queries) == 1 and names == {"telegram"} and sorted(read) == sorted(ids)
    for pk, message in read.items():
        orm = Message.objects.select_related("session__channel").get(pk=pk)
        assert [getattr(message, c) for c in MESSAGE_COLUMNS] == [
            getattr(orm, c) for c in MESSAGE_COLUMNS
        ]
        assert (message.kind, message.session.pk, message.session.total_messages) == (
            orm.kind,
            orm.session.pk,
            orm.session.total_messages,
        )
        # A column the page does not read still loads on access, as a deferred field does.
        assert message.token_count == orm.token_count


@pytest.mark.parametrize(
    "content",
    [
        "word " * 2000,  # long: the lead is cut from a flattened prefix
        " " * 5000 + "late start " * 100,  # the prefix is all spaces: the whole is flattened
        "\n".join(["x"] * 299),  # exactly as long as a lead once flattened
        "short  and\tspaced",
    ],
)
def test_a_lead_is_the_same_as_one_cut_from_the_whole_flattened_text(content):
    from search.results import BOOKMARK_LEAD_CHARS, LEAD_CHARS, Nearby, WindowRow, _lead, bookmarks

    row = Nearby((1, 0, "user", content, None, True, False, False, "2026-12-01 10:00:00"))
    flat = " ".join(content.split())
    for limit in (LEAD_CHARS, BOOKMARK_LEAD_CHARS):
        assert _lead(row, limit) == (flat if len(flat) <= limit else flat[: limit - 1] + "…")
    lead = _lead(row, LEAD_CHARS)
    window = [WindowRow(1, 0, "user", "live", lead, row.created_at, True)]
    assert bookmarks(window, 1).start.lead == _lead(row, BOOKMARK_LEAD_CHARS)


@pytest.mark.parametrize("window", [2, 0])
def test_a_page_of_hits_costs_the_same_statements_whatever_its_size(planted, window):
    from django.test.utils import CaptureQueriesContext

    from search.query import parse
    from search.service import _hits

    ids = list(Message.objects.filter(session_id=planted).values_list("pk", flat=True))
    assert len(ids) > 20
    for page in (ids[:1], ids[:20]):
        with CaptureQueriesContext(connection) as queries:
            hits = _hits([(pk, None, False) for pk in page], parse("x"), window, False, ids[-2:])
        # The page with its edge rows, sessions and channels; then every window at once (on
        # PostgreSQL in the same round trip).
        statements = 1 if not window or connection.vendor == "postgresql" else 2
        assert len(queries) == statements and len(hits) == len(page)


@pytest.mark.parametrize("include_rolled_back", [False, True])
@pytest.mark.parametrize("size", [1, 2, 5])
def test_windows_read_with_the_hits_are_the_windows_read_apart(planted, size, include_rolled_back):
    from search.results import window_slack, windows
    from search.rows import read_page

    ids = list(Message.objects.filter(session_id=planted).values_list("pk", flat=True))
    page = ids[::3]  # the first, the summary, archived and live rows, one rolled back
    read, nearby = read_page([*page, ids[-1]], page, window_slack(size))
    assert set(nearby) == set(page)  # each hit's own range (the hit among it); not the edge's
    hits = [read[pk] for pk in page]
    together = windows(hits, size, include_rolled_back, nearby)
    apart = windows(hits, size, include_rolled_back)
    assert {pk: [m.id for m in rows] for pk, rows in together.items()} == {
        pk: [m.id for m in rows] for pk, rows in apart.items()
    }
    shown = [
        (m.id, m.position, m.role, m.kind, m.created_at) for rows in together.values() for m in rows
    ]
    assert shown == [
        (m.id, m.position, m.role, m.kind, m.created_at) for rows in apart.values() for m in rows
    ]


def test_a_window_reaches_past_long_blocks_of_rolled_back_rows_in_a_few_statements(gateway):
    from django.test.utils import CaptureQueriesContext

    from search.results import windows

    session = Session.objects.get(pk=gateway.open()["id"])

    def undone(n: int) -> None:
        services.append_messages(
            session, [{"role": "user", "content": f"undone {i}"} for i in range(n)]
        )
        services.rollback_messages(session, n)

    services.append_messages(
        session, [{"role": "user", "content": f"before {n}"} for n in range(3)]
    )
    undone(300)
    hit = services.append_messages(session, [{"role": "user", "content": "the hit"}]).messages[0]
    undone(300)
    services.append_messages(session, [{"role": "user", "content": f"after {n}"} for n in range(3)])
    with CaptureQueriesContext(connection) as queries:
        around = windows([hit], 2, include_rolled_back=False)
    assert [m.content for m in around[hit.pk]] == [
        "before 1",
        "before 2",
        "the hit",
        "after 0",
        "after 1",
    ]
    # Ranges of 3, 12, 48, 192 and 768 positions either side: one statement each, none reading
    # the session whole.
    assert len(queries) == 5 and all("m.position BETWEEN" in q["sql"] for q in queries)
    # The same when the first range is read with the hit (search.rows.read_page).
    from search.rows import read_page

    with CaptureQueriesContext(connection) as queries:
        read, nearby = read_page([hit.pk], [hit.pk], 3)
        again = windows([read[hit.pk]], 2, include_rolled_back=False, first_read=nearby)
    assert [m.content for m in again[hit.pk]] == [m.content for m in around[hit.pk]]
    assert len(queries) == (5 if connection.vendor == "postgresql" else 6)
    with CaptureQueriesContext(connection) as queries:
        around = windows([hit], 2, include_rolled_back=True)
    assert [m.content for m in around[hit.pk]] == [
        "undone 298",
        "undone 299",
        "the hit",
        "undone 0",
        "undone 1",
    ]
    assert len(queries) == 1


def test_a_searchs_query_string_is_validated_once_per_request(gateway, monkeypatch):
    # A Schema that forbids extra fields (django-ninja's) validates its input twice, the second
    # time through DjangoGetter: each field validator then ran twice on every request.
    from search import api

    seen: list[object] = []
    real = api.storable_time

    def counted(value):
        seen.append(value)
        return real(value)

    monkeypatch.setattr(api, "storable_time", counted)
    found(gateway, "yak", since="2000-01-01T00:00:00Z")
    assert len(seen) == 1, seen  # since, once (until is not given)
