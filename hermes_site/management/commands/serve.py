"""``manage.py serve`` (what ``bin/serve`` runs): the service as it is deployed -- the web
server (``server.web_server``: granian, or gunicorn) and the background worker under one parent.

Before starting them it applies migrations (a no-op when there are none) and collects static
files only when they changed since the last collection (a fingerprint of every source file and
the static settings, kept beside the collected files): collecting takes seconds and most starts
change nothing.

The parent forwards SIGTERM and SIGINT (Ctrl-C) to both children as SIGTERM, their graceful stop,
and waits at most ``server.stop_timeout_seconds`` + 1 s; whatever still runs then is killed and
the exit code is 1. When one child ends on its own, the other is stopped the same way and the
exit code is 1: a process manager sees one service that failed and restarts it whole.

Under ``server.log_format: json`` the parent's own lines, the migrations' included, go through
the log like every other process's, so each line of the service's output is one JSON object.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import io
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from core.config import ServerConfig, bind_address

FINGERPRINT_FILE = ".hermes-static-fingerprint"
MANIFEST_FILE = "staticfiles.json"  # whitenoise's manifest: collectstatic has completed
IGNORE_PATTERNS = ["CVS", ".*", "*~"]  # collectstatic's defaults
GRACE_SECONDS = 1.0  # the parent's margin over the children's own stop budget
POLL_SECONDS = 0.1

logger = logging.getLogger("hermes.serve")


def static_fingerprint() -> str:
    """A hash of everything collectstatic would read: each source file's path and content, and
    the settings that decide where and how they are written."""
    from django.contrib.staticfiles.finders import get_finders

    digest = hashlib.sha256()
    backend = settings.STORAGES["staticfiles"]["BACKEND"]
    digest.update(json.dumps([settings.STATIC_URL, str(settings.STATIC_ROOT), backend]).encode())
    files = []
    for finder in get_finders():
        for path, storage in finder.list(IGNORE_PATTERNS):
            prefix = getattr(storage, "prefix", None) or ""
            files.append((f"{prefix}/{path}", storage.path(path)))
    for name, source in sorted(files):
        digest.update(name.encode() + b"\0")
        digest.update(hashlib.sha256(Path(source).read_bytes()).digest())
    return digest.hexdigest()


class _LoggedLines(io.TextIOBase):
    """A command's output as log records, one per complete line (``migrate`` writes "Applying
    x..." and its " OK" in two writes)."""

    def __init__(self) -> None:
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            if line.strip():
                logger.info(line.rstrip())
        return len(text)

    def close(self) -> None:
        self.write("\n")
        super().close()


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM (a graceful stop) if the parent dies, even by
    SIGKILL, so no web server or worker is left running without its parent (Linux only)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Command(BaseCommand):
    help = (
        "Serve the service: migrate, collect static files if they changed, then run the web "
        "server (server.web_server, bind, web_workers, web_threads) and the background worker "
        "until SIGTERM or Ctrl-C, which stop both within server.stop_timeout_seconds."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--no-migrate", action="store_true", help="Do not apply migrations first."
        )

    def handle(self, *args, **options) -> None:
        server = settings.HERMES.server
        address = os.environ.get("HERMES_ADDR") or server.bind  # as gunicorn_conf reads it
        try:
            bind_address(address)  # server.bind passed this when the config was read
        except ValueError as exc:
            raise CommandError(f"HERMES_ADDR={address!r}: {exc}") from None
        if not options["no_migrate"]:
            if server.log_format == "json":
                with _LoggedLines() as lines:
                    call_command("migrate", interactive=False, verbosity=1, stdout=lines)
            else:
                call_command("migrate", interactive=False, verbosity=1)
        self._static()
        env = self._environment()
        connections.close_all()  # the children open their own

        web_argv = web_server_argv(server, address)
        worker_argv = [sys.executable, str(settings.BASE_DIR / "manage.py"), "worker"]
        received: list[int] = []
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda n, _frame: received.append(n))
        children = {
            f"web server ({server.web_server})": self._spawn(web_argv, env),
            "worker (django-q2 cluster)": self._spawn(worker_argv, env),
        }
        self._say(
            f"Serving on http://{address}/ ({server.web_workers} web processes x "
            f"{server.web_threads} threads, {server.q_workers} task workers): the admin at "
            "/admin/, the API at /api/v1/ (docs: /api/v1/docs), the console at /console/, "
            "probes at /healthz and /readyz. Ctrl-C or SIGTERM stops both."
        )
        self.stdout.flush()

        died = None
        while not received and died is None:
            time.sleep(POLL_SECONDS)
            died = next((name for name, p in children.items() if p.poll() is not None), None)
        if died is not None:
            code = children[died].returncode
            self._say(f"The {died} ended on its own (exit code {code}); stopping.", error=True)
        else:
            name = signal.Signals(received[0]).name
            self._say(
                f"{name}: stopping (at most {server.stop_timeout_seconds + GRACE_SECONDS:g} s)…"
            )
        self.stdout.flush()
        started = time.monotonic()
        clean = self._stop(children, server.stop_timeout_seconds + GRACE_SECONDS)
        elapsed = time.monotonic() - started
        if died is not None:
            self._say(f"Error: the {died} ended unexpectedly; see its log above.", error=True)
        elif not clean:
            self._say(
                f"Error: stopped after {elapsed:.1f} s, but not cleanly (see above).", error=True
            )
        else:
            self._say(f"Stopped in {elapsed:.1f} s.")
        self.stdout.flush()
        self.stderr.flush()
        # Nothing is left to tear down (the children are gone, no connection is open), and
        # Python's teardown of a loaded Django takes a second or two the caller would wait for.
        os._exit(0 if clean and died is None else 1)

    def _say(self, text: str, *, error: bool = False) -> None:
        """One line of the parent's own: to stdout (an error to stderr), or under JSON logs a
        record of the log, which writes it as JSON to stderr like every other line."""
        if settings.HERMES.server.log_format == "json":
            logger.log(logging.ERROR if error else logging.INFO, text)
        else:
            (self.stderr if error else self.stdout).write(text)

    def _static(self) -> None:
        root = Path(settings.STATIC_ROOT)
        stamp = root / FINGERPRINT_FILE
        fingerprint = static_fingerprint()
        current = stamp.read_text(encoding="ascii").strip() if stamp.is_file() else ""
        if current == fingerprint and (root / MANIFEST_FILE).is_file():
            self._say("Static files unchanged: collectstatic skipped.")
            return
        started = time.monotonic()
        call_command("collectstatic", interactive=False, verbosity=0)
        stamp.write_text(fingerprint + "\n", encoding="ascii")
        self._say(f"Static files collected in {time.monotonic() - started:.1f} s.")

    def _environment(self) -> dict[str, str]:
        """The children's environment: prometheus_client's multiprocess mode in a directory
        emptied now (files of processes gone would otherwise count forever)."""
        metrics = Path(settings.DATA_DIR) / "prometheus"
        shutil.rmtree(metrics, ignore_errors=True)
        metrics.mkdir(parents=True, exist_ok=True)
        return {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": os.environ.get(
                "DJANGO_SETTINGS_MODULE", "hermes_site.settings"
            ),
            "PROMETHEUS_MULTIPROC_DIR": str(metrics),
        }

    def _spawn(self, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        # A session of its own: Ctrl-C reaches the parent only, which stops the children in
        # order (gunicorn takes SIGINT as "quit now"), and a group to clean up afterwards.
        return subprocess.Popen(  # noqa: S603 - our own interpreter and modules
            argv,
            cwd=settings.BASE_DIR,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )

    def _stop(self, children: dict[str, subprocess.Popen], budget: float) -> bool:
        """SIGTERM to each child still running, wait up to ``budget`` seconds, kill what is
        left (and anything left in their process groups). True when all ended in time with 0."""
        deadline = time.monotonic() + budget
        for process in children.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
        while any(p.poll() is None for p in children.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        clean = True
        for name, process in children.items():
            problem = None
            if process.poll() is None:
                problem = f"The {name} did not stop within {budget:g} s: killed."
            elif _group_alive(process.pid):
                problem = f"Processes of the {name} outlived it: killed."
            if problem:
                self._say(problem, error=True)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                # Exit only once they are gone (a reaped-late zombie may count for a second).
                gone_by = time.monotonic() + 1
                while _group_alive(process.pid) and time.monotonic() < gone_by:
                    time.sleep(0.02)
            process.wait()
            if problem is None and process.returncode != 0:
                problem = f"The {name} exited with code {process.returncode}."
                self._say(problem, error=True)
            clean = clean and problem is None
        return clean


GRANIAN_APP = "hermes_site.granian_app:application"


def web_server_argv(
    server: ServerConfig, address: str, app: str = GRANIAN_APP, factory: bool = True
) -> list[str]:
    """The web server's command line for ``server`` (the config's block) on ``address``.
    granian serves ``app``, a factory unless ``factory`` is false (the benchmarks serve plain
    WSGI applications with the same command); gunicorn's config names its own."""
    if server.web_server == "gunicorn":
        return [sys.executable, "-m", "gunicorn", "-c", "python:hermes_site.gunicorn_conf"]
    if address.startswith("unix:"):
        where = ["--uds", address.removeprefix("unix:")]
    else:
        host, _, port = address.rpartition(":")
        where = ["--host", host.strip("[]"), "--port", port]
    return [
        sys.executable, "-m", "granian", "--interface", "wsgi", *where,
        "--workers", str(server.web_workers),
        # Threads start as requests come, up to this many per process, and end after ten idle
        # minutes (granian's longest); each takes a connection warmed ahead (core.handover).
        "--blocking-threads", str(server.web_threads),
        "--blocking-threads-idle-timeout", "600",
        "--runtime-threads", "1", "--no-ws",
        # A process that dies is started again, as gunicorn does.
        "--respawn-failed-workers",
        # SIGTERM: stop accepting, let requests in flight finish for this long, then kill. One
        # second less than the whole stop budget, which the parent enforces.
        "--workers-kill-timeout", str(max(1, server.stop_timeout_seconds - 1)),
        "--log-config", str(_granian_log_config(server.log_format)),
        *(["--factory"] if factory else []), app,
    ]  # fmt: skip


def _granian_log_config(log_format: str) -> Path:
    """granian's logging config (a JSON file it reads): its lines through the root logger, to
    stderr like every other process's, one JSON object each under ``log_format: json``. Its
    access log stays off, as hermes.request writes a line per request already."""
    formatter = (
        {"()": "core.logs.JsonFormatter"}
        if log_format == "json"
        else {"format": "[%(asctime)s] [%(process)d] [%(levelname)s] %(message)s"}
    )
    config = {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "core.logs.RequestIdFilter"}},
        "formatters": {"line": formatter},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "line",
                "filters": ["request_id"],
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"level": "INFO", "handlers": ["console"]},
        "loggers": {
            "_granian": {"level": "INFO", "handlers": [], "propagate": True},
            "granian.access": {"level": "WARNING", "handlers": [], "propagate": False},
        },
    }
    path = Path(settings.DATA_DIR) / "granian-logging.json"
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return path


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
