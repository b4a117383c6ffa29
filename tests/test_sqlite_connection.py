"""A service process's SQLite connection: by default no memory map and an 8 MiB page cache
(SQLite drops a connection's cache and unmaps its map on its first read after another
connection wrote: docs/configuration.md), and what a config sets instead."""

from __future__ import annotations

import pytest

from tests.processes import isolated_env, on_postgres, python

pytestmark = pytest.mark.skipif(
    on_postgres(), reason="SQLite's settings; this pass is on PostgreSQL"
)

READ = """
import django
django.setup()
from django.db import connection
with connection.cursor() as cursor:
    seen = []
    for pragma in ("cache_size", "mmap_size", "journal_mode"):
        cursor.execute(f"PRAGMA {pragma}")
        seen.append(str(cursor.fetchone()[0]))
print(" ".join(seen))
"""


def test_a_service_connection_has_no_memory_map_and_an_8_mib_cache_by_default(tmp_path):
    with isolated_env(tmp_path) as env:
        assert python("-c", READ, env=env).split() == ["-8192", "0", "wal"]


def test_a_config_can_turn_the_cache_and_the_map_up_for_a_database_read_far_more_than_written(
    tmp_path,
):
    server = "  sqlite_cache_mib: 64\n  sqlite_mmap_mib: 256\n"
    with isolated_env(tmp_path, server=server) as env:
        assert python("-c", READ, env=env).split() == [str(-64 * 1024), str(256 * 2**20), "wal"]


@pytest.mark.django_db
def test_a_cursor_converts_each_statement_text_once_and_runs_it_as_django_s_would():
    from django.db import connection

    from core.sqlite_backend import base

    base._qmark.cache_clear()
    with connection.cursor() as cursor:
        for _ in range(3):
            cursor.execute("SELECT %s, '100%%', %s", ["a", 2])
            assert cursor.fetchone() == ("a", "100%", 2)
        cursor.execute("SELECT %(x)s || %(y)s", {"x": "named ", "y": "too"})
        assert cursor.fetchone() == ("named too",)
        long = "SELECT %s" + " " * base._CACHED_UP_TO
        cursor.execute(long, [1])
        assert cursor.fetchone() == (1,)
    info = base._qmark.cache_info()
    assert (info.misses, info.hits) == (1, 2)  # the long one and the named one not kept
