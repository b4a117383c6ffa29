"""django-q2 tasks. Idempotent: a task for a session already being compressed reports
"already running" instead of producing a second summary."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from compression.engine.compress import AlreadyRunning, CompressionResult, compress
from compression.events import record_event
from compression.models import CompressionEvent
from compression.policy import guards
from core.errors import report
from core.logs import bind_request_id, unbind
from sessions_app.selectors.sessions import find_session
from sessions_app.services import ServiceError, guard_state


def contained(trigger: str | None = None) -> Callable:
    """A task that cannot fail as a task: an unexpected error is logged with its traceback
    under an error id, recorded as a ``failed`` event holding one line with that id, and
    returned as the task's result. Retrying would hit the same bug; what a failed step wrote was
    rolled back with its transaction.

    ``request_id``, passed by whatever queued the task during a request, is bound for the run,
    so the task's log lines (its compression line, an error) name the request that caused it."""

    def wrap(task: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        @functools.wraps(task)
        def run(session_id: str, *args: Any, request_id: str | None = None) -> dict[str, Any]:
            bound = bind_request_id(request_id)
            try:
                return task(session_id, *args)
            except Exception as exc:
                message = report(exc, f"the {task.__name__} of session {session_id}")
                session = find_session(session_id)
                if session is not None:
                    record_event(
                        session,
                        (args[0] if args and trigger is None else trigger)
                        or CompressionEvent.Trigger.MANUAL_API,
                        CompressionEvent.Outcome.FAILED,
                        "internal error; see the error id",
                        error=message,
                    )
                return {"session_id": session_id, "outcome": "failed", "error": message}
            finally:
                unbind(bound)

        return run

    return wrap


# What a pass reports of its summary's score and what it masked (compression.engine.retention,
# compression.redaction).
SCORE_FIELDS = (
    "retention",
    "salient_items",
    "salient_kept",
    "salient_missed",
    "below_floor",
    "redactions",
)


def result_dict(result: CompressionResult) -> dict[str, Any]:
    return {
        "session_id": str(result.session.pk),
        "outcome": result.outcome,
        "passes": [
            {
                "outcome": p.outcome,
                "event_id": p.event.pk,
                "tokens_before": p.event.tokens_before,
                "tokens_after": p.event.tokens_after,
                "rows_archived": p.event.rows_archived,
                "summary_message_id": p.summary.pk if p.summary else None,
                "reason": p.event.reason,
                "error": p.event.error,
                **{name: getattr(p.event, name) for name in SCORE_FIELDS},
            }
            for p in result.passes
        ],
        "continued_in": str(result.continued_in.pk) if result.continued_in else None,
        "needs_confirmation": result.needs_confirmation,
        "live_tokens": result.session.live_tokens,
        "live_messages": result.session.live_messages,
        "notice": result.notice.content if result.notice else None,
    }


@contained()
def compress_task(
    session_id: str,
    trigger: str,
    focus: str | None = None,
    around_position: int | None = None,
    confirm: bool = False,
    memory_context: str | None = None,
) -> dict[str, Any]:
    session = find_session(session_id)
    if session is None:
        return {"session_id": session_id, "outcome": "skipped", "error": "no such session"}
    try:
        result = compress(
            session,
            trigger=trigger,
            focus=focus,
            around_position=around_position,
            confirmed=confirm,
            memory_context=memory_context,
        )
    except AlreadyRunning as exc:
        return {"session_id": session_id, "outcome": "running", "error": exc.message}
    return result_dict(result)


@contained(CompressionEvent.Trigger.MANUAL_ADMIN)
def resummarise_task(session_id: str, summary_id: int, model_name: str = "") -> dict[str, Any]:
    """The console's "summarise again from the originals" (compression.engine.redo)."""
    from compression.engine.redo import resummarise

    session = find_session(session_id)
    if session is None:
        return {"session_id": session_id, "outcome": "skipped", "error": "no such session"}
    try:
        event = resummarise(session, summary_id, model_name=model_name)
    except ServiceError as exc:
        return {"session_id": session_id, "outcome": "refused", "error": exc.message}
    return {"session_id": session_id, "outcome": event.outcome, "event_id": event.pk}


@contained(CompressionEvent.Trigger.MANUAL_ADMIN)
def probe_task(session_id: str, event_id: int, questions: int | None = None) -> dict[str, Any]:
    """The console's "probe this summary" (compression.engine.probe); named with the session so
    an erasure takes a queued one with it."""
    from compression.engine.probe import probe

    event = CompressionEvent.objects.filter(pk=event_id, session_id=session_id).first()
    if event is None:
        return {"session_id": session_id, "event_id": event_id, "error": "no such event"}
    try:
        result = probe(event, questions)
    except ServiceError as exc:
        return {"session_id": session_id, "event_id": event_id, "error": exc.message}
    return {"session_id": session_id, "event_id": event_id, "correct": result["correct"]}


@contained()
def automatic_task(session_id: str, trigger: str) -> dict[str, Any]:
    """An automatic trigger's compression, re-checking the guards when it runs."""
    from compression.policy.triggers import compress_to_limit, run_automatic, still_needed

    # Started: the next append over the threshold may queue another.
    guard_state.unmark_queued(session_id)
    session = find_session(session_id)
    if session is None:
        return {"session_id": session_id, "outcome": "skipped", "error": "no such session"}
    if trigger == CompressionEvent.Trigger.HYGIENE:  # queued by the hard message limit
        decision = compress_to_limit(session)
    else:
        decision = still_needed(session, trigger) or run_automatic(session, trigger)
    if decision.result is not None:
        return result_dict(decision.result)
    return {"session_id": session_id, "outcome": decision.action, "error": decision.reason}


# A decision's action as the answer's outcome, where the two words differ.
DECISION_OUTCOMES = {"skip": "skipped"}


@contained()
def requested_task(
    session_id: str, trigger: str, memory_context: str | None = None
) -> dict[str, Any]:
    """An automatic compression a client asked for (POST /compress with ``automatic``): what
    the worker does with a queued automatic one -- the threshold re-checked, the guards
    applied -- except that no queue mark is its to clear. The answer names the decision."""
    from compression.policy.triggers import run_automatic, still_needed

    session = find_session(session_id)
    if session is None:
        return {"session_id": session_id, "outcome": "skipped", "error": "no such session"}
    decision = still_needed(session, trigger) or run_automatic(
        session, trigger, memory_context=memory_context
    )
    body = (
        result_dict(decision.result)
        if decision.result is not None
        else {
            "session_id": session_id,
            "outcome": DECISION_OUTCOMES.get(decision.action, decision.action),
        }
    )
    if decision.action == "running":
        body["error"] = decision.reason
    return {**body, "trigger": trigger, "reason": decision.reason}


@contained(CompressionEvent.Trigger.ERROR)
def error_task(session_id: str, attempt: int = 0) -> dict[str, Any]:
    """The compression a gateway's model error calls for (POST /sessions/{id}/model_error),
    ``attempt`` deep: the error trigger's own run, which ignores cooldown and anti-thrash."""
    from compression.policy.triggers import run_automatic

    session = find_session(session_id)
    if session is None:
        return {"session_id": session_id, "outcome": "skipped", "error": "no such session"}
    decision = run_automatic(session, CompressionEvent.Trigger.ERROR, first_attempt=attempt)
    body = (
        result_dict(decision.result)
        if decision.result is not None
        else {"session_id": session_id, "outcome": decision.action}
    )
    return {**body, "trigger": CompressionEvent.Trigger.ERROR, "reason": decision.reason}


@contained()
def prune_task(session_id: str, trigger: str) -> dict[str, Any]:
    """Proactive pruning for a session a guard holds back (queued by the trigger check)."""
    from compression.paths import pruning

    session = find_session(session_id)
    if session is None:
        return {"session_id": session_id, "outcome": "skipped", "error": "no such session"}
    if guards.held(session) is None:  # queued while held back; the hold has ended since
        return {"session_id": session_id, "outcome": "skipped", "reason": "no longer held back"}
    result = pruning.prune(session, trigger)
    return {
        "session_id": session_id,
        "outcome": result.outcome,
        "reason": result.reason,
        "reclaimed_tokens": result.reclaimed,
    }


@contained(CompressionEvent.Trigger.MICRO)
def micro_task(session_id: str) -> dict[str, Any]:
    """Micro-compaction after a turn (queued by the trigger check when it is due)."""
    from compression.paths import micro
    from compression.policy import due

    session = find_session(session_id)
    if session is None:
        return {"session_id": session_id, "outcome": "skipped", "error": "no such session"}
    if not due.micro_due(session):  # an earlier task of the same turns folded them already
        return {"session_id": session_id, "outcome": "skipped", "reason": "no fold due"}
    result = micro.micro_compact(session)
    return {"session_id": session_id, "outcome": result.outcome, "reason": result.reason}


def post_compact_task(
    session_id: str,
    event_id: int,
    url: str | None = None,
    attempt: int = 1,
    delivery_id: str | None = None,
    request_id: str | None = None,
) -> dict[str, Any]:
    """The post-compact hooks of one compression (queued when its summary committed), or one
    retry of one of them (``url``, ``attempt``, ``delivery_id``: scheduled after a failure).
    Never fails as a task: every attempt is a delivery record, an unexpected error is reported
    (under the request that caused the compression, ``request_id``)."""
    from compression.engine.checkpoint import deliver_post_compact

    bound = bind_request_id(request_id)
    try:
        deliveries = deliver_post_compact(event_id, url, attempt, delivery_id)
    except Exception as exc:
        message = report(exc, f"the post-compact hooks of session {session_id}")
        return {"session_id": session_id, "event_id": event_id, "error": message}
    finally:
        unbind(bound)
    return {
        "session_id": session_id,
        "event_id": event_id,
        "deliveries": [{"url": d.url, "attempt": d.attempt, "ok": d.ok} for d in deliveries],
    }


def trim_events() -> dict[str, int]:
    """Scheduled hourly: trigger decisions older than events.retention_days go."""
    from compression.events import trim_decisions

    return {"trimmed": trim_decisions()}


def idle_sweep() -> dict[str, Any]:
    """T3, scheduled every minute (the schedule stores this dotted path)."""
    from compression.policy import idle

    return idle.sweep()


def erase_task_records(session_ids: list[str]) -> dict[str, int]:
    """Erasure: the queue's records of this app's tasks for these sessions (their arguments
    hold a manual compression's focus text). Each task is named ``<what> <session id>``."""
    from django.db.models import Q
    from django_q.models import Schedule, Task

    if not session_ids:
        return {}
    named = Q()
    for sid in session_ids:
        named |= Q(name__endswith=f" {sid}")
    deleted, _ = Task.objects.filter(named).delete()
    # Post-compact retries not yet run: they would send the erased summary out again.
    pending, _ = Schedule.objects.filter(named).delete()
    out = {"task records": deleted} if deleted else {}
    if pending:
        out["scheduled retries"] = pending
    return out
