"""PostgreSQL: a query's first lookup reads its page's hits and windows in the same round trip
(search.ranked_schema.HEAD_OR_PAGE_FUNCTION): the lookup's function keeps its window's ids, best
first, for the transaction, and the page's two functions read them in the statements that follow
it. Nothing on SQLite.

The function as it was made here; its text is kept in this file, so this migration makes the
same function whatever the code of later versions."""

from django.db import migrations

CREATE_HEAD_OR_PAGE = """
CREATE OR REPLACE FUNCTION hermes_ranked_head_or_page(
    p_idx varchar, p_expression text, p_channel bigint, p_first integer, p_statement text,
    p_phrases text[], p_prefixes boolean[], p_window integer, p_n integer, p_skip integer
) RETURNS TABLE (
    h_query bigint, h_upto bigint, h_matched bigint, h_floor double precision,
    h_floor_id bigint, h_newest bigint, h_message bigint, h_score double precision
) LANGUAGE plpgsql AS $$
DECLARE
    v_ids bigint[] := '{}';
    v_scores double precision[] := '{}';
BEGIN
    FOR h_query, h_upto, h_matched, h_floor, h_floor_id, h_newest, h_message, h_score IN
        SELECT * FROM hermes_ranked_head_or(p_idx, p_expression, p_channel, p_first, p_statement,
            p_phrases, p_prefixes, p_window, p_n, p_skip)
    LOOP
        RETURN NEXT;
        IF h_query IS NULL AND h_message IS NOT NULL THEN
            v_ids := v_ids || h_message;
            v_scores := v_scores || h_score;
        END IF;
    END LOOP;
    PERFORM set_config('hermes.first_page', (
        SELECT coalesce(array_agg(u.id ORDER BY u.score, u.id), '{}')
        FROM unnest(v_ids, v_scores) AS u(id, score))::text, true);
END
$$"""

DROP_HEAD_OR_PAGE = (
    "DROP FUNCTION IF EXISTS hermes_ranked_head_or_page(varchar, text, bigint, integer, text, "
    "text[], boolean[], integer, integer, integer)"
)


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(CREATE_HEAD_OR_PAGE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(DROP_HEAD_OR_PAGE)


class Migration(migrations.Migration):
    dependencies = [("search", "0015_rare_prefix")]

    operations = [migrations.RunPython(create, drop)]
