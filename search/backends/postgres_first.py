"""PostgreSQL: a fragment's first step through search.pg_trigram's kept plans (its patterns,
its call) and its first lookup in one round trip (search.pg_trigram.HEAD_OR_FIRST), for the
trigram route of search.backends.postgres."""

from __future__ import annotations

from django.db import connection

from search import pg, pg_trigram, ranked
from search.backends.common import like_pattern
from search.filters import Filters
from search.query import Route
from search.rows import FirstPage, call_with_first_page


def folds() -> dict[str, frozenset[str]] | None:
    """This database's case folds (search.pg.case_folds), read once per database."""
    settings = connection.settings_dict
    with connection.cursor() as cursor:
        return pg.case_folds(cursor, (settings["HOST"], settings["PORT"], settings["NAME"]))


def first_patterns(needle: str) -> tuple[list[str] | None, str | None]:
    """A fragment's patterns as search.pg_trigram.FIRST takes them: its case variants for LIKE
    and no ILIKE pattern, or a two-character piece's variants (the probe's narrowing, or none)
    and the ILIKE pattern -- the clauses search.backends.postgres writes out for it."""
    known = folds()
    variants = pg.case_variants(needle, known)
    if variants is not None:
        return [like_pattern(v) for v in variants], None
    pairs = pg.narrowing_pair(needle, known)
    return (None if pairs is None else [like_pattern(p) for p in pairs]), like_pattern(needle)


def first_step(
    needle: str, channel_id: int | None, probe: int, want: int, along: FirstPage | None
) -> tuple[str, list]:
    """search.pg_trigram's first step for one fragment: the call (FIRST, or FIRST_PAGE with
    ``along``) and its parameters but the bounds (the lowest id, the upper), which go fourth
    and fifth."""
    like, pattern = first_patterns(needle)
    if along is None:
        return f"{pg_trigram.FIRST}(%s, %s, %s, %s, %s, %s, %s)", [
            like, pattern, channel_id, probe, want,
        ]  # fmt: skip
    return f"{pg_trigram.FIRST_PAGE}(%s, %s, %s, %s, %s, %s, %s, %s)", [
        like, pattern, channel_id, probe, want, along.size + 1,
    ]  # fmt: skip


def lookup_and_first_step(
    route: Route, filters: Filters, probe: int, first: int, along: FirstPage | None
) -> tuple[ranked.Best | None, tuple[int | None, int | None], list[tuple] | None] | None:
    """A fragment's entry and, when it has none, its first step, in one round trip
    (search.pg_trigram.HEAD_OR_FIRST; they were two: the entry with the bounds, then the step,
    0.3-0.9 ms each at 1,000,000 messages). (the entry, the bounds, None) or (None, the bounds,
    the step's rows); None when its entry went between the function's read and the entry's
    (then as before)."""
    like, pattern = first_patterns(route.phrases[0][0])
    params = [route.index, route.expression, ranked.scope(filters.channel_id), like, pattern]
    params += [filters.channel_id, probe, filters.rank_window_size]
    params.append(None if along is None else along.size + 1)
    call = f"SELECT * FROM {pg_trigram.HEAD_OR_FIRST}(%s, %s, %s, %s, %s, %s, %s, %s, %s)"
    head = ranked.head_call(route.index, route.expression, filters.channel_id, first)
    with connection.cursor() as cursor:
        found = call_with_first_page(cursor, call, params, along, then=head)
        cursor.nextset()
        entry = cursor.fetchall()
    was_absent, lowest, highest = found[0][:3]
    if was_absent:
        return None, (lowest, highest), [row[3:] for row in found if row[3] is not None]
    best = ranked.from_head(entry)
    return None if best is None else (best, (lowest, highest), None)
