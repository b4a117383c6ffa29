"""Gunicorn's settings for ``bin/serve`` (``gunicorn -c hermes_site/gunicorn_conf.py``), read
from the one config file so the web server and Django agree on them.

Threads (``gthread``) rather than many processes: on the SQLite default one writer holds the
database at a time, so more processes only queue on its lock, while threads keep slow readers
(a search, a long-polling compress) from holding up the rest.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from core.config import config_path, load_config

_server = load_config(config_path(Path(__file__).resolve().parent.parent)).server

wsgi_app = "hermes_site.wsgi:application"
bind = [os.environ.get("HERMES_ADDR") or _server.bind]
workers = _server.web_workers
# gunicorn's threads, answering what it refuses itself (a request line too long) as JSON.
worker_class = "hermes_site.gunicorn_worker.JsonErrorsWorker"
# The longest request line gunicorn takes (its maximum): every GET the API documents fits but a
# search for 1,000 CJK characters, percent-encoded 9 bytes each; POST /api/v1/search takes that.
limit_request_line = 8190
threads = _server.web_threads
# SIGTERM: stop accepting, let requests in flight finish for this long, then stop the workers.
# One second less than the whole stop budget, which the parent (manage.py serve) enforces.
graceful_timeout = max(1, _server.stop_timeout_seconds - 1)
# A worker whose main loop is stuck this long is replaced. With threads a slow request (a
# compress call waiting for its result) does not block the loop, so this is not a request limit.
timeout = 60
keepalive = 5
proc_name = "hermes-web"
# No control socket: bin/serve is the control, and its default path ($HOME/.gunicorn) would be
# shared by every gunicorn of the user.
control_socket_disable = True
# Gunicorn's own log (start, stop, worker deaths) to stderr, beside the worker's.
errorlog = "-"
loglevel = "info"
if _server.log_format == "json":
    # The same one-object-per-line shape as Django's and the worker's lines (settings.LOGGING).
    # Gunicorn merges this over its defaults key by key, so each key is given whole; its loggers
    # do not propagate, or a web process, whose root logger Django configures, would write twice.
    # A logging config turns gunicorn's access log on: it stays off, as in text mode, since
    # hermes.request writes a line per request already.
    _json_handler = {
        "class": "logging.StreamHandler",
        "formatter": "json",
        "filters": ["request_id"],
        "stream": "ext://sys.stderr",
    }
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "core.logs.RequestIdFilter"}},
        "formatters": {"json": {"()": "core.logs.JsonFormatter"}},
        "handlers": {"json": _json_handler},
        "root": {"level": "INFO", "handlers": ["json"]},
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["json"], "propagate": False},
            "gunicorn.access": {"level": "WARNING", "handlers": [], "propagate": False},
        },
    }


def post_worker_init(worker) -> None:
    """The app is loaded in a new web process: load and read what its first request would
    otherwise wait for (hermes_site.warm), and start its request threads with their database
    connections open and warmed, before it takes requests."""
    from hermes_site.warm import close_aged_after_answers, warm_process, warm_threads

    warm_process()
    if hasattr(worker, "tpool"):  # gunicorn's threaded worker (not one chosen with -k instead)
        warm_threads(worker.tpool, worker.cfg.threads)
        close_aged_after_answers()


def child_exit(server, worker) -> None:
    """A web process ended: prometheus_client's multiprocess mode keeps its live gauges per
    process id, and marking it dead drops them from /metrics."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


def worker_exit(server, worker) -> None:
    """A web process that has answered its last request after a graceful stop ends here, without
    Python's teardown of the loaded app (a second or two of CPU a stop need not wait for). One
    that failed to boot or crashed exits normally, so gunicorn still sees its exit code."""
    if worker.booted and not worker.alive:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
