"""The query router: never a syntax error, whatever the user types."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from search.query import InvalidQuery, parse, parse_terms
from search.service import search
from search.text import bigram_text, word_text
from sessions_app import services
from sessions_app.keys import create_channel

FTS_SPECIALS = [
    *list("\"*^:()-+%_.,/@\\'{}[]<>!?;=&|~`#$"),
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "NEAR(",
    " ",
    "\t",
    "\x00",
    "\x1f",
]
SCRIPTS = [*list("aZ09éß用写代码缓存数据本番環境배포ーｱ😀"), "Django", "file.py", "/etc/hosts"]
query_text = st.lists(st.sampled_from(FTS_SPECIALS + SCRIPTS), min_size=1, max_size=25).map(
    "".join
) | st.text(max_size=60)


def test_terms_quotes_prefixes_and_plain_text():
    assert [(t.text, t.phrase, t.prefix) for t in parse_terms('"exact phrase" foo* a-b')] == [
        ("exact phrase", True, False),
        ("foo", False, True),
        ("a-b", False, False),
    ]
    assert [t.text for t in parse_terms('"unbalanced quote')] == ["unbalanced", "quote"]
    assert [t.text for t in parse_terms("NOT AND OR")] == ["NOT", "AND", "OR"]


def test_every_term_reaches_fts5_as_a_quoted_string():
    routes = {r.index: r for r in parse('NOT "x" (a OR b) foo:bar ^c').routes}
    assert routes["words"].expression == (
        '"NOT" AND "x" AND "(a" AND "OR" AND "b)" AND "foo:bar" AND "^c"'
    )


def test_cjk_queries_become_bigram_phrases_that_match_the_index_text():
    assert bigram_text("用Django写代码") == " 用 Django 写代 代码 码 "
    assert word_text("用Django写代码") == " 用 Django 写代码 "
    routes = {r.index: r.expression for r in parse("用Django写").routes}
    assert routes["bigram"] == '"用" + "django" + "写"*'
    assert {r.index: r.expression for r in parse("代").routes}["bigram"] == '"代"*'
    assert {r.index: r.expression for r in parse("写代码").routes}["bigram"] == '"写代" + "代码"'


def test_routes_fall_back_in_order():
    assert [r.index for r in parse("kubernetes").routes] == ["words", "trigram", "scan"]
    assert [r.index for r in parse("缓存").routes] == ["bigram", "scan"]
    assert [r.index for r in parse("数据库").routes] == ["trigram", "bigram", "scan"]
    assert [r.index for r in parse("缓存 数据库").routes] == ["bigram", "trigram", "scan"]
    assert [r.index for r in parse("Go").routes] == ["words", "scan"]
    assert [r.index for r in parse("%").routes] == ["scan"]


@given(query_text)
@settings(max_examples=400, deadline=None)
def test_the_parser_never_raises_anything_but_invalid_query(text):
    try:
        parsed = parse(text)
    except InvalidQuery:
        assert not text.strip() or len(text) > 1000
        return
    # A query with no terms at all (only quote characters) has no route and finds nothing.
    assert bool(parsed.routes) == bool(parsed.terms)
    if parsed.routes:
        assert parsed.routes[-1].index == "scan"


@pytest.fixture
def corpus(db):
    """Created once per test function; hypothesis runs every example inside that one test."""
    channel = create_channel("hypothesis")[0]
    session = services.open_session(channel, model="gpt-4").session
    texts = (
        "用Django写代码",
        'NOT "AND" (x OR y)',
        "file.py /etc/hosts",
        "100% café",
        "本番環境にデプロイ",
        "배포 완료",
        "a*b^c:d",
        "ops-team@example.com",
    )
    services.append_messages(session, [{"role": "user", "content": t} for t in texts])


@given(query_text)
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_searching_random_fts5_syntax_and_mixed_scripts_never_raises(corpus, text):
    try:
        result = search(text)
    except InvalidQuery:
        assert not text.strip()
        return
    assert bool(result.tried) == bool(result.query.terms), text
    for hit in result.hits:
        assert "<script" not in hit.excerpt_html
