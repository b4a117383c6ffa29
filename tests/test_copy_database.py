"""``manage.py copy_database``, run as an operator runs it: everything moves with ids and
references intact, counts are verified, and the copy is a working service database (search
answers, new rows get new ids). The source is this pass's backend; targets are a SQLite file and,
where it answers, a fresh PostgreSQL database."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.processes import ROOT, _admin_connection, isolated_env, on_postgres

pytestmark = pytest.mark.slow  # real processes: servers, workers, copies

POSTGRES = os.environ.get("HERMES_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/hermes")

POPULATE = """
import django; django.setup()
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from compression.engine.compress import compress
from sessions_app import services
from sessions_app.keys import create_channel
from tests.test_compression import turn
channel = create_channel("copy")[0]
session = services.open_session(channel, model="gpt-4o", system_prompt="s").session
services.append_messages(
    session,
    [m for n in range(12) for m in turn(n)]
    + [{"role": "user", "content": "数据库迁移失败了 zebra-fact"}]
    + [m for n in range(12, 20) for m in turn(n)],
    run_hooks=False,
)
compress(session)
services.rollback_messages(session, 1)
user = get_user_model().objects.create_user("viewer", "", "x" * 20, is_staff=True)
user.user_permissions.add(Permission.objects.get(codename="view_message"))
"""

DESCRIBE = """
import django, json; django.setup()
from django.contrib.auth import get_user_model
from compression.models import CompressionEvent
from search.service import search
from sessions_app import services
from sessions_app.models import Message, Session
perm = get_user_model().objects.get(username="viewer").user_permissions.get()
rows = list(Message.objects.order_by("pk").values_list("pk", "summarized_by_id", "active"))
found = [h.message.pk for h in search("迁移").hits] + [h.message.pk for h in search("zebra").hits]
event = CompressionEvent.objects.get()
state = {
    "rows": rows,
    "found": found,
    "event_summary": event.summary_message_id,
    "permission": [perm.codename, perm.content_type.app_label],
    "times": [
        [str(t) for t in Message.objects.order_by("pk").values_list("created_at", flat=True)],
        [str(t) for t in Session.objects.values_list("created_at", "last_activity_at").get()],
        str(event.created_at),
    ],
}
if len(__import__("sys").argv) > 1:  # and then write: the copy must take new rows
    services.append_messages(Session.objects.get(), [{"role": "user", "content": "after"}])
    state["new_id"] = Message.objects.order_by("-pk").first().pk
print(json.dumps(state))
"""


def _run(args: list[str], env: dict[str, str], *, check: bool = True):
    result = subprocess.run(
        args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


def _describe(env: dict[str, str], *, write: bool = False) -> dict:
    args = [sys.executable, "-c", DESCRIBE] + (["write"] if write else [])
    return json.loads(_run(args, env).stdout.strip().splitlines()[-1])


def _copy_and_compare(env: dict[str, str], url: str) -> str:
    _run([sys.executable, "-c", POPULATE], env)
    before = _describe(env)
    out = _run([sys.executable, "manage.py", "copy_database", url], env).stdout
    assert "Copied; every count matches." in out
    assert "sessions_app.Message" in out and "MISMATCH" not in out
    after = _describe({**env, "HERMES_DATABASE_URL": url}, write=True)
    assert after.pop("new_id") > max(pk for pk, _, _ in before["rows"])
    assert after == before
    assert before["found"] and before["event_summary"]
    assert before["permission"] == ["view_message", "sessions_app"]
    again = _run([sys.executable, "manage.py", "copy_database", url], env, check=False)
    assert again.returncode != 0 and "already holds data" in again.stderr
    return out


def test_copying_into_an_empty_sqlite_file_moves_every_row_and_verifies(tmp_path: Path):
    with isolated_env(tmp_path) as env:
        _copy_and_compare(env, f"sqlite:///{tmp_path / 'copy.sqlite3'}")


@pytest.mark.postgres
def test_copying_into_postgresql_makes_a_working_database(tmp_path: Path):
    try:
        admin = _admin_connection(POSTGRES)
    except Exception as exc:  # no PostgreSQL on this machine: say so
        pytest.skip(f"PostgreSQL at {POSTGRES} does not answer: {exc}")
    name = f"hermes_copy_{uuid.uuid4().hex[:10]}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with isolated_env(tmp_path) as env:
            out = _copy_and_compare(env, POSTGRES.rsplit("/", 1)[0] + f"/{name}")
        assert "Analyzed the copied tables" in out
        import psycopg

        with psycopg.connect(POSTGRES.rsplit("/", 1)[0] + f"/{name}") as target:
            stats = target.execute(
                "SELECT count(*) FROM pg_stats WHERE tablename = 'sessions_app_message'"
            ).fetchone()[0]
        assert stats > 0  # the planner has statistics from the first query on
    finally:
        with _admin_connection(POSTGRES) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_copying_refuses_a_url_that_is_not_a_database(tmp_path: Path):
    with isolated_env(tmp_path) as env:
        result = _run(
            [sys.executable, "manage.py", "copy_database", "ftp://example.org/x"], env, check=False
        )
    assert result.returncode != 0
    assert "is not a database URL" in result.stderr


def test_an_unreachable_target_is_a_clear_error_and_copies_nothing(tmp_path: Path):
    with isolated_env(tmp_path) as env:
        result = _run(
            [sys.executable, "manage.py", "copy_database", "postgres://nobody@127.0.0.1:1/x"],
            env,
            check=False,
        )
    assert result.returncode != 0
    assert "Cannot open the target database (127.0.0.1)" in result.stderr
    assert "Traceback" not in result.stderr


STALE_GRANT = """
import django; django.setup()
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
ghost = ContentType.objects.create(app_label="retired_app", model="ghost")
perm = Permission.objects.create(content_type=ghost, codename="view_ghost", name="Can view ghost")
get_user_model().objects.get(username="viewer").user_permissions.add(perm)
"""


def test_grants_of_permissions_the_target_lacks_are_reported_and_skipped(tmp_path: Path):
    """A permission of an app no longer installed exists only in the source: its grants cannot
    be copied, and the copy says so instead of failing half-way."""
    url = f"sqlite:///{tmp_path / 'copy.sqlite3'}"
    with isolated_env(tmp_path) as env:
        _run([sys.executable, "-c", POPULATE], env)
        _run([sys.executable, "-c", STALE_GRANT], env)
        result = _run([sys.executable, "manage.py", "copy_database", url], env)
        after = _describe({**env, "HERMES_DATABASE_URL": url})
    assert "Not copied: grants of 1 permission(s)" in result.stderr
    assert "view_ghost" in result.stderr
    assert "Copied; every count matches." in result.stdout
    assert after["permission"] == ["view_message", "sessions_app"]


@pytest.mark.postgres
def test_a_postgresql_dump_restores_into_a_working_database(tmp_path: Path):
    """The documented backup (pg_dump / pg_restore) brings back every row and the search indexes
    (the generated columns call our functions while the dump is restored)."""
    if not on_postgres():
        pytest.skip("PostgreSQL only: runs in the PostgreSQL pass of ./bin/test")
    if not shutil.which("pg_dump") or not shutil.which("pg_restore"):
        pytest.skip("pg_dump / pg_restore are not installed (Debian: postgresql-client)")
    name = f"hermes_restore_{uuid.uuid4().hex[:10]}"
    with isolated_env(tmp_path) as env:
        _run([sys.executable, "-c", POPULATE], env)
        before = _describe(env)
        source = env["HERMES_DATABASE_URL"]
        dump = tmp_path / "hermes.dump"
        _run(["pg_dump", "-Fc", "-f", str(dump), "--dbname", source], env)
        with _admin_connection(POSTGRES) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        try:
            target = source.rsplit("/", 1)[0] + f"/{name}"
            _run(
                ["pg_restore", "--exit-on-error", "--no-owner", "--dbname", target, str(dump)], env
            )
            after = _describe({**env, "HERMES_DATABASE_URL": target}, write=True)
        finally:
            with _admin_connection(POSTGRES) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    after.pop("new_id")
    assert after == before and before["found"]


def test_targets_that_cannot_hold_the_copy_are_refused_before_anything_is_written(
    tmp_path: Path,
):
    import sqlite3

    foreign = tmp_path / "foreign.sqlite3"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    with isolated_env(tmp_path) as env:
        same = env.get("HERMES_DATABASE_URL") or f"sqlite:///{tmp_path / 'hermes.sqlite3'}"
        cases = {
            "mysql://app@127.0.0.1/hermes": "must be PostgreSQL",
            "postgres://app@127.0.0.1": "names no database",
            "sqlite://": "names no database",
            same: "the database this service already uses",
            f"sqlite:///{foreign}": "table(s) of something else",
        }
        for url, message in cases.items():
            result = _run([sys.executable, "manage.py", "copy_database", url], env, check=False)
            assert result.returncode != 0, url
            assert message in result.stderr, (url, result.stderr[-500:])
            assert "Traceback" not in result.stderr, url
    with sqlite3.connect(foreign) as db:  # not migrated into
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert tables == {"invoices"}


OPERATOR_SCHEDULE = """
import django; django.setup()
from django_q.models import Schedule
trim = Schedule.objects.get(func="search.tasks.trim_recent_index")
fields = {"name": trim.name, "func": trim.func, "schedule_type": "I", "minutes": 1, "repeats": -1}
taken = trim.pk
trim.delete()  # an operator's own schedule took the id the target gives the trim schedule
Schedule.objects.create(id=taken, name="operator nightly", func="math.floor", schedule_type="D")
Schedule.objects.create(id=taken + 50, **fields)
"""

TARGET_SCHEDULES = """
import django, json; django.setup()
from django_q.models import Schedule
print(json.dumps(sorted(Schedule.objects.values_list("name", flat=True))))
"""


def test_schedules_are_copied_by_name_whatever_ids_they_had(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'copy.sqlite3'}"
    with isolated_env(tmp_path) as env:
        _run([sys.executable, "-c", OPERATOR_SCHEDULE], env)
        _run([sys.executable, "manage.py", "copy_database", url], env)
        names = json.loads(
            _run([sys.executable, "-c", TARGET_SCHEDULES], {**env, "HERMES_DATABASE_URL": url})
            .stdout.strip()
            .splitlines()[-1]
        )
    assert "operator nightly" in names
    assert len(names) == len(set(names))  # none doubled
