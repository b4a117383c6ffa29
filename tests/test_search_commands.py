from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from search import fts, pg, pg_trigram, rows
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Message


@pytest.fixture
def session(db):
    channel = create_channel("cli")[0]
    session = services.open_session(channel, model="gpt-4", system_prompt="sys").session
    services.append_messages(
        session,
        [
            {"role": "user", "content": "where is the 缓存 config for nginx?"},
            {"role": "assistant", "content": "In /etc/nginx/conf.d/cache.conf."},
            {"role": "user", "content": "and the flamingo note?"},
        ],
    )
    services.rollback_messages(session, 1)
    return session


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_search_prints_hits_with_their_position_and_excerpt(session):
    out, _ = run("search", "缓存")
    assert "1 hit(s) from the bigram index" in out
    assert f"{session.pk} #1/4 user live" in out
    assert "缓存" in out


def test_search_json_has_the_api_shape(session):
    out, _ = run("search", "nginx", "--json", "--window", "1")
    body = json.loads(out)
    assert body["index"] == "words"
    assert len(body["hits"]) == 2
    assert {"excerpt_html", "window", "bookmarks"} <= body["hits"][0].keys()


def test_search_json_is_what_the_api_answers_times_in_utc_with_z_and_no_queue_chatter(
    session, capfd
):
    out, err = run("search", "nginx", "--json", "--window", "1")
    body = json.loads(out)
    created = body["hits"][0]["message"]["created_at"]
    assert created.endswith("Z") and "T" in created, created
    assert all(row["created_at"].endswith("Z") for row in body["hits"][0]["window"])
    assert isinstance(body["hits"][0]["session"]["id"], str)
    assert body["total"] == 2 and body["total_exact"] is True
    assert err == "" and "Enqueued" not in capfd.readouterr().err


def test_rolled_back_hits_count_in_the_total_and_name_the_scan(session):
    body = json.loads(run("search", "flamingo", "--include-rolled-back", "--json")[0])
    assert len(body["hits"]) == 1 and body["hits"][0]["rolled_back"] is True
    assert body["total"] == 1 and body["index"] == "scan"


def test_search_can_include_rolled_back_rows(session):
    assert run("search", "flamingo")[0].startswith("No hits")
    out, _ = run("search", "flamingo", "--include-rolled-back")
    assert "[rolled back]" in out


def test_search_refuses_bad_arguments(session):
    with pytest.raises(CommandError, match="limit"):
        run("search", "x", "--limit", "0")
    with pytest.raises(CommandError, match="empty"):
        run("search", " ")


def test_reindex_rebuilds_every_index_and_checks_it(session):
    if connection.vendor != "sqlite":
        pytest.skip("empties SQLite's FTS5 tables; the PostgreSQL variant is the next test")
    with connection.cursor() as cursor:
        # Damage: empty the indexes behind the triggers' back.
        for _, t, _ in fts.tables():
            cursor.execute(f"INSERT INTO {t}({t}) VALUES('delete-all')")
    # The trigram index answers for a word of three letters or more, and what it does not find
    # no scan is sent to find: the damage shows as no hits until the indexes are rebuilt.
    assert "No hits (tried words → trigram)" in run("search", "nginx")[0]
    # Terms no index can look up (two characters) still go to the bounded scan.
    assert "from the scan index" in run("search", "ng")[0]
    out, err = run("reindex")
    indexed = (
        Message.objects.filter(active=True).count()
        + Message.objects.filter(compressed=True).count()
    )
    assert f"Reindexed {indexed:,} messages" in out
    assert "integrity check passed" in out
    assert "reindex" in err  # the progress bar goes to stderr
    assert "2 hit(s) from the words index" in run("search", "nginx")[0]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # REINDEX CONCURRENTLY cannot run in a transaction
def test_reindex_on_postgresql_recreates_a_dropped_index_and_checks_them_all():
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: runs in the PostgreSQL pass of ./bin/test")
    channel = create_channel("cli-pg")[0]
    session = services.open_session(channel, model="gpt-4", system_prompt="sys").session
    services.append_messages(session, [{"role": "user", "content": "the nginx cache"}])
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {pg.INDEX_NAMES['words']}")
        assert pg.invalid_indexes(cursor) == [pg.INDEX_NAMES["words"]]
        cursor.execute(f"DROP FUNCTION {pg.WALK_PLAN}(text)")  # the substring route's walk
        cursor.execute(f"DROP FUNCTION {rows.PAGE_HITS}(bigint[])")  # every page's hits
        cursor.execute(f"DROP TABLE {pg.COMMON}")  # the words a first lookup plans for
        cursor.execute(f"DROP FUNCTION {pg_trigram.FIRST}{pg_trigram.SIGNATURE}")  # a fragment's
        cursor.execute("DELETE FROM pg_statistic WHERE starelid = 'sessions_app_message'::regclass")
    out, err = run("reindex")
    assert "Reindexed 2 messages" in out and "every index valid" in out
    assert "reindex" in err
    with connection.cursor() as cursor:
        assert pg.invalid_indexes(cursor) == []
        # The planner's statistics for the rebuilt table are fresh (reindex analyzed it).
        cursor.execute("SELECT count(*) FROM pg_stats WHERE tablename = 'sessions_app_message'")
        assert cursor.fetchone()[0] > 0
        # ...and the common words read from them (in two messages, every word is common).
        cursor.execute(f"SELECT idx FROM {pg.COMMON} WHERE lexeme = 'nginx' ORDER BY idx")  # noqa: S608
        assert [row[0] for row in cursor.fetchall()] == ["bigram", "words"]
    assert "1 hit(s) from the words index" in run("search", "nginx")[0]
    assert "1 hit(s) from the trigram index" in run("search", "ginx cach")[0]  # walked again
    assert "1 hit(s) from the trigram index" in run("search", "ginx")[0]  # its first step again


def test_a_query_with_no_hits_says_so_plainly(session):
    out, _ = run("search", "zzyzx-nowhere")
    assert out.startswith("No hits (tried ") and "no index" not in out


@pytest.mark.slow
def test_a_query_that_is_not_utf8_is_a_clear_error_not_a_traceback(tmp_path):
    import subprocess
    import sys

    from tests.processes import ROOT, isolated_env

    with isolated_env(tmp_path) as env:
        result = subprocess.run(
            [sys.executable, "manage.py", "search", "--", b"\xff"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            timeout=120,
            check=False,
        )
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 1
    assert "not valid UTF-8" in stderr
    assert "Traceback" not in stderr


@pytest.mark.slow
def test_a_reader_that_stops_early_gets_no_traceback(tmp_path):
    import subprocess
    import sys

    from tests.processes import ROOT, isolated_env, python

    with isolated_env(tmp_path) as env:
        python("manage.py", "setup_demo", env=env)
        process = subprocess.Popen(
            [sys.executable, "manage.py", "search", "缓存", "--limit", "100", "--window", "5"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        process.stdout.readline()  # `| head -1`: read a line, then go away
        process.stdout.close()
        stderr = process.stderr.read().decode("utf-8", "replace")
        process.wait(timeout=120)
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr
