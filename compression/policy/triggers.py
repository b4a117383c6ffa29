"""When to compress (SPEC T1-T5, G1-G2). Every decision -- fire, skip and why -- is written to the
compression-event trail, so "why did (or didn't) this session compress?" always has an answer."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import connection, connections, transaction
from django.db.models import Q
from django.utils import timezone

from compression.engine.compress import AlreadyRunning, CompressionResult, compress
from compression.events import record_event
from compression.models import CompressionEvent
from compression.paths import codex, micro, pruning
from compression.policy import guards
from compression.policy.threshold import threshold_for
from hermes_site.config import get_config
from hermes_site.errors import report
from sessions_app.models import Message, Session
from sessions_app.services.errors import NotFound

logger = logging.getLogger(__name__)
Trigger = CompressionEvent.Trigger
Outcome = CompressionEvent.Outcome
LONG_CONTEXT_WINDOW = 200_000


@dataclass
class Decision:
    trigger: str
    action: str  # compress | skip | locked | queued | running | exhausted, or an outcome
    reason: str
    result: CompressionResult | None = None

    def as_dict(self) -> dict[str, str]:
        return {"trigger": self.trigger, "action": self.action, "reason": self.reason}


def _record(session: Session, trigger: str, outcome: str, reason: str, **fields) -> None:
    record_event(
        session,
        trigger,
        outcome,
        reason,
        tokens_before=fields.get("tokens", session.live_tokens),
        threshold_tokens=fields.get("threshold"),
    )


def decide(
    session: Session,
    trigger: str,
    tokens: int,
    *,
    force_reason: str = "",
    bypass_locks: bool = False,
) -> Decision:
    """Whether ``trigger`` should compress ``session`` at ``tokens``; skips are recorded here,
    firing is recorded by the engine (or by :func:`enqueue`)."""
    threshold = threshold_for(session)
    if not force_reason and tokens < threshold.tokens:
        reason = f"{tokens:,} tokens under the threshold {threshold.tokens:,} ({threshold.reason})"
        _record(
            session, trigger, Outcome.SKIPPED, reason, tokens=tokens, threshold=threshold.tokens
        )
        return Decision(trigger, "skip", reason)
    why = force_reason or f"{tokens:,} tokens at or over the threshold {threshold.tokens:,}"
    block = guards.blocked(session, trigger, bypass_locks=bypass_locks)
    if block:
        _record(
            session,
            trigger,
            Outcome.LOCKED,
            f"{why}, but {block}",
            tokens=tokens,
            threshold=threshold.tokens,
        )
        reason = f"{why}, but {block}"
        # Pruning is what a session held back by its own cooldown or lock can still do; the
        # master switch and a Codex thread hold it back too.
        if block == guards.held(session) and pruning.wanted(tokens, threshold.tokens):
            enqueue_prune(session, trigger)
            reason += "; proactive pruning queued"
        return Decision(trigger, "locked", reason)
    return Decision(trigger, "compress", why)


def enqueue_prune(session: Session, trigger: str) -> None:
    _enqueue_task("compression.tasks.prune_task", session, f"prune {session.pk}", trigger)


def run_automatic(
    session: Session, trigger: str, *, bypass_locks: bool = False, **kwargs: Any
) -> Decision:
    """Compress now for an automatic trigger; a compression already running is not a failure
    (the attempt is refunded), and the anti-thrash state is updated from the result."""
    session.refresh_from_db()
    block = guards.blocked(session, trigger, bypass_locks=bypass_locks)
    if block:
        _record(session, trigger, Outcome.LOCKED, block)
        if block == guards.held(session) and pruning.wanted(
            session.live_tokens, threshold_for(session).tokens
        ):
            pruned = pruning.prune(session, trigger)
            return Decision(trigger, "locked", f"{block}; proactive pruning: {pruned.reason}")
        return Decision(trigger, "locked", block)
    try:
        result = compress(session, trigger=trigger, **kwargs)
    except AlreadyRunning:
        return Decision(trigger, "running", "another compression of this session is running")
    reason = ""
    done = [p for p in result.passes if p.outcome in guards.DONE]
    # A run that wrote nothing because the summary would not have been smaller saved nothing:
    # the anti-thrash guard counts it, or every append would try again.
    done = done or [p for p in result.passes if p.outcome == Outcome.INEFFECTIVE]
    if done:
        locked = guards.record(
            session,
            trigger,
            done[-1].outcome,
            result.passes[0].event.tokens_before,
            done[-1].event.tokens_after,
        )
        if locked:
            reason = f"; anti-thrash: {locked}"
    return Decision(trigger, result.outcome, f"compression {result.outcome}{reason}", result)


# A queued automatic compression that has not started within this long is presumed lost (a
# broker emptied by hand) and may be queued again; a worker that is merely behind finds the one.
AUTO_QUEUE_STALE = timedelta(hours=1)


def pending(session: Session) -> tuple[str, str] | None:
    """Why no further automatic compression should be queued for ``session`` now, as (action,
    reason), or None."""
    now = timezone.now()
    if session.compressing_until and session.compressing_until > now:
        return "running", "a compression of this session is running"
    if session.auto_queued_at and session.auto_queued_at > now - AUTO_QUEUE_STALE:
        return "queued", (
            f"an automatic compression of this session is already queued (since "
            f"{session.auto_queued_at:%H:%M:%S} UTC); not queued again"
        )
    return None


def enqueue(session: Session, trigger: str) -> bool:
    """Run an automatic compression in the worker once the current transaction commits, unless
    one is already queued for this session (False then): at most one waits per session."""
    now = timezone.now()
    marked = (
        Session.objects.filter(pk=session.pk)
        .filter(Q(auto_queued_at__isnull=True) | Q(auto_queued_at__lt=now - AUTO_QUEUE_STALE))
        .update(auto_queued_at=now)
    )
    if not marked:
        return False
    session.auto_queued_at = now
    session_id = str(session.pk)

    def queue() -> None:
        from django_q.tasks import async_task

        try:
            async_task(
                "compression.tasks.automatic_task",
                session_id,
                trigger,
                task_name=f"{trigger} {session_id}",
                group="compression",
            )
        except Exception as exc:
            # The broker refused (Redis down): the write stands; the mark goes, so the next
            # append over the threshold tries again instead of waiting an hour.
            report(exc, f"queueing an automatic compression of session {session_id}")
            Session.objects.filter(pk=session_id, auto_queued_at=now).update(auto_queued_at=None)

    transaction.on_commit(queue)
    return True


def current_tokens(session: Session) -> int:
    """The session's size as best known now: the usage the model last reported (prompt plus
    reply; cleared by every summary write), or the local estimate if that is larger."""
    reported = 0
    if session.last_prompt_tokens is not None:
        reported = session.last_prompt_tokens + (session.last_completion_tokens or 0)
    return max(session.live_tokens, reported)


def still_needed(session: Session, trigger: str) -> Decision | None:
    """A queued automatic compression, when the worker reaches it: a skip (recorded) if the
    session no longer needs it -- an operator or another trigger compressed it meanwhile."""
    tokens = current_tokens(session)
    threshold = threshold_for(session)
    if tokens >= threshold.tokens:
        return None
    reason = (
        f"no longer needed when the worker ran it: {tokens:,} tokens under the threshold "
        f"{threshold.tokens:,} (the session was compressed after it was queued)"
    )
    _record(session, trigger, Outcome.SKIPPED, reason, tokens=tokens, threshold=threshold.tokens)
    return Decision(trigger, "skip", reason)


def after_append(session: Session, usage: dict[str, Any] | None) -> list[Decision]:
    """The check after messages were stored: with the usage a model reported (post-call, T1),
    else with the local estimate. Firing enqueues the compression; the caller never waits."""
    prompt = (usage or {}).get("prompt_tokens", (usage or {}).get("input_tokens"))
    if prompt is not None:
        completion = (usage or {}).get("completion_tokens", (usage or {}).get("output_tokens")) or 0
        trigger, tokens = Trigger.THRESHOLD_POST, int(prompt) + int(completion)
    else:
        trigger, tokens = Trigger.THRESHOLD_PRE, session.live_tokens
        if codex.thread_id(session) is not None:
            # A Codex compaction leaves our rows as they are, so our estimate never drops: only
            # the usage the gateway reports says how big the thread is.
            reason = "a Codex session is measured by the usage its gateway reports; none was sent"
            _record(session, trigger, Outcome.SKIPPED, reason, tokens=tokens)
            return [Decision(trigger, "skip", reason)]
    decision = decide(session, trigger, tokens)
    if decision.action == "compress":
        session.refresh_from_db(fields=["auto_queued_at", "compressing_until"])
        busy = pending(session)
        if busy is None and enqueue(session, trigger):
            decision.action = "queued"
        else:
            if busy is None:  # queued by a concurrent append since this one read the session
                session.refresh_from_db(fields=["auto_queued_at", "compressing_until"])
                busy = pending(session) or ("queued", "an automatic compression is queued")
            decision.action = busy[0]
            decision.reason = f"{decision.reason}; {busy[1]}"
            _record(session, trigger, Outcome.SKIPPED, decision.reason, tokens=tokens)
    decisions = [decision]
    if decision.action != "queued" and micro.due(session):
        every = get_config().compression.micro_compact_every_n_turns
        _enqueue_task("compression.tasks.micro_task", session, f"micro {session.pk}")
        decisions.append(
            Decision(
                Trigger.MICRO, "queued", f"micro-compaction: {every} turn(s) since the last fold"
            )
        )
    return decisions


def _enqueue_task(path: str, session: Session, name: str, *args: Any) -> None:
    """Queue ``path(session_id, *args)`` for the worker once the current transaction commits."""
    from django_q.tasks import async_task

    session_id = str(session.pk)
    transaction.on_commit(
        lambda: async_task(path, session_id, *args, task_name=name, group="compression")
    )


def enqueue_manual(
    session: Session, trigger: str, focus: str | None = None, around: int | None = None
) -> str:
    """Queue an operator's or gateway's compression now and return the task id: such a request
    writes nothing, so there is no commit to wait for. Raises NotFound for an ``around``
    position the session does not have (the engine would otherwise compress near the tail)."""
    from django_q.tasks import async_task

    check_around(session, around)
    return async_task(
        "compression.tasks.compress_task",
        str(session.pk),
        trigger,
        focus,
        around,
        task_name=f"compress {session.pk}",
        group="compression",
    )


def check_around(session: Session, around: int | None) -> None:
    if (
        around is not None
        and not Message.objects.filter(session=session, position=around, is_summary=False).exists()
    ):
        raise NotFound(
            f"There is no message #{around} in this session; leave 'around' empty to compress "
            "the whole middle."
        )


def after_append_hook(session: Session, usage: dict[str, Any] | None) -> list[dict[str, str]]:
    return [d.as_dict() for d in after_append(session, usage)]


def hygiene_needed(session: Session) -> str | None:
    """G1's check: why this session must compress before the next user message reaches the
    agent, or None. Reads only the session's counters and the threshold (O(1): no message scan,
    no network), so it works with the model down and costs the same at any session size."""
    config = get_config().compression
    if codex.thread_id(session) is not None:
        return None  # the model's context is the Codex thread, not our rows
    if session.live_messages >= config.hygiene_hard_message_limit:
        return (
            f"{session.live_messages:,} live messages at or over the hard limit "
            f"{config.hygiene_hard_message_limit:,}"
        )
    tokens = max(session.live_tokens, session.last_prompt_tokens or 0)
    threshold = threshold_for(session).tokens
    if tokens >= threshold:
        return f"{tokens:,} estimated tokens at or over the threshold {threshold:,}"
    return None


def hygiene(session: Session, *, hold: float | None = None) -> Decision:
    """G1/G2: before an inbound user message reaches the agent. Either limit forces a
    compression, bounded by the hygiene timeouts; a failed hygiene compression starts the
    hygiene cooldown. With ``hold`` (a turn is waiting) the compression runs in a thread and
    the turn waits at most that long for it; after that the turn goes on with the current
    context and the compression, still running, leaves its summary for the next turn. It only
    ever summarises rows selected before the turn appended its own."""
    config = get_config().compression
    force = hygiene_needed(session)
    if force is None:
        reason = (
            f"under both hygiene limits: {session.live_messages:,} live messages "
            f"(limit {config.hygiene_hard_message_limit:,}), "
            f"{max(session.live_tokens, session.last_prompt_tokens or 0):,} estimated tokens"
        )
        _record(session, Trigger.HYGIENE, Outcome.SKIPPED, reason)
        return Decision(Trigger.HYGIENE, "skip", reason)
    tokens = max(session.live_tokens, session.last_prompt_tokens or 0)
    since = timezone.now() - timedelta(seconds=config.hygiene_failure_cooldown_seconds)
    recent_failure = CompressionEvent.objects.filter(
        session=session, trigger=Trigger.HYGIENE, outcome=Outcome.FAILED, created_at__gte=since
    ).exists()
    if recent_failure:
        reason = "hygiene cooldown after a failed hygiene compression"
        _record(session, Trigger.HYGIENE, Outcome.LOCKED, reason)
        return Decision(Trigger.HYGIENE, "locked", reason)
    # T2: the hard message limit forces compression whatever else holds it back (the death
    # spiral is exactly a session that cooldowns keep from ever shrinking); the master switch
    # and hygiene's own cooldown still apply.
    hard = session.live_messages >= config.hygiene_hard_message_limit
    decision = decide(session, Trigger.HYGIENE, tokens, force_reason=force, bypass_locks=hard)
    if decision.action != "compress":
        return decision
    if hold is None or connection.in_atomic_block or not config.in_place:
        # Inline: no turn is waiting; or a thread could not see this transaction's rows; or
        # (in_place: false) the compression moves the conversation to a new session, which the
        # turn must follow before it stores anything.
        return _hygiene_compress(session.pk, hard, wait=0)
    finished = _within(hold, lambda: _hygiene_compress(session.pk, hard, wait=hold))
    if finished is not None:
        return finished
    return Decision(
        Trigger.HYGIENE,
        "running",
        f"{force}; the hygiene compression was still running after {hold:g} s "
        "(hygiene_max_turn_hold_seconds): this turn goes on with the current context and the "
        "summary is adopted by the next turn",
    )


def _hygiene_compress(session_id: Any, hard: bool, *, wait: float) -> Decision:
    """The hygiene compression itself; with ``wait``, a compression already running for the
    session is waited for (up to ``wait`` seconds) instead of reported at once."""
    config = get_config().compression
    session = Session.objects.get(pk=session_id)
    try:
        outcome = run_automatic(
            session,
            Trigger.HYGIENE,
            bypass_locks=hard,
            idle_timeout=config.hygiene_timeout_seconds,
            total_timeout=config.hygiene_total_ceiling_seconds,
        )
    except Exception as exc:
        # Recorded as a failed hygiene compression, so G2's cooldown starts: the next turn
        # does not run into the same error.
        message = report(exc, f"the hygiene compression of session {session_id}")
        _record(session, Trigger.HYGIENE, Outcome.FAILED, message)
        return Decision(Trigger.HYGIENE, Outcome.FAILED, message)
    if outcome.action == "running" and wait:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            time.sleep(0.1)
            session.refresh_from_db(fields=["compressing_until"])
            if not session.compressing_until or session.compressing_until < timezone.now():
                return Decision(
                    Trigger.HYGIENE,
                    "waited",
                    "another compression of this session was running; it finished within "
                    "hygiene_max_turn_hold_seconds and this turn uses its result",
                )
        return outcome
    session.refresh_from_db()
    still = hygiene_needed(session) if outcome.action in guards.DONE else None
    if outcome.action in (Outcome.FAILED, Outcome.INEFFECTIVE) or still:
        # G2: a hygiene compression that failed, or left the session over its limits, starts
        # hygiene's own cooldown rather than repeating on every message.
        _record(
            session,
            Trigger.HYGIENE,
            Outcome.FAILED,
            f"hygiene compression did not bring the session under its limits: "
            f"{still or outcome.reason}",
        )
    return outcome


def _within(seconds: float, job: Callable[[], Decision]) -> Decision | None:
    """Run ``job`` in a thread of its own and wait ``seconds`` for it: its decision if it
    finished, None if it is still running (it goes on, and writes its result when done)."""
    box: dict[str, Decision] = {}

    def run() -> None:
        try:
            box["decision"] = job()
        except Exception as exc:
            box["decision"] = Decision(
                Trigger.HYGIENE, Outcome.FAILED, report(exc, "a hygiene compression")
            )
        finally:
            connections.close_all()  # this thread's own connections

    thread = threading.Thread(target=run, name="hermes-hygiene", daemon=True)
    thread.start()
    thread.join(seconds)
    return None if thread.is_alive() else box.get("decision")


# --- Error responses (T4) ---------------------------------------------------------------------

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


def lower_window_for_long_context(session: Session) -> None:
    if session.context_window > LONG_CONTEXT_WINDOW:
        Session.objects.filter(pk=session.pk).update(
            context_window=LONG_CONTEXT_WINDOW,
            context_window_source=Session.WindowSource.LOWERED,
        )
        session.context_window = LONG_CONTEXT_WINDOW
        session.context_window_source = Session.WindowSource.LOWERED


# --- Exhaustion (F3) --------------------------------------------------------------------------


def reset_after_exhaustion(session: Session) -> int:
    """Keep the history up to the last good (model-written) summary and archive what came after;
    with no good summary, archive everything but the system prompt. Never deletes."""
    from sessions_app.services import reset_session

    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        good = (
            Message.objects.filter(
                session=locked, active=True, is_summary=True, is_fallback_summary=False
            )
            .order_by("-position", "-id")
            .first()
        )
        if good is None:
            archived = reset_session(locked)
        else:
            now = timezone.now()
            after = Message.objects.filter(session=locked, active=True, position__gt=good.position)
            stats = list(after.values_list("token_count", flat=True))
            archived = after.update(
                active=False,
                compressed=True,
                archive_reason=Message.ArchiveReason.RESET,
                archived_at=now,
            )
            locked.live_messages -= archived
            locked.live_tokens -= sum(stats)
            locked.last_reset_at = now
            locked.last_prompt_tokens = None  # described the context that was just archived
            locked.save(
                update_fields=[
                    "live_messages",
                    "live_tokens",
                    "last_reset_at",
                    "last_prompt_tokens",
                    "updated_at",
                ]
            )
        Session.objects.filter(pk=locked.pk).update(failure_streak=0, cooldown_until=None)
    session.refresh_from_db()
    _record(
        session,
        Trigger.EXHAUSTION,
        Outcome.RESET,
        f"compression exhausted: session reset, {archived} rows archived",
    )
    return archived
