"""PostgreSQL: the trigram route's first probe and index read with plans kept for the connection
(search.pg_trigram). Nothing on SQLite.

The functions as they were made here; their text is kept in this file, so this migration makes
the same functions whatever the code of later versions."""

from django.db import migrations

CREATE = [
    "CREATE OR REPLACE FUNCTION hermes_trigram_probe(p_like text[], p_pattern text, p_channel bigint, p_lower bigint, p_upper bigint) RETURNS TABLE (r_id bigint, r_keep boolean) LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan SET enable_bitmapscan = off SET enable_sort = off SET jit = off SET max_parallel_workers_per_gather = 0 AS $$ BEGIN IF p_pattern IS NULL THEN RETURN QUERY SELECT m.id::bigint, (p_channel IS NULL OR m.channel_id = p_channel) FROM sessions_app_message m WHERE (active OR compressed) AND (m.content LIKE ANY (p_like) OR hermes_tool_text(m.tool_calls) LIKE ANY (p_like)) AND m.id >= p_lower AND m.id < p_upper ORDER BY m.id DESC; ELSIF p_like IS NOT NULL THEN RETURN QUERY SELECT m.id::bigint, (p_channel IS NULL OR m.channel_id = p_channel) FROM sessions_app_message m WHERE (active OR compressed) AND ((m.content LIKE ANY (p_like) AND m.content ILIKE p_pattern) OR hermes_tool_text(m.tool_calls) ILIKE p_pattern) AND m.id >= p_lower AND m.id < p_upper ORDER BY m.id DESC; ELSE RETURN QUERY SELECT m.id::bigint, (p_channel IS NULL OR m.channel_id = p_channel) FROM sessions_app_message m WHERE (active OR compressed) AND (m.content ILIKE p_pattern OR hermes_tool_text(m.tool_calls) ILIKE p_pattern) AND m.id >= p_lower AND m.id < p_upper ORDER BY m.id DESC; END IF; END $$",
    "CREATE OR REPLACE FUNCTION hermes_trigram_index(p_like text[], p_pattern text, p_channel bigint, p_lower bigint, p_upper bigint, p_n integer) RETURNS TABLE (r_id bigint) LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan SET enable_indexscan = off SET enable_seqscan = off SET jit = off SET max_parallel_workers_per_gather = 0 AS $$ BEGIN IF p_pattern IS NOT NULL THEN RETURN QUERY SELECT m.id::bigint FROM sessions_app_message m WHERE (active OR compressed) AND (m.content ILIKE p_pattern OR hermes_tool_text(m.tool_calls) ILIKE p_pattern) AND (p_channel IS NULL OR m.channel_id = p_channel) AND m.id + 0 >= p_lower AND m.id + 0 < p_upper ORDER BY m.id DESC LIMIT p_n; ELSIF cardinality(p_like) = 1 THEN RETURN QUERY SELECT m.id::bigint FROM sessions_app_message m WHERE (active OR compressed) AND (m.content LIKE p_like[1] OR hermes_tool_text(m.tool_calls) LIKE p_like[1]) AND (p_channel IS NULL OR m.channel_id = p_channel) AND m.id + 0 >= p_lower AND m.id + 0 < p_upper ORDER BY m.id DESC LIMIT p_n; ELSIF cardinality(p_like) = 2 THEN RETURN QUERY SELECT m.id::bigint FROM sessions_app_message m WHERE (active OR compressed) AND (m.content LIKE p_like[1] OR m.content LIKE p_like[2] OR hermes_tool_text(m.tool_calls) LIKE p_like[1] OR hermes_tool_text(m.tool_calls) LIKE p_like[2]) AND (p_channel IS NULL OR m.channel_id = p_channel) AND m.id + 0 >= p_lower AND m.id + 0 < p_upper ORDER BY m.id DESC LIMIT p_n; ELSIF cardinality(p_like) = 3 THEN RETURN QUERY SELECT m.id::bigint FROM sessions_app_message m WHERE (active OR compressed) AND (m.content LIKE p_like[1] OR m.content LIKE p_like[2] OR m.content LIKE p_like[3] OR hermes_tool_text(m.tool_calls) LIKE p_like[1] OR hermes_tool_text(m.tool_calls) LIKE p_like[2] OR hermes_tool_text(m.tool_calls) LIKE p_like[3]) AND (p_channel IS NULL OR m.channel_id = p_channel) AND m.id + 0 >= p_lower AND m.id + 0 < p_upper ORDER BY m.id DESC LIMIT p_n; ELSIF cardinality(p_like) = 4 THEN RETURN QUERY SELECT m.id::bigint FROM sessions_app_message m WHERE (active OR compressed) AND (m.content LIKE p_like[1] OR m.content LIKE p_like[2] OR m.content LIKE p_like[3] OR m.content LIKE p_like[4] OR hermes_tool_text(m.tool_calls) LIKE p_like[1] OR hermes_tool_text(m.tool_calls) LIKE p_like[2] OR hermes_tool_text(m.tool_calls) LIKE p_like[3] OR hermes_tool_text(m.tool_calls) LIKE p_like[4]) AND (p_channel IS NULL OR m.channel_id = p_channel) AND m.id + 0 >= p_lower AND m.id + 0 < p_upper ORDER BY m.id DESC LIMIT p_n; END IF; END $$",
    "CREATE OR REPLACE FUNCTION hermes_trigram_first(p_like text[], p_pattern text, p_channel bigint, p_lowest bigint, p_upper bigint, p_probe integer, p_n integer) RETURNS TABLE (r_id bigint, r_keep boolean, r_indexed boolean) LANGUAGE plpgsql STABLE AS $$ DECLARE v_lower bigint := greatest(p_upper - p_probe, p_lowest); BEGIN RETURN QUERY SELECT p.r_id, p.r_keep, false FROM hermes_trigram_probe(p_like, p_pattern, p_channel, v_lower, p_upper) p; IF NOT FOUND AND v_lower > p_lowest THEN RETURN QUERY SELECT i.r_id, true, true FROM hermes_trigram_index(p_like, p_pattern, p_channel, p_lowest, v_lower, p_n) i; END IF; END $$",
]

DROP = [
    "DROP FUNCTION IF EXISTS hermes_trigram_first(text[], text, bigint, bigint, bigint, integer, integer)",
    "DROP FUNCTION IF EXISTS hermes_trigram_index(text[], text, bigint, bigint, bigint, integer)",
    "DROP FUNCTION IF EXISTS hermes_trigram_probe(text[], text, bigint, bigint, bigint)",
]


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in CREATE:
        schema_editor.execute(statement)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in DROP:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("search", "0013_rare_window")]

    operations = [migrations.RunPython(create, drop)]
