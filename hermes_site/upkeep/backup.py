"""Backups and restores of the store (``manage.py backup`` / ``restore``).

SQLite: the online backup API, from one read transaction: one consistent snapshot however long
it takes, while the service keeps appending (WAL), with the row counts read in that transaction
to check the copy against. Written as ``PATH.partial``, renamed only once verified.

PostgreSQL: ``pg_dump`` (custom format) from an exported snapshot whose row counts were read in
the same transaction, verified by reading the dump back with ``pg_restore``; restores go through
``pg_restore`` in a single transaction, so a failed restore changes nothing.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from core.text import counted
from hermes_site.upkeep.holders import local_service, sqlite_holders
from search import fts

SQLITE_MAGIC = b"SQLite format 3\x00"
# What makes a file this service's database, not any SQLite file.
REQUIRED_TABLES = (
    "django_migrations",
    "sessions_app_channel",
    "sessions_app_session",
    fts.MESSAGE_TABLE,
    fts.STATE_TABLE,
)
PAGES_PER_STEP = 1024  # 4 MiB with 4 KiB pages: a progress tick every few milliseconds

Progress = Callable[[int, int], None]  # (pages copied, pages in all)


class BackupError(Exception):
    """A message an operator can act on; whatever was refused was not changed."""


@dataclass
class Verification:
    """What a copy was checked for and what it holds."""

    messages: int
    sessions: int
    checks: list[str] = field(default_factory=list)


def check_destination(path: Path) -> Path:
    """Refuse a destination the backup could not be written to, before copying anything;
    returns the ``.partial`` file the copy is written to first (created, empty)."""
    parent = path.parent
    if path.is_dir():
        raise BackupError(f"{path} is a directory: give a file name inside it")
    if path.exists():
        raise BackupError(f"{path} already exists: choose a new name (a backup never overwrites)")
    if not parent.is_dir():
        raise BackupError(f"{parent} does not exist: create the directory first")
    partial = path.with_name(path.name + ".partial")
    try:
        partial.unlink(missing_ok=True)
        with open(partial, "xb"):
            pass
    except OSError as exc:
        raise BackupError(f"{parent} is not writable ({exc.strerror})") from None
    return partial


def publish(partial: Path, path: Path) -> None:
    os.replace(partial, path)
    _sync_dir(path.parent)


def _sync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --- SQLite -------------------------------------------------------------------------------------


def _counts(conn: sqlite3.Connection) -> tuple[int, int]:
    messages = conn.execute(f"SELECT count(*) FROM {fts.MESSAGE_TABLE}").fetchone()[0]
    sessions = conn.execute("SELECT count(*) FROM sessions_app_session").fetchone()[0]
    return messages, sessions


def sqlite_backup(
    source: Path, partial: Path, progress: Progress | None = None, timeout: float = 20
) -> tuple[int, int]:
    """Copy ``source`` into ``partial`` from one snapshot; the (messages, sessions) it held."""
    src = sqlite3.connect(source, timeout=timeout, isolation_level=None)
    try:
        # One read transaction for the whole copy: every step reads the same snapshot (a step
        # of its own would see other connections' commits and start the copy over, and under
        # steady appends never finish), and the counts below are the snapshot's.
        src.execute("BEGIN")
        try:
            expected = _counts(src)
        except sqlite3.DatabaseError as exc:
            raise BackupError(f"the database cannot be read: {exc}") from None
        dst = sqlite3.connect(partial, isolation_level=None)
        try:

            def tick(_status: int, remaining: int, total: int) -> None:
                if progress is not None:
                    progress(total - remaining, total)

            src.backup(dst, pages=PAGES_PER_STEP, progress=tick)
            # A self-contained file: no -wal beside it to forget when it is moved.
            dst.execute("PRAGMA journal_mode=DELETE")
        finally:
            dst.close()
        src.execute("COMMIT")
    finally:
        src.close()
    return expected


def verify_sqlite(
    path: Path, expected: tuple[int, int] | None = None, *, shown: Path | None = None
) -> Verification:
    """Check that ``path`` is a sound copy of this service's database; raises BackupError
    saying what is wrong (naming ``shown``, if given, instead of ``path``). ``expected``: the
    (messages, sessions) it must hold. Opens ``path`` for writing (FTS5's integrity-check is an
    INSERT): give it a copy, never the live database."""
    try:
        return _verify_sqlite(path, expected)
    except BackupError as exc:
        if shown is None:
            raise
        raise BackupError(str(exc).replace(str(path), str(shown))) from None


def _verify_sqlite(path: Path, expected: tuple[int, int] | None) -> Verification:
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise BackupError(f"{path} cannot be read ({exc.strerror})") from None
    if head != SQLITE_MAGIC:
        raise BackupError(f"{path} is not a SQLite database")
    try:
        conn = sqlite3.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        raise BackupError(f"{path} cannot be opened: {exc}") from None
    checks: list[str] = []
    try:
        try:
            problems = [row[0] for row in conn.execute("PRAGMA integrity_check(20)")]
            if problems != ["ok"]:
                raise BackupError(f"{path} is damaged: " + "; ".join(problems[:5]))
            checks.append("PRAGMA integrity_check: ok")
            names = {
                row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            missing = [t for t in REQUIRED_TABLES if t not in names]
            missing += [t for _, t, _ in fts.tables() if t not in names]
            if missing:
                raise BackupError(
                    f"{path} is not a Hermes Memory database (no table {', '.join(missing[:3])})"
                )
            for _, table, _ in fts.tables():
                conn.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
            checks.append(f"FTS5 integrity-check: {len(list(fts.tables()))} search tables ok")
            indexed = conn.execute(
                f"SELECT count(*) FROM {fts.MESSAGE_TABLE} WHERE active OR compressed"
            ).fetchone()[0]
            for index in fts.INDEXES:
                table = fts.table(index)
                rows = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                if rows != indexed:
                    raise BackupError(
                        f"{path}: the search index {table} holds {rows} rows, "
                        f"the messages {indexed} (run manage.py reindex after restoring)"
                    )
            checks.append(f"search indexes complete: {indexed} searchable messages in each")
            messages, sessions = _counts(conn)
        except sqlite3.DatabaseError as exc:
            raise BackupError(f"{path} is damaged: {exc}") from None
    finally:
        conn.close()
    return _matched(path, messages, sessions, expected, checks, "when it was copied")


def sqlite_restore(backup: Path, db: Path, *, force: bool = False) -> tuple[Verification, Path]:
    """Put ``backup`` in place of ``db``; returns what it holds and where the old database was
    moved. Refuses (changing nothing) a file that does not verify, and -- unless ``force`` --
    a database that other processes have open."""
    if not backup.is_file():
        raise BackupError(f"{backup}: no such file")
    holders = sqlite_holders(db)
    if holders and not force:
        shown = "; ".join(f"pid {pid}: {cmd}" for pid, cmd in holders[:5])
        raise BackupError(
            f"the service appears to be running (it has the database open, or is this "
            f"project's web server or worker): {shown}. Stop the web "
            "server and the worker first (or pass --force if you know these processes will "
            "not write)"
        )
    if holders is None and not force:
        raise BackupError(
            "cannot tell whether the service is running on this system (no /proc): stop the "
            "web server and the worker, then run again with --force"
        )
    staging = db.with_name(db.name + ".restoring")
    try:
        shutil.copyfile(backup, staging)
    except OSError as exc:
        staging.unlink(missing_ok=True)
        raise BackupError(f"cannot copy {backup} next to the database ({exc.strerror})") from None
    try:
        verification = verify_sqlite(staging, shown=backup)
    except BackupError as exc:
        staging.unlink(missing_ok=True)
        raise BackupError(f"refused, nothing was changed: {exc}") from None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    aside = db.with_name(f"{db.name}.before-restore-{stamp}")
    # The old database with its WAL (which may hold committed pages not yet copied back):
    # moved aside together, under one name, so SQLite can still open it there.
    if db.exists():
        os.replace(db, aside)
        if Path(f"{db}-wal").exists():
            os.replace(f"{db}-wal", f"{aside}-wal")
    Path(f"{db}-shm").unlink(missing_ok=True)  # an index of the old WAL: stale now
    os.replace(staging, db)
    _sync_dir(db.parent)
    return verification, aside


# --- PostgreSQL ---------------------------------------------------------------------------------


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise BackupError(
            f"{name} not found: install PostgreSQL's client tools, the server's major version "
            "or newer (Debian: apt-get install postgresql-client)"
        )
    return found


def pg_env(settings: Mapping) -> dict[str, str]:
    """The connection as libpq's environment: nothing secret on a command line."""
    env = dict(os.environ)
    for key, var in (
        ("HOST", "PGHOST"),
        ("PORT", "PGPORT"),
        ("USER", "PGUSER"),
        ("PASSWORD", "PGPASSWORD"),
        ("NAME", "PGDATABASE"),
    ):
        if settings.get(key):
            env[var] = str(settings[key])
    sslmode = (settings.get("OPTIONS") or {}).get("sslmode")
    if sslmode:
        env["PGSSLMODE"] = str(sslmode)
    return env


def _run(args: list[str], env: dict[str, str], what: str) -> str:
    result = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        detail = result.stderr.strip().splitlines()
        raise BackupError(f"{what} failed: {detail[-1] if detail else 'no message'}")
    return result.stdout


def _copy_rows(path: Path, table: str, env: dict[str, str]) -> int:
    """Rows of ``table`` in a custom-format dump: its COPY data read back by pg_restore, one
    line a row (COPY's text format escapes newlines inside values)."""
    args = [_tool("pg_restore"), "--data-only", f"--table={table}", "-f", "-", str(path)]
    with subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        rows, inside = 0, False
        for line in process.stdout or ():
            if inside:
                if line == b"\\.\n":
                    inside = False
                else:
                    rows += 1
            elif line.startswith(b"COPY "):
                inside = True
        error = process.stderr.read().decode(errors="replace").strip() if process.stderr else ""
    if process.returncode != 0:
        raise BackupError(f"{path} cannot be read by pg_restore: {error or 'no message'}")
    return rows


def verify_pg(
    path: Path, env: dict[str, str], expected: tuple[int, int] | None = None
) -> Verification:
    """Read a custom-format dump back: its table of contents, then the rows of the messages
    and sessions tables."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(5)
    except OSError as exc:
        raise BackupError(f"{path} cannot be read ({exc.strerror})") from None
    if head != b"PGDMP":
        raise BackupError(f"{path} is not a pg_dump custom-format file")
    listing = _run([_tool("pg_restore"), "--list", str(path)], env, f"reading {path}")
    for table in REQUIRED_TABLES[:4]:
        if f"TABLE DATA public {table} " not in listing:
            raise BackupError(f"{path} is not a Hermes Memory database (no table {table})")
    checks = ["pg_restore --list: the dump's table of contents reads"]
    messages = _copy_rows(path, fts.MESSAGE_TABLE, env)
    sessions = _copy_rows(path, "sessions_app_session", env)
    return _matched(path, messages, sessions, expected, checks, "at the dump's snapshot")


def pg_backup(partial: Path, settings: Mapping) -> tuple[int, int]:
    """``pg_dump -Fc`` of the configured database from a snapshot exported by a transaction
    that read the row counts; returns those counts."""
    from django.db import connection, transaction

    pg_dump = _tool("pg_dump")
    env = pg_env(settings)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        cursor.execute("SELECT pg_export_snapshot()")
        snapshot = cursor.fetchone()[0]
        cursor.execute(f"SELECT count(*) FROM {fts.MESSAGE_TABLE}")
        messages = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM sessions_app_session")
        sessions = cursor.fetchone()[0]
        _run(
            [pg_dump, "--format=custom", f"--snapshot={snapshot}", "-f", str(partial)],
            env,
            "pg_dump",
        )
    return messages, sessions


def pg_others(settings: Mapping) -> list[tuple[int, str]]:
    """Other sessions connected to the configured database: a running service."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, coalesce(nullif(application_name, ''), client_addr::text, 'local') "
            "FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
        return [(pid, str(name)) for pid, name in cursor.fetchall()]


def pg_restore(path: Path, settings: Mapping, *, force: bool = False) -> Verification:
    """Replace the configured database's tables with the dump's, in one transaction (a failed
    restore leaves it as it was). Verifies the dump first."""
    from django.db import connection

    if not path.is_file():
        raise BackupError(f"{path}: no such file")
    env = pg_env(settings)
    try:
        verification = verify_pg(path, env)
    except BackupError as exc:
        raise BackupError(f"refused, nothing was changed: {exc}") from None
    others = [f"connection pid {pid} ({name})" for pid, name in pg_others(settings)]
    others += [f"pid {pid}: {command}" for pid, command in local_service()]
    if others and not force:
        raise BackupError(
            f"the service appears to be running: {'; '.join(others[:5])}. "
            "Stop the web server and the worker first (or pass --force)"
        )
    connection.close()
    _run(
        [
            _tool("pg_restore"),
            "--clean",
            "--if-exists",
            "--no-owner",
            "--single-transaction",
            "--exit-on-error",
            "-d",
            env.get("PGDATABASE", ""),
            str(path),
        ],
        env,
        "pg_restore",
    )
    # A restored database has no planner statistics until ANALYZE; search plans need them
    # (see search.pg.PLANNED: the plans that do not wait for them).
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    verification.checks.append("ANALYZE: planner statistics gathered")
    return verification


def _matched(
    path: Path,
    messages: int,
    sessions: int,
    expected: tuple[int, int] | None,
    checks: list[str],
    when: str,
) -> Verification:
    """The copy's row counts against the source's, read at the same snapshot."""
    if expected is not None:
        if (messages, sessions) != expected:
            raise BackupError(
                f"{path} holds {messages} messages and {sessions} sessions; the database held "
                f"{expected[0]} and {expected[1]} {when}"
            )
        checks.append(
            "row counts match the source at the snapshot: "
            f"{counted(messages, 'message')}, {counted(sessions, 'session')}"
        )
    return Verification(messages, sessions, checks)
