"""The service's WSGI application as granian serves it (``manage.py serve`` under
``server.web_server: granian``, the default): :func:`application` is granian's factory, called
once in each web process before it takes a request.

It does for granian what gunicorn's ``post_worker_init`` does (hermes_site.gunicorn_conf): loads
what a process's first request would wait for, and has a connection opened and warmed for each
request thread before the first request (hermes_site.warm.warm_ahead: granian's threads start
with requests, out of the application's reach).
"""

from __future__ import annotations

import os


def application():
    from django.core.wsgi import get_wsgi_application

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hermes_site.settings")
    app = get_wsgi_application()

    from core.config import get_config
    from hermes_site.warm import close_aged_after_answers, warm_ahead, warm_process

    warm_process()
    warm_ahead(get_config().server.web_threads)
    close_aged_after_answers()  # where connections are warmed (it checks), as under gunicorn
    return app
