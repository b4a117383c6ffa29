"""Real processes (web, worker, writers) on a database of their own, whichever backend the suite
runs on: a fresh SQLite file in the test's directory, or -- in the PostgreSQL pass -- a fresh
PostgreSQL database (dropped afterwards) and an emptied Redis test database as the broker."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import dj_database_url

ROOT = Path(__file__).resolve().parent.parent
MANAGE = [sys.executable, "manage.py"]


def on_postgres() -> bool:
    return bool(os.environ.get("HERMES_DATABASE_URL", "").startswith(("postgres", "pgsql")))


def _admin_connection(url: str):
    import psycopg

    settings = dj_database_url.parse(url)
    return psycopg.connect(
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
        user=settings["USER"] or None,
        password=settings["PASSWORD"] or None,
        dbname="postgres",
        autocommit=True,
    )


@contextlib.contextmanager
def isolated_env(
    tmp_path: Path, *, server: str = "", sections: str = ""
) -> Iterator[dict[str, str]]:
    """Environment for subprocesses: a config file (``server`` holds extra indented lines of the
    server block, ``sections`` whole other blocks) and a database nobody else uses, migrated."""
    config = tmp_path / "hermes.yaml"
    config.write_text(f"server:\n  data_dir: {tmp_path}\n{server}{sections}", encoding="utf-8")
    env = {
        **os.environ,
        "HERMES_CONFIG": str(config),
        "DJANGO_SETTINGS_MODULE": "hermes_site.settings",
    }
    env.pop("PYTEST_CURRENT_TEST", None)
    name = None
    if on_postgres():
        base = os.environ["HERMES_DATABASE_URL"]
        name = f"hermes_proc_{uuid.uuid4().hex[:12]}"
        with _admin_connection(base) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        env["HERMES_DATABASE_URL"] = base.rsplit("/", 1)[0] + f"/{name}"
        broker = os.environ.get("HERMES_BROKER_URL")
        if broker:
            import redis

            redis.Redis.from_url(broker).flushdb()  # the test broker: no task of an earlier run
    try:
        subprocess.run(
            [*MANAGE, "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True, timeout=300
        )
        yield env
    finally:
        if name is not None:
            with _admin_connection(os.environ["HERMES_DATABASE_URL"]) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def python(*args: str, env: dict[str, str], timeout: float = 180) -> str:
    """Run ``python ARGS`` (a ``-c`` script or ``manage.py ...``) in the project directory with
    ``env``; returns its stdout, or fails showing its stderr."""
    result = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def wait_for(ready: Callable[[], bool], what: str, seconds: float = 60) -> None:
    """Poll ``ready`` (a refused connection counts as not yet) until it answers True."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if ready():
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not answer within {seconds:.0f} s")
        time.sleep(0.3)


def stop_all(processes, timeout: float = 15) -> None:
    """Terminate every process, then wait for each, killing one that outstays ``timeout``."""
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
