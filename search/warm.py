"""What a web process reads once, read before its first request instead of during it
(granian's factory, hermes_site/granian_app.py, or gunicorn's ``post_worker_init``), so no
agent's first question pays for it.

PostgreSQL's case-folding table (search.pg.case_folds: every BMP character lower() changes,
about 40 ms) is read by a process's first substring lookup.

On SQLite, the database's pages: after a restart, or whatever the OS evicted, a query's first
lookup read each page it needed from disk -- its FTS5 doclists, scattered through the file. At
a million messages, in a new process with the OS cache dropped, the rare facts' first lookups
took p95 3.3 ms (up to 4.6 in a kind), prewarmed 1.0 (bench/prewarm.py). The file is read
through once, 1 MiB at a time, in a thread of its own: the pages are the OS cache's, shared by
every process and connection, evicted as any. It is read, not only advised: Linux reads ahead
for a ``posix_fadvise(WILLNEED)`` at most the larger of the device's read-ahead
(``read_ahead_kb``, 128 KiB by default) and its largest request (``max_sectors_kb``), so asking
for 8 MiB at a time cached half a file here with the default, and less on other disks.

The file read is then held mapped, read-only, for the life of the process (:func:`hold_mapped`).
A page SQLite reads (it reads, it does not map: ``sqlite_mmap_mib`` 0) is in no process's memory
map, and a kernel that reclaims cold memory ahead of need takes such pages first: this machine
kind pages out file pages no process maps once they go a minute untouched (a DAMON ``pageout``
scheme), so an idle service lost a sixth of its file from the cache in 75 seconds, and a fact's
first lookup after 90 idle seconds took p50 0.82 ms against 0.46 with the file cached. Mapped,
the whole file was still cached after 135 seconds. The map costs address space and page tables
(2 MiB per GiB), not memory: its pages are the OS cache's, counted in each web process's RSS
as shared file pages.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import mmap
import os
import threading
import time
from pathlib import Path

from django.db import DatabaseError, connection

from core.config import get_config
from search import pg

logger = logging.getLogger(__name__)

PREWARM_CHUNK = 1 << 20  # one read's buffer: 1 MiB
# The held map's pages are put in its page table this many bytes at a time: each call holds the
# GIL (the whole 922 MiB file in one call: 14-23 ms cached, 0.8 s where its pages had to be read
# again), a piece under half a millisecond.
HOLD_CHUNK = 16 << 20
# madvise(MADV_POPULATE_READ), Linux 5.14 and later (Python names it from 3.13 on): maps a range's
# pages now, or fails (EFAULT) where the file no longer reaches -- reading through the map instead
# would raise SIGBUS there.
MADV_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22)
# The map held, by file: kept for the life of the process (never read). One map, so one
# descriptor: Python's mmap keeps a duplicate of the file's for each map it makes.
_held: dict[str, mmap.mmap] = {}


def warm_connection() -> bool:
    """Open this thread's database connection and run the search's statements on it once
    (search.service.warm_routes), so that the first search a request thread answers does not pay
    for a new connection: at 1,000,000 messages a first search on a new connection took p50 10.8
    ms on PostgreSQL (a server process started, its catalog read, the search functions compiled)
    and 1.5 ms on SQLite (an empty page cache), against 0.8 and 0.4 ms on a kept one. Never
    raises: False, and a warning, where the database does not answer (the first request then
    opens the connection, as it would have)."""
    from search.service import warm_routes

    try:
        warm_routes()
    except DatabaseError as exc:
        logger.warning("warming a database connection failed (its first search will): %s", exc)
        return False
    return True


def warm_up(*, close: bool = True) -> threading.Thread | None:
    """Never raises: a database away at start-up leaves the read to the first lookup, as
    before. ``close``: drop the connection it opened (the worker's request threads have their
    own; this one would sit idle). On SQLite the prewarm runs in a thread of its own, which it
    returns: the process takes requests meanwhile (reading the file takes as long as the disk
    does, and a web server may replace a worker that does not report in time). The reads release the
    GIL."""
    if connection.vendor == "sqlite":
        path = Path(connection.settings_dict["NAME"])
        cap = get_config().server.sqlite_prewarm_mib
        thread = threading.Thread(
            target=prewarm_file, args=(path, cap), name="hermes-prewarm", daemon=True
        )
        thread.start()
        return thread
    settings = connection.settings_dict
    try:
        with connection.cursor() as cursor:
            pg.case_folds(cursor, (settings["HOST"], settings["PORT"], settings["NAME"]))
    except DatabaseError as exc:
        logger.warning("search warm-up skipped (the first lookup will read it): %s", exc)
    finally:
        if close:
            connection.close()
    return None


def _available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux); None where there is none."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def prewarm_file(path: Path, cap_mib: int) -> bool:
    """Read ``path`` through so the OS caches its pages, if it is at most ``cap_mib`` MiB and
    half the memory available (a larger file would push out what is cached already). Returns
    whether it read the file to its end; never raises (a file gone or unreadable: no prewarm)."""
    if not cap_mib:
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        size = os.fstat(fd).st_size
        available = _available_bytes()
        if size > cap_mib << 20 or (available is not None and size > available // 2):
            logger.info(
                "not prewarming %s: %d MiB is over the cap or half the free memory",
                path.name,
                size >> 20,
            )
            return False
        if hasattr(os, "posix_fadvise"):
            # A larger read-ahead window while it reads; only advice, so a refusal is no matter.
            with contextlib.suppress(OSError):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        buffer = bytearray(PREWARM_CHUNK)
        began = time.monotonic()
        done = 0
        while done < size:  # the size it had: a file that grows meanwhile is not chased
            got = os.readv(fd, [buffer])
            if not got:
                break
            done += got
        held = hold_mapped(fd, path, done)
        logger.info(
            "prewarmed %s: %d MiB read in %.1f s%s",
            path.name,
            done >> 20,
            time.monotonic() - began,
            ", held mapped" if held else "",
        )
        return True
    except OSError as exc:
        logger.warning("prewarming %s failed (first lookups may read from disk): %s", path, exc)
        return False
    finally:
        os.close(fd)


def hold_mapped(fd: int, path: Path, size: int) -> bool:
    """Map the first ``size`` bytes of ``path`` (open as ``fd``) read-only, have the kernel put
    every cached page of it in the map now, and keep the map: the pages then stay in this
    process's memory map, where reclaim of cold, unmapped file pages does not take them.
    Nothing ever reads through it, so a file that shrinks later cannot fault the process. An
    earlier hold of the same file is released. Never raises: False where it could not map (no
    populating outside Linux, a refusal, or a file that shrank since it was read), and the
    prewarm stands without it."""
    release_held(path)
    if size <= 0:
        return False
    try:
        held = _populated(fd, size)
    except (OSError, ValueError) as exc:  # ValueError: Python will not map past a file's end
        logger.info("not holding %s mapped (its pages may leave the cache): %s", path.name, exc)
        return False
    _held[str(path)] = held
    return True


def _populated(fd: int, size: int) -> mmap.mmap:
    held = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    try:
        for offset in range(0, size, HOLD_CHUNK):
            held.madvise(MADV_POPULATE_READ, offset, min(HOLD_CHUNK, size - offset))
        return held
    except OSError as exc:
        held.close()
        populate = getattr(mmap, "MAP_POPULATE", None)
        if exc.errno != errno.EINVAL or populate is None:
            raise
    # A kernel before 5.14 knows no MADV_POPULATE_READ: the map is made populated, in one call.
    return mmap.mmap(fd, size, flags=mmap.MAP_SHARED | populate, prot=mmap.PROT_READ)


def release_held(path: Path) -> None:
    """Unmap what :func:`hold_mapped` holds of ``path`` (a new hold, the tests)."""
    held = _held.pop(str(path), None)
    if held is not None:
        held.close()
