"""A starting web process reads the SQLite file through so the OS caches it (search.warm), within
its cap and half the free memory, and never fails its start over it."""

from __future__ import annotations

import mmap
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from search import warm


@pytest.fixture
def database_file(tmp_path):
    path = tmp_path / "hermes.sqlite3"
    path.write_bytes(os.urandom(24 * warm.PREWARM_CHUNK + 12345))  # a last, partial read
    yield path
    warm.release_held(path)


needs_fadvise = pytest.mark.skipif(
    not hasattr(os, "posix_fadvise"),
    reason="no posix_fadvise: nothing drops the file from the OS cache",
)


def test_a_file_within_the_cap_is_read_to_its_end(database_file, monkeypatch, caplog):
    read = []
    real = os.readv

    def readv(fd, buffers):
        got = real(fd, buffers)
        read.append(got)
        return got

    monkeypatch.setattr(os, "readv", readv)
    with caplog.at_level("INFO", logger="search.warm"):
        assert warm.prewarm_file(database_file, cap_mib=1024)
    assert sum(read) == database_file.stat().st_size
    assert max(read) == warm.PREWARM_CHUNK
    # The operator's line: what was read and how long it took.
    assert [r.getMessage().split(" in ")[0] for r in caplog.records] == [
        "prewarmed hermes.sqlite3: 24 MiB read"
    ]


@needs_fadvise
def test_the_pages_are_in_the_os_cache_afterwards(database_file):
    fincore = shutil.which("fincore")
    if fincore is None:
        pytest.skip("util-linux's fincore is not installed: nothing tells what the OS cached")
    fd = os.open(database_file, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # out of the cache
    finally:
        os.close(fd)

    def cached_pages() -> int:
        out = subprocess.run(
            [fincore, "--bytes", "--noheadings", "--output", "PAGES", str(database_file)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return int(out.split()[0])

    pages = -(-database_file.stat().st_size // os.sysconf("SC_PAGE_SIZE"))
    if cached_pages() == pages:
        pytest.skip("this file system keeps the file's pages in memory (tmpfs): nothing to read")
    assert warm.prewarm_file(database_file, cap_mib=1024)
    # Whatever the device's read-ahead (Linux honours a WILLNEED only up to the larger of
    # read_ahead_kb and max_sectors_kb: asked for 8 MiB at a time, it cached part of the file
    # on the CI machine), every page is in.
    assert cached_pages() == pages


needs_populate = pytest.mark.skipif(
    not hasattr(mmap, "MAP_POPULATE") or not sys.platform.startswith("linux"),
    reason="no MAP_POPULATE or /proc/self/maps: Linux only",
)


def mapped_bytes(path) -> int:
    """How many bytes of ``path`` this process maps (/proc/self/maps)."""
    total = 0
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[5] == str(path):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                total += end - start
    return total


@needs_populate
def test_the_file_read_is_held_mapped_so_reclaim_of_unmapped_pages_spares_it(database_file):
    size = database_file.stat().st_size
    assert mapped_bytes(database_file) == 0
    assert warm.prewarm_file(database_file, cap_mib=1024)
    page = os.sysconf("SC_PAGE_SIZE")
    assert mapped_bytes(database_file) == -(-size // page) * page  # the whole file, once
    assert warm.prewarm_file(database_file, cap_mib=1024)  # again: the new hold replaces it
    assert mapped_bytes(database_file) == -(-size // page) * page
    warm.release_held(database_file)
    assert mapped_bytes(database_file) == 0


def descriptors_of(path) -> int:
    """How many of this process's descriptors are open on ``path``."""
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) == str(path))


@needs_populate
def test_the_hold_keeps_one_descriptor_whatever_the_file_size(database_file, monkeypatch):
    # Python's mmap keeps a duplicate descriptor per map: one map per piece held 58 of them at
    # 922 MiB, 512 at the prewarm's 8 GiB cap. (The one kept is also what shows a restore that
    # the process holds the database: hermes_site.upkeep.holders reads descriptors.)
    monkeypatch.setattr(warm, "HOLD_CHUNK", warm.PREWARM_CHUNK)  # 25 pieces
    assert warm.prewarm_file(database_file, cap_mib=1024)
    assert descriptors_of(database_file) == 1
    assert mapped_bytes(database_file) >= database_file.stat().st_size


@needs_populate
def test_a_kernel_without_populate_read_holds_the_map_made_populated(database_file, monkeypatch):
    monkeypatch.setattr(warm, "MADV_POPULATE_READ", 9_999)  # refused as unknown: EINVAL
    assert warm.prewarm_file(database_file, cap_mib=1024)
    page = os.sysconf("SC_PAGE_SIZE")
    assert mapped_bytes(database_file) == -(-database_file.stat().st_size // page) * page
    assert descriptors_of(database_file) == 1


def test_a_map_refused_leaves_the_prewarm_standing(database_file, monkeypatch, caplog):
    def refused(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(mmap, "mmap", refused)
    with caplog.at_level("INFO", logger="search.warm"):
        assert warm.prewarm_file(database_file, cap_mib=1024)
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("not holding hermes.sqlite3 mapped") for m in messages), messages
    assert not any("held mapped" in m for m in messages), messages


@needs_populate
def test_a_file_that_shrank_since_its_read_is_not_held_and_nothing_fails(database_file, caplog):
    size = database_file.stat().st_size
    fd = os.open(database_file, os.O_RDONLY)
    try:
        os.truncate(database_file, size // 2)  # a VACUUM between the read and the hold
        with caplog.at_level("INFO", logger="search.warm"):
            assert not warm.hold_mapped(fd, database_file, size)
    finally:
        os.close(fd)
    assert mapped_bytes(database_file) == 0  # the pieces mapped before the refusal are released
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "not holding hermes.sqlite3 mapped (its pages may leave the cache)"
    ]


def test_no_prewarm_when_it_is_off_too_large_or_missing(database_file, tmp_path, monkeypatch):
    assert not warm.prewarm_file(database_file, cap_mib=0)  # off
    assert not warm.prewarm_file(database_file, cap_mib=1)  # 24 MiB over a 1 MiB cap
    assert not warm.prewarm_file(tmp_path / "gone.sqlite3", cap_mib=1024)
    monkeypatch.setattr(warm, "_available_bytes", lambda: 2 * warm.PREWARM_CHUNK)
    assert not warm.prewarm_file(database_file, cap_mib=1024)  # over half the free memory


def test_a_read_that_fails_or_advice_refused_does_not_fail_the_start(database_file, monkeypatch):
    def refused(*args):
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(os, "posix_fadvise", refused, raising=False)
    assert warm.prewarm_file(database_file, cap_mib=1024)  # the advice is only advice

    def failed(*args):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "readv", failed)
    assert not warm.prewarm_file(database_file, cap_mib=1024)


@pytest.mark.django_db
def test_a_warmed_sqlite_process_prewarms_its_database_file(monkeypatch, settings):
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: PostgreSQL keeps its own cache")
    asked = []
    release = threading.Event()

    def prewarm(path, cap):
        release.wait(10)  # however long the reads take, the start does not wait for them
        asked.append((path, cap))

    monkeypatch.setattr(warm, "prewarm_file", prewarm)
    thread = warm.warm_up(close=False)
    assert thread is not None and thread.daemon and not asked
    release.set()
    thread.join(10)
    assert [str(p) for p, _ in asked] == [str(connection.settings_dict["NAME"])]
    assert asked[0][1] == settings.HERMES.server.sqlite_prewarm_mib
