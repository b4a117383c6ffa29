"""PostgreSQL: a fragment's first lookup in one call (search.pg_trigram.HEAD_OR_FIRST): whether
the query has an entry, the walks' bounds, and where it has none its first step (with its page's
hits and windows read in the same round trip, as search 0017 does). It was two round trips: the
entry with the bounds, then the step. Nothing on SQLite.

The function as it was made here; its text is kept in this file, so this migration makes the
same function whatever the code of later versions."""

from django.db import migrations

CREATE = "CREATE OR REPLACE FUNCTION hermes_trigram_head_or_first(p_idx varchar, p_expression text, p_scope bigint, p_like text[], p_pattern text, p_channel bigint, p_probe integer, p_n integer, p_page integer) RETURNS TABLE (r_absent boolean, r_lowest bigint, r_highest bigint, r_id bigint, r_keep boolean, r_indexed boolean) LANGUAGE plpgsql AS $$ BEGIN r_absent := NOT EXISTS (SELECT FROM search_ranked_query q WHERE q.idx = p_idx AND q.expression = p_expression AND q.channel_id = p_scope); SELECT min(m.id), max(m.id) INTO r_lowest, r_highest FROM sessions_app_message m; IF r_absent AND r_lowest IS NOT NULL THEN IF p_page IS NULL THEN FOR r_id, r_keep, r_indexed IN SELECT * FROM hermes_trigram_first(p_like, p_pattern, p_channel, r_lowest, r_highest + 1, p_probe, p_n) LOOP RETURN NEXT; END LOOP; ELSE FOR r_id, r_keep, r_indexed IN SELECT * FROM hermes_trigram_first_page(p_like, p_pattern, p_channel, r_lowest, r_highest + 1, p_probe, p_n, p_page) LOOP RETURN NEXT; END LOOP; END IF; IF FOUND THEN RETURN; END IF; END IF; r_id := NULL; r_keep := NULL; r_indexed := NULL; RETURN NEXT; END $$"

DROP = (
    "DROP FUNCTION IF EXISTS hermes_trigram_head_or_first(varchar, text, bigint, text[], text, "
    "bigint, integer, integer, integer)"
)


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("search", "0017_trigram_first_page")]

    operations = [migrations.RunPython(create, drop)]
