"""The service's WSGI application as granian serves it (``manage.py serve`` under
``server.web_server: granian``, the default): :func:`application` is granian's factory, called
once in each web process before it takes a request.

It does for granian what gunicorn's ``post_worker_init`` does (hermes_site.gunicorn_conf): loads
what a process's first request would wait for (hermes_site.warm), and has a connection opened
and warmed for each request thread before the first request (core.handover: granian's threads
start with requests, out of the application's reach). granian has no hook for a worker that
ended, so a new process forgets the live gauges of processes gone, as gunicorn's ``child_exit``
does.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

logger = logging.getLogger(__name__)


def application():
    from django.core.wsgi import get_wsgi_application

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hermes_site.settings")
    app = get_wsgi_application()

    from core import handover
    from core.config import get_config
    from hermes_site.warm import THREADS_WAIT_SECONDS, close_aged_after_answers, warm_process
    from search.warm import warm_connection

    warm_process()
    forget_dead_processes()
    server = get_config().server
    if server.warm_connections:
        began = time.monotonic()
        handover.enable(server.web_threads, warm_connection)
        made = handover.prepare(server.web_threads, THREADS_WAIT_SECONDS)
        logger.info(
            "%d of %d request threads' connections warmed in %.0f ms",
            made,
            server.web_threads,
            (time.monotonic() - began) * 1000,
        )
        close_aged_after_answers()
    return app


def forget_dead_processes() -> list[int]:
    """Mark every process that left live gauges in prometheus_client's multiprocess folder and
    is gone as dead, so /metrics no longer counts them; returns their ids."""
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not folder:
        return []
    from prometheus_client import multiprocess

    pids = {path.stem.rsplit("_", 1)[1] for path in Path(folder).glob("gauge_live*_*.db")}
    dead = sorted(int(pid) for pid in pids if pid.isdigit() and not _alive(int(pid)))
    for pid in dead:
        multiprocess.mark_process_dead(pid, folder)
    return dead


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True
