"""django-q2's cluster with a stop that ends in bounded time and loses no task.

django-q2's own stop (SIGTERM to ``qcluster``) stops the pusher, queues one "STOP" per worker
behind the tasks already taken from the broker, and waits -- without a limit -- for the workers
to run all of those and finish the one in hand. A compression waiting on a slow summary model
keeps it at "stopping" for as long as the model call may last (minutes); a process manager then
kills it, and the session's compression claim stays taken until it expires.

Here the sentinel's stop is bounded (``server.stop_timeout_seconds``):

* a worker that is running a task is interrupted (the task unwinds: open transactions roll back,
  a compression releases its claim in its ``finally``) and the task is handed back to the broker;
* tasks taken from the broker but not started are handed back, not run;
* whatever has not ended one second before the limit is killed.

"Handed back" is enqueued again and acknowledged, which works on both brokers: on the ORM broker
the task is queued again at once instead of when its lock expires (``server.task_retry_seconds``);
on Redis, where taking a task removes it, it would otherwise be lost.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import time
from typing import Any

from django.db import connections
from django_q import cluster as q_cluster
from django_q.brokers import Broker, get_broker
from django_q.exceptions import TimeoutException
from django_q.signals import post_execute_in_worker, post_spawn, pre_execute
from django_q.signing import SignedPackage
from django_q.status import Stat

logger = logging.getLogger(__name__)

STOP = "STOP"  # django-q2's poison pill
# An interrupted task's result, which django-q2 logs as its failure.
STOPPED = "stopped: the worker was shutting down; handed back to the queue"


class StoppedForShutdown(TimeoutException):
    """Raised inside a running task when the worker is told to stop. A ``TimeoutException`` so
    django-q2's worker records the task as ended and then exits, as after a timeout."""


class _WorkerState:
    stopping = False
    running: dict[str, Any] | None = None
    interrupted = False


_state = _WorkerState()


def hand_back(broker: Broker, task: dict[str, Any]) -> None:
    """Put a task taken from the broker back in the queue: a copy enqueued, then the original
    acknowledged, so a crash in between runs it twice (tasks are idempotent), never not at all.
    A failure is logged, not raised: the stop goes on (on the ORM broker the task then runs
    again once its lock expires, after server.task_retry_seconds)."""
    copy = {k: v for k, v in task.items() if k not in ("ack_id", "result", "success", "stopped")}
    try:
        # A task interrupted mid-query may have left its connection unusable: start afresh
        # (Django drops the connection even when closing it fails).
        with contextlib.suppress(Exception):
            connections.close_all()
        broker.enqueue(SignedPackage.dumps(copy))
        if task.get("ack_id"):
            broker.acknowledge(task["ack_id"])
    except Exception:
        logger.exception("Could not hand task %s back to the queue", task.get("name", "?"))
        return
    logger.info("Handed task %s back to the queue", task.get("name", "?"))


def _on_stop(signum: int, frame: Any) -> None:
    _state.stopping = True
    if _state.running is not None and not _state.interrupted:
        _state.interrupted = True
        raise StoppedForShutdown(STOPPED)


def _worker_started(sender: Any, proc_name: str, **kwargs: Any) -> None:
    signal.signal(signal.SIGTERM, _on_stop)


def _before_task(sender: Any, func: Any, task: dict[str, Any], **kwargs: Any) -> None:
    if _state.stopping:
        # Taken from the queue after the stop began: give it back and end this worker.
        hand_back(get_broker(), task)
        raise SystemExit(0)
    _state.running = task


def _after_task(sender: Any, func: Any, task: dict[str, Any], **kwargs: Any) -> None:
    interrupted = _state.interrupted
    _state.running = None
    if interrupted:
        # django-q2 made the result the exception and its traceback, and logs it as the task's
        # failure: a stop is not the task's error, so the log says why in one line.
        task["result"] = STOPPED
        # The task has unwound (its transactions are rolled back): queue it again.
        hand_back(get_broker(), task)


def connect() -> None:
    """Connect the worker-side handlers; the cluster's processes inherit them when forked."""
    post_spawn.connect(_worker_started, dispatch_uid="hermes_worker_started")
    pre_execute.connect(_before_task, dispatch_uid="hermes_before_task")
    post_execute_in_worker.connect(_after_task, dispatch_uid="hermes_after_task")


class BoundedSentinel(q_cluster.Sentinel):
    """django-q2's sentinel with the bounded stop described above."""

    stop_seconds: float = 7.0
    pool: list[Any]  # django-q2's worker processes, set by Sentinel.__init__ (it has no types)

    def _drain(self) -> None:
        """Hand back what is still in the local queue (possible only once no worker waits on it:
        a waiting worker holds the queue's read lock)."""
        while True:
            try:
                task = self.task_queue.get_nowait()
            except queue.Empty:  # empty, or a worker holds the read lock
                return
            if task != STOP:
                hand_back(self.broker, task)

    def stop(self) -> None:
        deadline = time.monotonic() + self.stop_seconds
        Stat(self).save()
        logger.info("%s stopping: running tasks are interrupted and handed back", self.name)
        self.event_out.set()  # the pusher takes no more
        for process in self.pool:
            if process.is_alive():
                os.kill(process.pid, signal.SIGTERM)  # see _on_stop
        # The pusher may be blocked putting a task into a full local queue: draining frees it.
        # Until it has gone it may also take a task just handed back: drained again below.
        while self.pusher.is_alive() and time.monotonic() < deadline - 2:
            self._drain()
            time.sleep(0.05)
        if self.pusher.is_alive():
            self.pusher.kill()
        self._drain()
        # Idle workers end on a pill; one that takes a task first hands it back and ends. The
        # local queue is bounded (queue_limit): never block on it.
        pills = len(self.pool)
        while pills and time.monotonic() < deadline - 1:
            try:
                self.task_queue.put(STOP, timeout=0.05)
                pills -= 1
            except queue.Full:
                self._drain()
        while self.pool and time.monotonic() < deadline - 1:
            self.pool = [p for p in self.pool if p.is_alive()]
            time.sleep(0.05)
        for process in self.pool:
            logger.warning("worker %s did not stop in time; killing it", process.pid)
            process.kill()
            process.join(1)
        self.pool = []
        self._drain()
        # Nothing may wait at exit to flush a queue nobody reads any more.
        self.task_queue.cancel_join_thread()
        self.result_queue.put(STOP)  # the monitor saves the results it has, then ends
        self.result_queue.cancel_join_thread()
        self.monitor.join(max(0.5, deadline - time.monotonic()))
        if self.monitor.is_alive():
            self.monitor.kill()
        Stat(self).save()
        logger.info("%s stopped", self.name)


def use_bounded_stop(stop_seconds: float) -> None:
    """Make django-q2's ``Cluster`` start our sentinel (it looks the class up by name)."""
    if not hasattr(q_cluster, "Sentinel"):  # pragma: no cover - a django-q2 that moved it
        raise RuntimeError("django_q.cluster.Sentinel not found: this django-q2 is not supported")
    BoundedSentinel.stop_seconds = stop_seconds
    q_cluster.Sentinel = BoundedSentinel
    connect()
