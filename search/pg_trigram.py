"""PostgreSQL: the trigram route's first step with plans kept for the connection.

A fragment's first lookup (search.backends.postgres._trigram_candidates) probes the newest rows
and, where the probe finds nothing, reads the older matches through the trigram indexes. Run as
statements written out for each query, that was two round trips and two plans: at 1,000,000
messages a rare fragment's probe took 0.38 ms to plan and 0.30 to run, its index read 0.22 to
plan and 0.03 to run (``EXPLAIN (ANALYZE, SUMMARY)``). For the common shape -- one fragment, no
other LIKE, no filter but the channel -- FIRST runs both in one call, each a static statement
PL/pgSQL plans once per connection under the same settings as search.pg.PLANNED's functions
(WALK for the probe, INDEX for the index read). The fragment's patterns are parameters: its case
variants for LIKE (at most search.pg.MAX_VARIANTS), or an ILIKE pattern with, for the probe, the
variants of a two-character piece LIKE checks first (search.pg.narrowed_match). The rows are the
ones the written-out statements find; any other shape is still written out.
"""

from __future__ import annotations

from search.fts import MESSAGE_TABLE
from search.pg import INDEX, INDEXED, MAX_VARIANTS, WALK
from search.ranked_schema import PAGE_SETTING, TERMS

FIRST = "hermes_trigram_first"
# FIRST for a search's page one (search.rows.FirstPage): where the probe found nothing, the
# first p_page rows of the index read, newest first, kept in the transaction's setting
# search.ranked_schema.PAGE_SETTING for the page's functions in the same round trip.
FIRST_PAGE = "hermes_trigram_first_page"
# A fragment's first lookup in one call: whether it has an entry (search.ranked), the walks'
# bounds, and, where it has none, FIRST (or FIRST_PAGE, given p_page). One row at least.
HEAD_OR_FIRST = "hermes_trigram_head_or_first"
PROBE = "hermes_trigram_probe"
INDEX_READ = "hermes_trigram_index"
TOOL = "hermes_tool_text(m.tool_calls)"
SIGNATURE = "(text[], text, bigint, bigint, bigint, integer, integer)"
# One generic plan each, made at the first call: a custom plan, made for each call's patterns,
# is the planning this saves (and the plan is the settings' whatever the patterns).
KEPT = {"plan_cache_mode": "force_generic_plan"}

# The probe: every match in its id range, newest first, each with whether the channel keeps it
# (an empty probe says the fragment is rare everywhere, not just in this channel).
_PROBE_MATCHES = {
    "like": f"(m.content LIKE ANY (p_like) OR {TOOL} LIKE ANY (p_like))",
    "narrowed": f"((m.content LIKE ANY (p_like) AND m.content ILIKE p_pattern) "
    f"OR {TOOL} ILIKE p_pattern)",
    "ilike": f"(m.content ILIKE p_pattern OR {TOOL} ILIKE p_pattern)",
}


def _probe_query(match: str) -> str:
    return (
        f"SELECT m.id::bigint, (p_channel IS NULL OR m.channel_id = p_channel) "
        f"FROM {MESSAGE_TABLE} m WHERE {INDEXED} AND {match} "
        "AND m.id >= p_lower AND m.id < p_upper ORDER BY m.id DESC"
    )


def _index_query(match: str) -> str:
    # "+ 0" keeps the key out of the plan: the trigram indexes' bitmaps alone.
    return (
        f"SELECT m.id::bigint FROM {MESSAGE_TABLE} m WHERE {INDEXED} AND {match} "
        "AND (p_channel IS NULL OR m.channel_id = p_channel) "
        "AND m.id + 0 >= p_lower AND m.id + 0 < p_upper ORDER BY m.id DESC LIMIT p_n"
    )


def _like_arms(variants: int) -> str:
    """One LIKE per variant on each side (each its own bitmap over its trigram index)."""
    content = [f"m.content LIKE p_like[{i}]" for i in range(1, variants + 1)]
    tools = [f"{TOOL} LIKE p_like[{i}]" for i in range(1, variants + 1)]
    return "(" + " OR ".join(content + tools) + ")"


def _settings(settings: dict[str, str]) -> str:
    return " ".join(f"SET {setting} = {value}" for setting, value in settings.items())


def create_statements() -> list[str]:
    probe = (
        f"IF p_pattern IS NULL THEN RETURN QUERY {_probe_query(_PROBE_MATCHES['like'])}; "
        f"ELSIF p_like IS NOT NULL THEN RETURN QUERY {_probe_query(_PROBE_MATCHES['narrowed'])}; "
        f"ELSE RETURN QUERY {_probe_query(_PROBE_MATCHES['ilike'])}; END IF;"
    )
    likes = " ".join(
        f"ELSIF cardinality(p_like) = {n} THEN RETURN QUERY {_index_query(_like_arms(n))};"
        for n in range(1, MAX_VARIANTS + 1)
    )
    ilike = _index_query(f"(m.content ILIKE p_pattern OR {TOOL} ILIKE p_pattern)")
    index = f"IF p_pattern IS NOT NULL THEN RETURN QUERY {ilike}; {likes} END IF;"
    return [
        f"CREATE OR REPLACE FUNCTION {PROBE}(p_like text[], p_pattern text, p_channel bigint, "
        "p_lower bigint, p_upper bigint) RETURNS TABLE (r_id bigint, r_keep boolean) "
        f"LANGUAGE plpgsql STABLE {_settings({**KEPT, **WALK})} AS $$ BEGIN {probe} END $$",
        f"CREATE OR REPLACE FUNCTION {INDEX_READ}(p_like text[], p_pattern text, "
        "p_channel bigint, p_lower bigint, p_upper bigint, p_n integer) "
        "RETURNS TABLE (r_id bigint) "
        f"LANGUAGE plpgsql STABLE {_settings({**KEPT, **INDEX})} AS $$ BEGIN {index} END $$",
        # The probe of the newest p_probe rows below p_upper; where it finds nothing, the index
        # read of the rest down to p_lowest (r_indexed marks its rows).
        f"CREATE OR REPLACE FUNCTION {FIRST}(p_like text[], p_pattern text, p_channel bigint, "
        "p_lowest bigint, p_upper bigint, p_probe integer, p_n integer) "
        "RETURNS TABLE (r_id bigint, r_keep boolean, r_indexed boolean) "
        "LANGUAGE plpgsql STABLE AS $$ "
        "DECLARE v_lower bigint := greatest(p_upper - p_probe, p_lowest); BEGIN "
        f"RETURN QUERY SELECT p.r_id, p.r_keep, false FROM {PROBE}(p_like, p_pattern, "
        "p_channel, v_lower, p_upper) p; "
        "IF NOT FOUND AND v_lower > p_lowest THEN "
        f"RETURN QUERY SELECT i.r_id, true, true FROM {INDEX_READ}(p_like, p_pattern, "
        "p_channel, p_lowest, v_lower, p_n) i; END IF; END $$",
        f"CREATE OR REPLACE FUNCTION {FIRST_PAGE}(p_like text[], p_pattern text, "
        "p_channel bigint, p_lowest bigint, p_upper bigint, p_probe integer, p_n integer, "
        "p_page integer) RETURNS TABLE (r_id bigint, r_keep boolean, r_indexed boolean) "
        "LANGUAGE plpgsql AS $$ DECLARE v_ids bigint[] := '{}'; BEGIN "
        f"FOR r_id, r_keep, r_indexed IN SELECT * FROM {FIRST}(p_like, p_pattern, p_channel, "
        "p_lowest, p_upper, p_probe, p_n) LOOP RETURN NEXT; "
        "IF r_indexed AND cardinality(v_ids) < p_page THEN v_ids := v_ids || r_id; END IF; "
        f"END LOOP; PERFORM set_config('{PAGE_SETTING}', v_ids::text, true); END $$",
        f"CREATE OR REPLACE FUNCTION {HEAD_OR_FIRST}(p_idx varchar, p_expression text, "
        "p_scope bigint, p_like text[], p_pattern text, p_channel bigint, p_probe integer, "
        "p_n integer, p_page integer) RETURNS TABLE (r_absent boolean, r_lowest bigint, "
        "r_highest bigint, r_id bigint, r_keep boolean, r_indexed boolean) "
        "LANGUAGE plpgsql AS $$ BEGIN "
        f"r_absent := NOT EXISTS (SELECT FROM {TERMS} q WHERE q.idx = p_idx "
        "AND q.expression = p_expression AND q.channel_id = p_scope); "
        f"SELECT min(m.id), max(m.id) INTO r_lowest, r_highest FROM {MESSAGE_TABLE} m; "
        "IF r_absent AND r_lowest IS NOT NULL THEN "
        "IF p_page IS NULL THEN FOR r_id, r_keep, r_indexed IN SELECT * FROM "
        f"{FIRST}(p_like, p_pattern, p_channel, r_lowest, r_highest + 1, p_probe, p_n) "
        "LOOP RETURN NEXT; END LOOP; "
        "ELSE FOR r_id, r_keep, r_indexed IN SELECT * FROM "
        f"{FIRST_PAGE}(p_like, p_pattern, p_channel, r_lowest, r_highest + 1, p_probe, p_n, "
        "p_page) LOOP RETURN NEXT; END LOOP; END IF; "
        "IF FOUND THEN RETURN; END IF; END IF; "
        "r_id := NULL; r_keep := NULL; r_indexed := NULL; RETURN NEXT; END $$",
    ]
