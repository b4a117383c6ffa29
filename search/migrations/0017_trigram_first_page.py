"""PostgreSQL: a fragment's first step reads its page's hits and windows in the same round trip
(search.pg_trigram.FIRST_PAGE): where the probe found nothing, the function keeps the first rows
of its index read, newest first, for the transaction, and the page's two functions read them in
the statements that follow it (as search 0016 does for the words and bigram routes). Nothing on
SQLite.

The function as it was made here; its text is kept in this file, so this migration makes the
same function whatever the code of later versions."""

from django.db import migrations

CREATE = "CREATE OR REPLACE FUNCTION hermes_trigram_first_page(p_like text[], p_pattern text, p_channel bigint, p_lowest bigint, p_upper bigint, p_probe integer, p_n integer, p_page integer) RETURNS TABLE (r_id bigint, r_keep boolean, r_indexed boolean) LANGUAGE plpgsql AS $$ DECLARE v_ids bigint[] := '{}'; BEGIN FOR r_id, r_keep, r_indexed IN SELECT * FROM hermes_trigram_first(p_like, p_pattern, p_channel, p_lowest, p_upper, p_probe, p_n) LOOP RETURN NEXT; IF r_indexed AND cardinality(v_ids) < p_page THEN v_ids := v_ids || r_id; END IF; END LOOP; PERFORM set_config('hermes.first_page', v_ids::text, true); END $$"

DROP = (
    "DROP FUNCTION IF EXISTS hermes_trigram_first_page(text[], text, bigint, bigint, bigint, "
    "integer, integer, integer)"
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
    dependencies = [("search", "0016_first_page")]

    operations = [migrations.RunPython(create, drop)]
