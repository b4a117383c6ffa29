"""What a new web process loads before its first request, so no client's first request waits.

Django imports the URLconf -- and with it every view, django-ninja router and schema -- on a
process's first request, not when the WSGI application is built: about half a second here, which
the first request to each gunicorn worker paid (``bench/live_context.py --http`` measured 750 ms
for a first ``GET /context`` whose median is 7). gunicorn's ``post_worker_init`` runs this.
"""

from __future__ import annotations

from django.urls import get_resolver

from search.warm import warm_up


def warm_process() -> None:
    """Never raises for a database that is away (search.warm logs it and leaves the read to the
    first lookup); the URLconf does not touch the database."""
    get_resolver().url_patterns  # noqa: B018 -- the property imports the URLconf
    warm_up()
