"""What a web process reads once, read before its first request instead of during it.

PostgreSQL's case-folding table (search.pg.case_folds: every BMP character lower() changes,
about 40 ms) is read by a process's first substring lookup; gunicorn's ``post_worker_init``
(hermes_site/gunicorn_conf.py) reads it here, so no agent's first question pays for it.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, connection

from search import pg

logger = logging.getLogger(__name__)


def warm_up(*, close: bool = True) -> None:
    """Never raises: a database away at start-up leaves the read to the first lookup, as
    before. ``close``: drop the connection it opened (the worker's request threads have their
    own; this one would sit idle)."""
    if connection.vendor != "postgresql":
        return
    settings = connection.settings_dict
    try:
        with connection.cursor() as cursor:
            pg.case_folds(cursor, (settings["HOST"], settings["PORT"], settings["NAME"]))
    except DatabaseError as exc:
        logger.warning("search warm-up skipped (the first lookup will read it): %s", exc)
    finally:
        if close:
            connection.close()
