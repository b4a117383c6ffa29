"""Recovering from what the model says and from repeated failure: model errors that mean "the
request is too big" (SPEC T4) and the reset after compression is exhausted (F3).

:func:`recover` holds the rules; the turn (and through it ACP) and ``POST
/sessions/{id}/model_error`` -- a gateway whose own model call failed -- all call it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction

from compression.models import CompressionEvent
from compression.policy import guards
from compression.policy.triggers import Decision, record_decision, run_automatic
from core.config import get_config
from core.logs import task_kwargs
from sessions_app.models import Session
from sessions_app.selectors.messages import last_good_summary
from sessions_app.selectors.sessions import lock_session
from sessions_app.services import guard_state
from sessions_app.services.sessions import lower_context_window

Trigger = CompressionEvent.Trigger
Outcome = CompressionEvent.Outcome
LONG_CONTEXT_WINDOW = 200_000


CONTEXT_OVERFLOW = re.compile(
    r"context_length_exceeded|maximum context length|context window|prompt is too long|"
    r"too many tokens|reduce the length|input is too long|exceeds the context",
    re.I,
)
OUTPUT_TOO_LARGE = re.compile(
    r"max_tokens|max_completion_tokens|output.{0,40}too (large|long)", re.I
)
LONG_CONTEXT = re.compile(r"long.?context|extended context|context.{0,20}rate", re.I)


def classify_error(status: int | None, message: str, code: str | None = None) -> str | None:
    """Which model errors mean "the request is too big" (and so call for compression)."""
    text = f"{code or ''} {message}"
    if status == 413 or re.search(r"payload too large|request entity too large", text, re.I):
        return "payload_too_large"
    if status == 429:
        return "long_context_rate_limit" if LONG_CONTEXT.search(text) else None
    if OUTPUT_TOO_LARGE.search(text) and not CONTEXT_OVERFLOW.search(text):
        return "output_too_large"
    if CONTEXT_OVERFLOW.search(text):
        return "context_overflow"
    return None


@dataclass(frozen=True)
class ModelError:
    """What a chat model answered instead of a reply: the HTTP status (None when the error came
    without one), its message, and the provider's error ``code`` and ``type``, when given."""

    status: int | None
    message: str
    code: str | None = None
    type: str | None = None

    @property
    def kind(self) -> str | None:
        code = " ".join(part for part in (self.code, self.type) if part) or None
        return classify_error(self.status, self.message, code)

    @property
    def label(self) -> str:
        return f"HTTP {self.status}" if self.status is not None else "no HTTP status"


@dataclass
class Recovery:
    """What :func:`recover` did: ``kind`` the error's meaning (None: nothing compression can
    help), ``decision`` what was done (None: nothing was needed), ``archived`` the rows an
    exhaustion reset archived (None: no reset)."""

    kind: str | None = None
    decision: Decision | None = None
    archived: int | None = None


Compressor = Callable[[Session, int], Decision]


def _compress_now(session: Session, attempt: int) -> Decision:
    return run_automatic(session, Trigger.ERROR, first_attempt=attempt)


def recover(
    session: Session,
    error: ModelError | None = None,
    *,
    attempt: int = 0,
    exhaustion: bool = True,
    compressor: Compressor = _compress_now,
) -> Recovery:
    """The rules, in order. F3 (``exhaustion``): a failure streak at
    ``exhaustion_failure_limit`` resets the session to its last good summary, and that is all
    (the next call is made with the context it leaves). T4 (``error``): an error that means
    "too big" compresses at once -- the error trigger ignores cooldown and anti-thrash -- a
    long-context 429 lowering the window to 200,000 first; ``attempt`` is how many error
    compressions this call already had (each goes deeper; at ``max_attempts`` there are no
    more); any other error compresses nothing, and is recorded as such. ``compressor`` runs
    the compression (the turn's own thread; the endpoint's worker)."""
    config = get_config().compression
    kind = error.kind if error is not None else None
    if exhaustion and guards.exhausted(session):
        archived = reset_after_exhaustion(session)
        reason = (
            f"compression exhausted after {config.exhaustion_failure_limit} failures: session "
            f"reset to its last good summary ({archived} rows archived)"
        )
        return Recovery(kind, Decision(Trigger.HYGIENE, "exhausted", reason), archived)
    if error is None:
        return Recovery()
    if kind is None:
        reason = f"model error ({error.label}) that compression cannot help: {error.message[:150]}"
        record_decision(session, Trigger.ERROR, Outcome.SKIPPED, reason)
        return Recovery(None, Decision(Trigger.ERROR, "none", reason))
    if attempt >= config.max_attempts:
        reason = (
            f"{kind} ({error.label}), but this call was already compressed {attempt} time(s) "
            f"for errors (compression.max_attempts {config.max_attempts})"
        )
        record_decision(session, Trigger.ERROR, Outcome.SKIPPED, reason)
        return Recovery(kind, Decision(Trigger.ERROR, "none", reason))
    if kind == "long_context_rate_limit":
        lower_window_for_long_context(session)
    step = compressor(session, attempt)
    step.reason = f"{kind} ({error.label}): {step.reason}"
    return Recovery(kind, step)


def error_attempts(session: Session) -> int:
    """How many error compressions the gateway's current call has had: those written since the
    session's last append (a gateway appends once its call has succeeded), as the turn counts
    its own retries."""
    return CompressionEvent.objects.filter(
        session=session,
        trigger=Trigger.ERROR,
        attempt=1,
        outcome__in=CompressionEvent.WROTE,
        created_at__gte=session.last_activity_at,
    ).count()


def enqueue_error(session: Session, attempt: int) -> str:
    """Queue the error compression of a gateway's model error for the worker; the task id."""
    from django_q.tasks import async_task

    return async_task(
        "compression.tasks.error_task",
        str(session.pk),
        attempt,
        task_name=f"compress {session.pk}",
        group="compression",
        **task_kwargs(),
    )


def lower_window_for_long_context(session: Session) -> None:
    lower_context_window(session, LONG_CONTEXT_WINDOW)


# --- Exhaustion (F3) --------------------------------------------------------------------------


def reset_after_exhaustion(session: Session) -> int:
    """Keep the history up to the last good (model-written) summary and archive what came after;
    with no good summary, archive everything but the system prompt. Never deletes."""
    from sessions_app.services import reset_session

    with transaction.atomic():
        locked = lock_session(session)
        good = last_good_summary(locked)
        archived = reset_session(
            locked,
            after_position=good.position if good is not None else None,
            source=Trigger.EXHAUSTION,
            note="compression exhausted: session reset"
            + (" to the last good summary" if good is not None else ""),
        )
        guard_state.end_failures(locked)
    session.refresh_from_db()
    return archived
