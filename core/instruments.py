"""The metrics a process observes itself (request and search latency), as prometheus_client
instruments.

Several web processes serve requests: when ``PROMETHEUS_MULTIPROC_DIR`` is set (by
``bin/serve``) before this module is imported, prometheus_client keeps each process's values in
that directory and ``/metrics`` adds them up; without it they live in this process only (tests,
``runserver``). What lives in the database -- compressions, guards, the queue, sizes -- is read
at scrape time instead (``hermes_site.metrics``), so it is the same from any process or host.
"""

from __future__ import annotations

from prometheus_client import Histogram

# Seconds. An append is milliseconds; a waited-for compression or a long scan is seconds.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
SEARCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

REQUEST_SECONDS = Histogram(
    "hermes_http_request_duration_seconds",
    "Time to answer an HTTP request, by route pattern, method and status.",
    ["route", "method", "status"],
    buckets=REQUEST_BUCKETS,
)

SEARCH_SECONDS = Histogram(
    "hermes_search_duration_seconds",
    "Time to answer a search (lookup, ranking, excerpts, windows), by the index that answered "
    "(words, bigram, trigram, scan; none when nothing matched).",
    ["index"],
    buckets=SEARCH_BUCKETS,
)
