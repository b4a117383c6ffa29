"""PostgreSQL: a rare word's first lookup read through a kept plan (search.pg.RARE_WINDOW),
the words the planner's statistics count common (search.pg.COMMON, filled here from them) and
the first lookup's function that chooses between the two (search.ranked.HEAD_OR_FUNCTION, now
given the route's phrases and page). Nothing on SQLite.

The function as it was made here (0015 replaces it); its text is kept in this file, so this
migration makes the same function whatever the code of later versions."""

import importlib

from django.db import migrations

CREATE_HEAD_OR = """
CREATE OR REPLACE FUNCTION hermes_ranked_head_or(
    p_idx varchar, p_expression text, p_channel bigint, p_first integer, p_statement text, p_phrases text[], p_prefixes boolean[], p_window integer, p_n integer, p_skip integer
) RETURNS TABLE (
    h_query bigint, h_upto bigint, h_matched bigint, h_floor double precision,
    h_floor_id bigint, h_newest bigint, h_message bigint, h_score double precision
) LANGUAGE plpgsql STABLE AS $$
DECLARE
    t record;
    n bigint;
    v_words text;
    v_part tsquery;
    v_query tsquery;
    v_lexeme text;
    v_rare boolean := false;
BEGIN
    SELECT q.id, q.upto, q.matched, q.floor, q.floor_id INTO t FROM search_ranked_query q
        WHERE q.idx = p_idx AND q.expression = p_expression AND q.channel_id = p_channel;
    IF NOT FOUND THEN
        FOR i IN 1 .. coalesce(array_length(p_phrases, 1), 0) LOOP
            v_words := hermes_words(p_phrases[i]);
            v_part := hermes_phrase(v_words, p_prefixes[i]);
            v_query := CASE WHEN i = 1 THEN v_part ELSE v_query && v_part END;
            IF NOT v_rare AND NOT p_prefixes[i] THEN
                FOREACH v_lexeme IN ARRAY tsvector_to_array(to_tsvector('simple', v_words)) LOOP
                    PERFORM FROM search_pg_common_word c WHERE c.idx = p_idx AND c.lexeme = v_lexeme;
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
                FROM hermes_rare_window(p_idx, v_query, NULLIF(p_channel, 0), p_window,
                                      p_n, p_skip) r;
            RETURN;
        END IF;
        RETURN QUERY EXECUTE 'SELECT NULL::bigint, NULL::bigint, s.n::bigint, '
            'NULL::double precision, NULL::bigint, NULL::bigint, s.id::bigint, '
            's.score::text::double precision FROM (' || p_statement || ') AS s(id, score, n)';
        RETURN;
    END IF;
    SELECT max(m.id) INTO n FROM sessions_app_message m;
    RETURN QUERY SELECT t.id, t.upto, t.matched, t.floor, t.floor_id, n, r.message_id, r.score
        FROM search_ranked_row r JOIN sessions_app_message m ON m.id = r.message_id
        WHERE r.query_id = t.id AND (m.active OR m.compressed)
        ORDER BY r.score, r.message_id LIMIT p_first;
    IF NOT FOUND THEN
        RETURN QUERY SELECT t.id, t.upto, t.matched, t.floor, t.floor_id, n,
            NULL::bigint, NULL::double precision;
    END IF;
END
$$"""


def create(apps, schema_editor):
    from search import pg

    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in pg.common_statements():
        schema_editor.execute(statement)
    schema_editor.execute(
        importlib.import_module(f"{__package__}.0012_ranked_head_or_function").DROP
    )
    schema_editor.execute(CREATE_HEAD_OR)
    with schema_editor.connection.cursor() as cursor:
        pg.refresh_common(cursor)


def drop(apps, schema_editor):
    from search import pg, ranked

    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(ranked.DROP_HEAD_OR_FUNCTION)
    schema_editor.execute(
        importlib.import_module(f"{__package__}.0012_ranked_head_or_function").CREATE
    )
    for statement in pg.drop_common_statements():
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("search", "0012_ranked_head_or_function")]

    operations = [migrations.RunPython(create, drop)]
