"""PostgreSQL: a query's entry or, when it has none, its route's first statement, in one call
(search.ranked.HEAD_OR_FUNCTION). Nothing on SQLite, whose statements cost no round trip.

The function as it was made here (0013 replaces it); its text is kept in this file, so this
migration makes the same function whatever the code of later versions."""

from django.db import migrations

CREATE = """CREATE OR REPLACE FUNCTION hermes_ranked_head_or(
    p_idx varchar, p_expression text, p_channel bigint, p_first integer, p_statement text
) RETURNS TABLE (
    h_query bigint, h_upto bigint, h_matched bigint, h_floor double precision,
    h_floor_id bigint, h_newest bigint, h_message bigint, h_score double precision
) LANGUAGE plpgsql STABLE AS $$
DECLARE
    t record;
    n bigint;
BEGIN
    SELECT q.id, q.upto, q.matched, q.floor, q.floor_id INTO t FROM search_ranked_query q
        WHERE q.idx = p_idx AND q.expression = p_expression AND q.channel_id = p_channel;
    IF NOT FOUND THEN
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
DROP = "DROP FUNCTION IF EXISTS hermes_ranked_head_or(varchar, text, bigint, integer, text)"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("search", "0011_page_functions")]

    operations = [migrations.RunPython(create, drop)]
