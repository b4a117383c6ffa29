"""The PostgreSQL side of recall: the same three indexes as SQLite's FTS5 tables.

* *words*: a stored ``tsvector`` column, ``to_tsvector('simple', hermes_words(text))``, in a GIN
  index -- the language-neutral configuration (no stemming, no stop words), text folded like
  unicode61 with diacritics removed (lower + unaccent), every run of non-letters a separator, CJK
  runs spaced apart from Latin;
* *bigram*: the same over ``hermes_bigrams(text)``: every CJK run rewritten as overlapping pairs
  plus its last character, exactly as ``search.text.bigram_text`` does for SQLite;
* *trigram*: ``pg_trgm`` GIN indexes over the content and over the tool calls' text, answering
  ``ILIKE``.

The vectors are *generated* columns (computed by PostgreSQL from ``content`` and ``tool_calls``
on every insert and update) so that ranking reads them instead of re-tokenising each candidate,
and all the indexes are maintained by PostgreSQL on every write, whatever path it comes from
(bulk updates, raw SQL, a restore). The partial predicate ``active OR compressed`` keeps
rolled-back rows out exactly as the SQLite triggers do. Django's model does not know the two
columns; they are added by the search app's migration, on PostgreSQL only. The functions are
``IMMUTABLE`` (generated columns and index expressions must be) and never raise for any row: tool
calls that are not a list of objects are skipped, and the text fed to a ``tsvector`` is capped
(``TSVECTOR_CHARS``) because PostgreSQL refuses a ``tsvector`` over 1 MB -- a longer message is
stored whole and still found by the trigram index and the scan; only its words past the cap are
missing from the word indexes.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db import connection

from search.fts import MESSAGE_TABLE
from sessions_app.text import CJK_CHARS

TSVECTOR_CHARS = 100_000
INDEXED = "(active OR compressed)"
INDEX_NAMES = {
    "words": "search_pg_words",
    "bigram": "search_pg_bigram",
    "trigram": "search_pg_trigram",
    "tool_trigram": "search_pg_tool_trigram",
}
COLUMNS = {"words": "search_words", "bigram": "search_bigrams"}


def _regex_class(chars: str) -> str:
    """CJK_CHARS as a PostgreSQL regex bracket body (\\uXXXX / \\UXXXXXXXX escapes)."""
    out = []
    for ch in chars:
        if ch == "-":
            out.append("-")
        elif ord(ch) > 0xFFFF:
            out.append(f"\\U{ord(ch):08X}")
        else:
            out.append(f"\\u{ord(ch):04X}")
    return "".join(out)


CJK = _regex_class(CJK_CHARS)

FUNCTIONS = [
    # The tool calls' searchable text: each call's "name arguments", one per line.
    """
    CREATE OR REPLACE FUNCTION hermes_tool_text(tool_calls jsonb)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
      SELECT string_agg(
               btrim(concat_ws(' ', f->>'name', CASE jsonb_typeof(f->'arguments')
                     WHEN 'string' THEN f->>'arguments' ELSE (f->'arguments')::text END)),
               E'\\n' ORDER BY n)
      FROM jsonb_array_elements(
             CASE jsonb_typeof(tool_calls) WHEN 'array' THEN tool_calls ELSE '[]' END
           ) WITH ORDINALITY AS e(call, n),
           LATERAL (SELECT CASE WHEN jsonb_typeof(call) = 'object'
                                 AND jsonb_typeof(call->'function') = 'object'
                            THEN call->'function' END AS f) AS fn
      WHERE f IS NOT NULL
    $$
    """,
    # All searchable text of a row (search.text.search_text): content, then the tool calls.
    """
    CREATE OR REPLACE FUNCTION hermes_search_text(content text, tool_calls jsonb)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT concat_ws(E'\\n', nullif(content, ''), %(s)s.hermes_tool_text(tool_calls))
    $$
    """,
    # unicode61 with remove_diacritics: lower case, accents off. unaccent is only STABLE (its
    # dictionary could change); naming the dictionary makes the wrapper safe to call immutable.
    """
    CREATE OR REPLACE FUNCTION hermes_fold(t text)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
      SELECT lower(%(u)s.unaccent('%(u)s.unaccent'::regdictionary, left(t, %(cap)s)))
    $$
    """,
    # Letters and digits only, space-separated, CJK runs apart from Latin: what the default
    # parser then reads as plain words (it would read "file.py" or "a@b.c" as single tokens).
    """
    CREATE OR REPLACE FUNCTION hermes_words(t text)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
      SELECT regexp_replace(regexp_replace(%(s)s.hermes_fold(t), '([%(cjk)s]+)', ' \\1 ', 'g'),
                            '[^[:alnum:]]+', ' ', 'g')
    $$
    """,
    """
    CREATE OR REPLACE FUNCTION hermes_bigram_run(r text)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
      SELECT string_agg(substr(r, i, 2), ' ' ORDER BY i) FROM generate_series(1, char_length(r)) i
    $$
    """,
    """
    CREATE OR REPLACE FUNCTION hermes_bigrams(t text)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
      SELECT coalesce(regexp_replace(string_agg(
               CASE WHEN part[1] ~ '^[%(cjk)s]' THEN %(s)s.hermes_bigram_run(part[1])
                    ELSE part[1] END,
               ' ' ORDER BY n), '[^[:alnum:]]+', ' ', 'g'), '')
      FROM regexp_matches(%(s)s.hermes_fold(t), '[%(cjk)s]+|[^%(cjk)s]+', 'g')
           WITH ORDINALITY AS x(part, n)
    $$
    """,
    # One query term as a phrase, the last token a prefix when asked; empty when no letters.
    """
    CREATE OR REPLACE FUNCTION hermes_phrase(t text, prefix boolean)
    RETURNS tsquery LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
      SELECT CASE WHEN prefix AND q::text <> '' THEN (q::text || ':*')::tsquery ELSE q END
      FROM phraseto_tsquery('simple', t) AS q
    $$
    """,
]

# Plans fixed by planner settings, for the statements whose plan is their definition (a walk of
# the primary key backwards, newest first: the trigram route's, a kept query's newer matches,
# the bounded scan's chunks; the trigram index alone), whatever the planner's estimates --
# without statistics (a fresh load or a restore, until ANALYZE) it guesses. Each
# set of settings is a function's SET clauses: the statement, run by the function, is planned
# under them and they are put back when it returns, error or not -- one round trip, where
# setting them for a transaction (BEGIN, set, run, set back, COMMIT) took five. Neither in
# parallel nor compiled (JIT): on a small machine both cost more than these statements run.
QUIET = {"jit": "off", "max_parallel_workers_per_gather": "0"}
WALK = {"enable_bitmapscan": "off", "enable_sort": "off", **QUIET}
INDEX = {"enable_indexscan": "off", "enable_seqscan": "off", **QUIET}
WALK_PLAN, INDEX_PLAN = "hermes_walk_plan", "hermes_index_plan"
PLANNED = {WALK_PLAN: WALK, INDEX_PLAN: INDEX}


def planned_function_statements() -> list[str]:
    return [
        f"CREATE OR REPLACE FUNCTION {name}(statement text) RETURNS SETOF record "
        "LANGUAGE plpgsql "
        + " ".join(f"SET {setting} = {value}" for setting, value in settings.items())
        + " AS $$ BEGIN RETURN QUERY EXECUTE statement; END $$"
        for name, settings in PLANNED.items()
    ]


def drop_planned_function_statements() -> list[str]:
    return [f"DROP FUNCTION IF EXISTS {name}(text)" for name in PLANNED]


def run_planned(cursor, function: str, sql: str, params: list, columns: str) -> list:
    """The rows of ``sql`` planned under one of PLANNED's settings, through its ``function``
    (WALK_PLAN or INDEX_PLAN): ``columns`` are the result's, as SQL declares them (``id
    bigint, keep boolean``)."""
    # As the client-side cursor sends it: the parameters quoted into the text.
    statement = connection.ops.compose_sql(sql, params)  # type: ignore[attr-defined]
    cursor.execute(f"SELECT * FROM {function}(%s) AS t({columns})", [statement])
    return cursor.fetchall()


TEXT = "hermes_search_text(content, tool_calls)"
VECTORS = {
    "words": f"to_tsvector('simple'::regconfig, hermes_words({TEXT}))",
    "bigram": f"to_tsvector('simple'::regconfig, hermes_bigrams({TEXT}))",
}


def vector(index: str, alias: str = "m") -> str:
    return f"{alias}.{COLUMNS[index]}"


# A rare word's first lookup without a plan of its own. The newest window of a query's matches
# must be planned for its words where they are common (the planner then walks the key newest
# first instead of reading every match through the GIN index), but planning it took 0.28 ms of
# a rare word's 0.33 (1,000,000 messages): the plan is always the index's, which reads a
# handful of rows. COMMON holds the words the planner's statistics count among the most common
# of each vector column (its most-common-elements list, refreshed by the worker every minute,
# refresh_common); a query with a word not among them is rare by the same statistics, and
# RARE_WINDOW reads its window through the index with a plan kept for the connection. Without
# statistics (a fresh load or a restore) the list is empty and the planner, guessing, picks the
# index for every query anyway.
COMMON = "search_pg_common_word"
RARE_WINDOW = "hermes_rare_window"
RARE_WINDOW_SETTINGS = {"plan_cache_mode": "force_generic_plan", **INDEX}


def _rare_window_query(index: str) -> str:
    column = vector(index)
    return (
        f"WITH candidates AS (SELECT m.id, ts_rank({column}, p_query) AS rank "
        f"FROM {MESSAGE_TABLE} m WHERE {INDEXED} AND {column} @@ p_query "
        "AND (p_channel IS NULL OR m.channel_id = p_channel) "
        "ORDER BY m.id DESC LIMIT p_window) "
        "SELECT c.id::bigint, (-c.rank)::text::double precision, "
        "(SELECT count(*) FROM candidates)::bigint FROM candidates c "
        "ORDER BY c.rank DESC, c.id ASC LIMIT p_n OFFSET p_skip"
    )


def common_statements() -> list[str]:
    """COMMON and RARE_WINDOW (the window's statement is run_fts's, its values parameters: the
    score through text as the statement's ``real`` gives it to the client)."""
    branches = " ELSIF ".join(
        f"p_idx = '{index}' THEN RETURN QUERY {_rare_window_query(index)};" for index in COLUMNS
    )
    return [
        f"CREATE TABLE IF NOT EXISTS {COMMON} (idx VARCHAR(16) NOT NULL, lexeme TEXT NOT NULL, "
        "PRIMARY KEY (idx, lexeme))",
        f"CREATE OR REPLACE FUNCTION {RARE_WINDOW}(p_idx varchar, p_query tsquery, "
        "p_channel bigint, p_window integer, p_n integer, p_skip integer) "
        "RETURNS TABLE (r_id bigint, r_score double precision, r_n bigint) "
        "LANGUAGE plpgsql STABLE "
        + " ".join(f"SET {setting} = {value}" for setting, value in RARE_WINDOW_SETTINGS.items())
        + f" AS $$ BEGIN IF {branches} END IF; END $$",
    ]


def drop_common_statements() -> list[str]:
    return [
        f"DROP FUNCTION IF EXISTS {RARE_WINDOW}(varchar, tsquery, bigint, integer, integer, "
        "integer)",
        f"DROP TABLE IF EXISTS {COMMON}",
    ]


def refresh_common(cursor) -> None:
    """COMMON as the planner's statistics of the vector columns have it now (rows written only
    where they changed: after an ANALYZE, or none). Reads ``pg_stats``, which shows the table's
    owner its statistics."""
    columns = ", ".join(f"('{column}', '{index}')" for index, column in COLUMNS.items())
    cursor.execute(
        f"WITH named(attname, idx) AS (VALUES {columns}), "
        "listed AS (SELECT DISTINCT n.idx, unnest(s.most_common_elems::text::text[]) AS lexeme "
        "FROM pg_stats s JOIN named n ON n.attname = s.attname "
        "WHERE s.schemaname = current_schema() AND s.tablename = %s), "
        f"gone AS (DELETE FROM {COMMON} c WHERE NOT EXISTS (SELECT 1 FROM listed l "
        "WHERE l.idx = c.idx AND l.lexeme = c.lexeme)) "
        f"INSERT INTO {COMMON} (idx, lexeme) SELECT idx, lexeme FROM listed "
        "ON CONFLICT DO NOTHING",
        [MESSAGE_TABLE],
    )


def count_as_common(cursor, text: str) -> None:
    """Add ``text``'s words and bigrams to COMMON for both vector columns, as if the statistics
    counted them common: its first lookups are then planned for their words (the baseline the
    benchmark measures the kept plan against, and the tests' way to take the planned path).
    The next refresh_common puts the list back as the statistics have it."""
    cursor.execute(
        f"INSERT INTO {COMMON} (idx, lexeme) SELECT i, l FROM unnest(%s::text[]) i, ("
        "SELECT unnest(tsvector_to_array(to_tsvector('simple', hermes_words(%s)))) UNION "
        "SELECT unnest(tsvector_to_array(to_tsvector('simple', hermes_bigrams(%s))))) AS w(l) "
        "ON CONFLICT DO NOTHING",
        [list(COLUMNS), text, text],
    )


def narrowed_match(pairs: int, alias: str = "m") -> str:
    """substring_match's ILIKE with a cheap necessary condition first on the content: one of
    ``pairs`` LIKE patterns, then the ILIKE pattern, then the ILIKE pattern on the tool calls.
    For walks only: a bitmap plan could read the pairs through the trigram index, which has no
    trigram for two characters and would read all of it."""
    pairs_sql = " OR ".join([f"{alias}.content LIKE %s"] * pairs)
    return (
        f"((({pairs_sql}) AND {alias}.content ILIKE %s)"
        f" OR hermes_tool_text({alias}.tool_calls) ILIKE %s)"
    )


def substring_match(alias: str = "m", patterns: int = 1, operator: str = "ILIKE") -> str:
    """SQL true when the row's searchable text matches one of ``patterns`` ``%s`` patterns
    (parameters: the patterns, then the same again). Content and tool calls are matched
    separately so that each side uses its own trigram index and a row without tool calls costs
    nothing extra; content first, where most matches are."""
    content = [f"{alias}.content {operator} %s"] * patterns
    tools = [f"hermes_tool_text({alias}.tool_calls) {operator} %s"] * patterns
    return "(" + " OR ".join(content + tools) + ")"


# ILIKE folds both sides with lower() and costs 5-8 times what LIKE does (most of a scan's or
# a trigram recheck's time); where the needle's case variants are few, LIKE on each is the same
# match for less. What lower() does is read from the database itself (its LC_CTYPE decides).
MAX_VARIANTS = 4
_FOLDS: dict[tuple, dict[str, frozenset[str]] | None] = {}


def case_folds(cursor, key: tuple) -> dict[str, frozenset[str]] | None:
    """For every BMP character lower() changes or produces, every character lower() maps to the
    same result (itself included); characters absent are their own only variant. None where
    ILIKE does not fold character by character (an ICU or non-UTF-8 database): ILIKE stays.
    Read once per database (about 40 ms), keyed by ``key``."""
    if key in _FOLDS:
        return _FOLDS[key]
    cursor.execute(
        "SELECT current_setting('server_encoding'), current_setting('server_version_num')::int"
    )
    encoding, version = cursor.fetchone()
    provider = "c"
    if version >= 150000:
        cursor.execute("SELECT datlocprovider FROM pg_database WHERE datname = current_database()")
        provider = cursor.fetchone()[0]
    folds: dict[str, frozenset[str]] | None = None
    if encoding == "UTF8" and provider == "c":
        cursor.execute(
            "SELECT chr(c), lower(chr(c)) FROM generate_series(1, 65535) c "
            "WHERE c NOT BETWEEN 55296 AND 57343 AND lower(chr(c)) <> chr(c)"
        )
        pairs = cursor.fetchall()
        if all(len(low) == 1 for _, low in pairs):
            changed = {char for char, _ in pairs}
            groups: dict[str, set[str]] = {}
            for char, low in pairs:
                groups.setdefault(low, {low} - changed).add(char)
            folds = {low: frozenset(chars) for low, chars in groups.items()}
            folds.update({char: folds[low] for char, low in pairs})
    _FOLDS[key] = folds
    return folds


# Letter pairs too common in English text to narrow a walk much.
COMMON_PAIRS = frozenset(
    "th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io le"
    " ve co me de hi ri ro ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns ge".split()
)


def narrowing_pair(needle: str, folds: dict[str, frozenset[str]] | None) -> list[str] | None:
    """The case variants of a two-character piece of ``needle`` (at most MAX_VARIANTS, a pair
    with a non-letter or a rare pair of letters preferred): a row the needle matches contains
    one of them, and LIKE finds that for a fraction of what ILIKE costs. None if no piece
    qualifies."""
    best: tuple[tuple[bool, bool], list[str]] | None = None
    for i in range(len(needle) - 1):
        piece = needle[i : i + 2]
        variants = case_variants(piece, folds)
        if variants is None:
            continue
        rank = (not any(not ch.isalpha() for ch in piece), piece.lower() in COMMON_PAIRS)
        if best is None or rank < best[0]:
            best = (rank, variants)
    return best[1] if best else None


def _own_first(ch: str, chars) -> list[str]:
    return sorted(chars, key=lambda c: (c != ch, c))


def case_variants(needle: str, folds: dict[str, frozenset[str]] | None) -> list[str] | None:
    """Every string ILIKE takes for ``needle`` (so LIKE on each is the same match), or None when
    there are more than MAX_VARIANTS or the folding is not known for a character."""
    if folds is None or any(ord(ch) > 0xFFFF for ch in needle):
        return None
    variants = [""]
    for ch in needle:
        variants = [v + c for v in variants for c in _own_first(ch, folds.get(ch, (ch,)))]
        if len(variants) > MAX_VARIANTS:
            return None
    return variants


def _schemas(cursor) -> dict[str, str]:
    """Where the functions go and where unaccent lives. Calls inside the function bodies are
    schema-qualified: pg_restore runs with an empty search_path, and the generated columns call
    these functions while a dump is restored."""
    cursor.execute("SELECT current_schema()")
    schema = cursor.fetchone()[0]
    cursor.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'unaccent'"
    )
    unaccent = cursor.fetchone()[0]
    return {"s": f'"{schema}"', "u": f'"{unaccent}"'}


def create_statements(cursor) -> Iterator[str]:
    yield "CREATE EXTENSION IF NOT EXISTS pg_trgm"
    yield "CREATE EXTENSION IF NOT EXISTS unaccent"
    where = _schemas(cursor)
    for statement in FUNCTIONS:
        yield statement % {"cap": TSVECTOR_CHARS, "cjk": CJK, **where}
    for index, column in COLUMNS.items():
        yield (
            f"ALTER TABLE {MESSAGE_TABLE} ADD COLUMN IF NOT EXISTS {column} tsvector "
            f"GENERATED ALWAYS AS ({VECTORS[index]}) STORED"
        )
        yield (
            f"CREATE INDEX IF NOT EXISTS {INDEX_NAMES[index]} ON {MESSAGE_TABLE} "
            f"USING gin ({column}) WHERE {INDEXED}"
        )
    yield (
        f"CREATE INDEX IF NOT EXISTS {INDEX_NAMES['trigram']} ON {MESSAGE_TABLE} "
        f"USING gin (content gin_trgm_ops) WHERE {INDEXED}"
    )
    yield (
        f"CREATE INDEX IF NOT EXISTS {INDEX_NAMES['tool_trigram']} ON {MESSAGE_TABLE} "
        f"USING gin (hermes_tool_text(tool_calls) gin_trgm_ops) WHERE {INDEXED}"
    )
    yield from planned_function_statements()
    yield from common_statements()


def drop_statements() -> Iterator[str]:
    for name in INDEX_NAMES.values():
        yield f"DROP INDEX IF EXISTS {name}"
    for column in COLUMNS.values():
        yield f"ALTER TABLE {MESSAGE_TABLE} DROP COLUMN IF EXISTS {column}"
    for name in ("hermes_phrase", "hermes_bigrams", "hermes_bigram_run", "hermes_words"):
        yield f"DROP FUNCTION IF EXISTS {name}"
    yield "DROP FUNCTION IF EXISTS hermes_fold"
    yield "DROP FUNCTION IF EXISTS hermes_search_text"
    yield "DROP FUNCTION IF EXISTS hermes_tool_text"
    yield from drop_planned_function_statements()
    yield from drop_common_statements()


def install(cursor) -> None:
    for statement in create_statements(cursor):
        cursor.execute(statement)


def indexed_count(cursor) -> int:
    cursor.execute(f"SELECT count(*) FROM {MESSAGE_TABLE} WHERE {INDEXED}")
    return cursor.fetchone()[0]


def invalid_indexes(cursor) -> list[str]:
    """Search indexes that are missing, or that a failed concurrent build left unusable."""
    cursor.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE c.relname = ANY(%s) AND i.indisvalid AND i.indisready",
        [list(INDEX_NAMES.values())],
    )
    valid = {row[0] for row in cursor.fetchall()}
    return [name for name in INDEX_NAMES.values() if name not in valid]
