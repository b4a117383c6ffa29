"""``manage.py worker``: django-q2's cluster (what ``manage.py qcluster`` runs) with a stop that
ends within ``server.stop_timeout_seconds`` and hands unfinished tasks back to the queue (see
``hermes_site.worker``)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Run the background worker (django-q2's cluster). SIGTERM or Ctrl-C stops it within "
        "server.stop_timeout_seconds; running and waiting tasks go back to the queue."
    )

    def handle(self, *args, **options) -> None:
        from hermes_site.worker import use_bounded_stop

        # One second of the stop budget is the parent's (manage.py serve) to notice and report.
        use_bounded_stop(max(1, settings.HERMES.server.stop_timeout_seconds - 1))
        from django_q.cluster import Cluster

        cluster = Cluster()  # handles SIGTERM and SIGINT: stops the sentinel, which we bound
        cluster.start()
        while cluster.sentinel.is_alive():
            cluster.sentinel.join(1)
        code = cluster.sentinel.exitcode
        if code:
            raise CommandError(f"the worker's sentinel process ended with code {code}")
