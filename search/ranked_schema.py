"""The kept queries' tables (search.ranked) and the PostgreSQL functions that read them in one
call: their schema, apart from the code that fills and reads them."""

from __future__ import annotations

from search import pg
from search.fts import MESSAGE_TABLE

TERMS = "search_ranked_query"
ROWS = "search_ranked_row"
ALL_CHANNELS = 0  # the scope of a lookup without a channel filter


def create_statements(vendor: str) -> list[str]:
    key = "BIGSERIAL PRIMARY KEY" if vendor == "postgresql" else "INTEGER PRIMARY KEY"
    real = "DOUBLE PRECISION" if vendor == "postgresql" else "REAL"
    stamp = "TIMESTAMP WITH TIME ZONE" if vendor == "postgresql" else "TEXT"
    return [
        f"CREATE TABLE IF NOT EXISTS {TERMS} ("
        f"id {key}, idx VARCHAR(16) NOT NULL, expression TEXT NOT NULL, "
        "channel_id BIGINT NOT NULL, upto BIGINT NOT NULL, matched BIGINT NOT NULL, "
        f"floor {real}, floor_id BIGINT, refreshed_at {stamp} NOT NULL, "
        "UNIQUE (idx, expression, channel_id))",
        f"CREATE TABLE IF NOT EXISTS {ROWS} ("
        f"query_id BIGINT NOT NULL, message_id BIGINT NOT NULL, score {real} NOT NULL, "
        "PRIMARY KEY (query_id, message_id))",
        f"CREATE INDEX IF NOT EXISTS {ROWS}_message ON {ROWS} (message_id)",
        # A lookup reads a query's kept rows best first, only as many as its page needs.
        f"CREATE INDEX IF NOT EXISTS {ROWS}_best ON {ROWS} (query_id, score, message_id)",
        f"CREATE INDEX IF NOT EXISTS {TERMS}_refreshed ON {TERMS} (refreshed_at)",
    ]


DROP_STATEMENTS = [f"DROP TABLE IF EXISTS {ROWS}", f"DROP TABLE IF EXISTS {TERMS}"]

# On PostgreSQL a lookup's entry, the newest message id and the first kept rows that still count
# come from one function: one round trip, and PL/pgSQL keeps its statements' plans for the
# connection's life (the two statements it replaces took 0.36 ms at 1,000,000 messages, mostly
# planning; the call 0.09 ms). Its last statement is ``kept``'s, limited to the page; a row
# without a message is the entry alone.
HEAD_FUNCTION = "hermes_ranked_head"


def _head_function(name: str, more: str = "", when_none: str = "", declare: str = "") -> str:
    return f"""
CREATE OR REPLACE FUNCTION {name}(
    p_idx varchar, p_expression text, p_channel bigint, p_first integer{more}
) RETURNS TABLE (
    h_query bigint, h_upto bigint, h_matched bigint, h_floor double precision,
    h_floor_id bigint, h_newest bigint, h_message bigint, h_score double precision
) LANGUAGE plpgsql STABLE AS $$
DECLARE
    t record;
    n bigint;{declare}
BEGIN
    SELECT q.id, q.upto, q.matched, q.floor, q.floor_id INTO t FROM {TERMS} q
        WHERE q.idx = p_idx AND q.expression = p_expression AND q.channel_id = p_channel;
    IF NOT FOUND THEN{when_none}
        RETURN;
    END IF;
    SELECT max(m.id) INTO n FROM {MESSAGE_TABLE} m;
    RETURN QUERY SELECT t.id, t.upto, t.matched, t.floor, t.floor_id, n, r.message_id, r.score
        FROM {ROWS} r JOIN {MESSAGE_TABLE} m ON m.id = r.message_id
        WHERE r.query_id = t.id AND (m.active OR m.compressed)
        ORDER BY r.score, r.message_id LIMIT p_first;
    IF NOT FOUND THEN
        RETURN QUERY SELECT t.id, t.upto, t.matched, t.floor, t.floor_id, n,
            NULL::bigint, NULL::double precision;
    END IF;
END
$$"""


CREATE_HEAD_FUNCTION = _head_function(HEAD_FUNCTION)
DROP_HEAD_FUNCTION = f"DROP FUNCTION IF EXISTS {HEAD_FUNCTION}(varchar, text, bigint, integer)"

# A query's first lookup on PostgreSQL: its entry, as HEAD_FUNCTION reads it, or, when it has
# none, the first page of its newest window -- one round trip, in one snapshot. A query with a
# word the planner's statistics do not count common (search.pg.COMMON) is read through
# search.pg.RARE_WINDOW, whose plan is kept; any other runs the route's statement, planned then
# (EXECUTE: for its own words). Both give ``(id, score, count)``, which come as ``(NULL, NULL,
# count, NULL, NULL, NULL, id, score)``; the score goes through text so that it is the value the
# statement's ``real`` would have given. The query is built from the route's phrases as the
# statement builds it (search.backends.postgres._tsquery). In a phrase asked as a prefix (its
# last word a prefix) a word counts as common when a common word starts with it: for the
# prefix, the planner's own rule (it estimates a prefix no listed word starts with as it does a
# word not listed, so it would choose the index's plan), and for the phrase's other words no
# less than their own listing.
HEAD_OR_FUNCTION = "hermes_ranked_head_or"
HEAD_OR_ARGUMENTS = (
    "varchar, text, bigint, integer, text, text[], boolean[], integer, integer, integer"
)
CREATE_HEAD_OR_FUNCTION = _head_function(
    HEAD_OR_FUNCTION,
    ", p_statement text, p_phrases text[], p_prefixes boolean[], p_window integer, "
    "p_n integer, p_skip integer",
    f"""
        FOR i IN 1 .. coalesce(array_length(p_phrases, 1), 0) LOOP
            v_words := hermes_words(p_phrases[i]);
            v_part := hermes_phrase(v_words, p_prefixes[i]);
            v_query := CASE WHEN i = 1 THEN v_part ELSE v_query && v_part END;
            IF NOT v_rare THEN
                FOREACH v_lexeme IN ARRAY tsvector_to_array(to_tsvector('simple', v_words)) LOOP
                    IF p_prefixes[i] THEN
                        PERFORM FROM {pg.COMMON} c
                            WHERE c.idx = p_idx AND starts_with(c.lexeme, v_lexeme);
                    ELSE
                        PERFORM FROM {pg.COMMON} c WHERE c.idx = p_idx AND c.lexeme = v_lexeme;
                    END IF;
                    IF NOT FOUND THEN
                        v_rare := true;
                        EXIT;
                    END IF;
                END LOOP;
            END IF;
        END LOOP;
        IF v_rare THEN
            RETURN QUERY SELECT NULL::bigint, NULL::bigint, r.r_n, NULL::double precision,
                NULL::bigint, NULL::bigint, r.r_id, r.r_score
                FROM {pg.RARE_WINDOW}(p_idx, v_query, NULLIF(p_channel, {ALL_CHANNELS}), p_window,
                                      p_n, p_skip) r;
            RETURN;
        END IF;
        RETURN QUERY EXECUTE 'SELECT NULL::bigint, NULL::bigint, s.n::bigint, '
            'NULL::double precision, NULL::bigint, NULL::bigint, s.id::bigint, '
            's.score::text::double precision FROM (' || p_statement || ') AS s(id, score, n)';""",
    """
    v_words text;
    v_part tsquery;
    v_query tsquery;
    v_lexeme text;
    v_rare boolean := false;""",
)
DROP_HEAD_OR_FUNCTION = f"DROP FUNCTION IF EXISTS {HEAD_OR_FUNCTION}({HEAD_OR_ARGUMENTS})"

# A query's first lookup on PostgreSQL whose answer may be its window's first page, which the
# search reads next (search.rows.read_page): HEAD_OR_FUNCTION's rows, and the window rows' ids,
# best first, kept in the transaction's setting PAGE_SETTING, from which the page's two functions
# read them in the same round trip (search.rows.call_with_first_page). Without an entry the
# page's hits and windows then come with the lookup: one round trip where there were two.
HEAD_OR_PAGE_FUNCTION = "hermes_ranked_head_or_page"
PAGE_SETTING = "hermes.first_page"
CREATE_HEAD_OR_PAGE_FUNCTION = f"""
CREATE OR REPLACE FUNCTION {HEAD_OR_PAGE_FUNCTION}(
    p_idx varchar, p_expression text, p_channel bigint, p_first integer, p_statement text,
    p_phrases text[], p_prefixes boolean[], p_window integer, p_n integer, p_skip integer
) RETURNS TABLE (
    h_query bigint, h_upto bigint, h_matched bigint, h_floor double precision,
    h_floor_id bigint, h_newest bigint, h_message bigint, h_score double precision
) LANGUAGE plpgsql AS $$
DECLARE
    v_ids bigint[] := '{{}}';
    v_scores double precision[] := '{{}}';
BEGIN
    FOR h_query, h_upto, h_matched, h_floor, h_floor_id, h_newest, h_message, h_score IN
        SELECT * FROM {HEAD_OR_FUNCTION}(p_idx, p_expression, p_channel, p_first, p_statement,
            p_phrases, p_prefixes, p_window, p_n, p_skip)
    LOOP
        RETURN NEXT;
        IF h_query IS NULL AND h_message IS NOT NULL THEN
            v_ids := v_ids || h_message;
            v_scores := v_scores || h_score;
        END IF;
    END LOOP;
    PERFORM set_config('{PAGE_SETTING}', (
        SELECT coalesce(array_agg(u.id ORDER BY u.score, u.id), '{{}}')
        FROM unnest(v_ids, v_scores) AS u(id, score))::text, true);
END
$$"""


def function_statements() -> list[str]:
    """The kept queries' PostgreSQL functions, for ``manage.py reindex`` to make again (after
    search.pg's, which they call). Each is what its last migration made: tests hold them equal."""
    return [CREATE_HEAD_FUNCTION, CREATE_HEAD_OR_FUNCTION, CREATE_HEAD_OR_PAGE_FUNCTION]
