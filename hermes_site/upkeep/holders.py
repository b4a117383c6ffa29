"""Who holds the SQLite database: this project's own web servers and workers (which open it
again between requests), and any process with the file open now. A restore refuses while
either does."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def companions(db: Path) -> list[Path]:
    """The database file and the files SQLite and the write gate keep beside it."""
    return [db, Path(f"{db}-wal"), Path(f"{db}-shm"), Path(f"{db}-writegate")]


SERVICE_COMMANDS = (b"manage.py\x00serve", b"manage.py\x00worker", b"qcluster", b"gunicorn",
                    b"granian", b"runserver", b"bin/serve")  # fmt: skip


def _same_service(entry: Path, raw_cmdline: bytes) -> bool:
    """A web server or worker of this project started with this configuration: it may not
    have the database open at this moment (between requests, between schedule checks), but
    will again."""
    if not any(name in raw_cmdline for name in SERVICE_COMMANDS):
        return False
    from django.conf import settings

    try:
        if os.readlink(entry / "cwd") != str(settings.BASE_DIR):
            return False
        environ = dict(
            item.split(b"=", 1)
            for item in (entry / "environ").read_bytes().split(b"\x00")
            if b"=" in item
        )
    except OSError:
        return False
    return all(
        environ.get(name.encode()) == (os.environ[name].encode() if name in os.environ else None)
        for name in ("HERMES_CONFIG", "HERMES_DATABASE_URL")
    )


def _command(raw: bytes) -> str:
    return " ".join(raw.replace(b"\x00", b" ").decode(errors="replace").split())[:120]


def _processes() -> Iterator[tuple[Path, bytes]]:
    """Every other process's /proc entry and raw command line."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            yield entry, (entry / "cmdline").read_bytes()
        except OSError:
            continue


def local_service() -> list[tuple[int, str]]:
    """This project's web server or worker processes on this configuration (see
    ``_same_service``); empty where /proc cannot be read."""
    if not Path("/proc/self").is_dir():
        return []
    return [(int(e.name), _command(raw)) for e, raw in _processes() if _same_service(e, raw)]


def _holds(entry: Path, wanted: set[str]) -> bool:
    try:
        fds = list((entry / "fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(fd) in wanted:
                return True
        except OSError:
            continue
    return False


def sqlite_holders(db: Path) -> list[tuple[int, str]] | None:
    """Other processes that have the database (or its WAL, shared memory or write gate) open,
    or are this project's web server or worker on this configuration. None: this system
    cannot tell (no /proc)."""
    if not Path("/proc/self/fd").is_dir():
        return None
    wanted = {str(p.resolve()) for p in companions(db)}
    return [
        (int(entry.name), _command(raw))
        for entry, raw in _processes()
        if _holds(entry, wanted) or _same_service(entry, raw)
    ]
