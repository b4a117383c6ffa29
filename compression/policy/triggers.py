"""When to compress (SPEC T1, T3, T5, T8): the threshold checks on every append, automatic runs and
the queue of them, manual requests. Every decision -- fire, skip and why -- is written to the
compression-event trail, so "why did (or didn't) this session compress?" always has an answer.
Hygiene is in ``hygiene``, model errors and exhaustion in ``recovery``."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from compression.engine.compress import AlreadyRunning, CompressionResult, compress
from compression.events import record_repeatable
from compression.models import CompressionEvent
from compression.policy import due, guards, hooks
from compression.policy.threshold import Threshold, threshold_for
from core.config import get_config
from core.errors import report
from core.logs import task_kwargs
from sessions_app.models import Message, Session
from sessions_app.selectors.context import external_context
from sessions_app.selectors.messages import has_original_at
from sessions_app.services import guard_state
from sessions_app.services.errors import NotFound

logger = logging.getLogger(__name__)
Trigger = CompressionEvent.Trigger
Outcome = CompressionEvent.Outcome


@dataclass
class Decision:
    trigger: str
    action: str  # compress | skip | locked | queued | running | exhausted, or an outcome
    reason: str
    result: CompressionResult | None = None

    def as_dict(self) -> dict[str, str]:
        return {"trigger": self.trigger, "action": self.action, "reason": self.reason}


def record_decision(
    session: Session, trigger: str, outcome: str, reason: str, **fields: Any
) -> None:
    """A trigger's decision in the event trail (``tokens`` and ``threshold`` as it saw them);
    the same decision on consecutive appends is one row with a count."""
    record_repeatable(
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
    threshold: Threshold | None = None,
) -> Decision:
    """Whether ``trigger`` should compress ``session`` at ``tokens``; skips are recorded here,
    firing is recorded by the engine (or by :func:`enqueue`). ``threshold``: the session's, if
    the caller read it already."""
    threshold = threshold or threshold_for(session)
    if not force_reason and tokens < threshold.tokens:
        reason = f"{tokens:,} tokens under the threshold {threshold.tokens:,} ({threshold.reason})"
        record_decision(
            session, trigger, Outcome.SKIPPED, reason, tokens=tokens, threshold=threshold.tokens
        )
        return Decision(trigger, "skip", reason)
    why = force_reason or f"{tokens:,} tokens at or over the threshold {threshold.tokens:,}"
    block = guards.blocked(session, trigger, bypass_locks=bypass_locks)
    if block:
        record_decision(
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
        if block == guards.held(session) and due.prune_wanted(tokens, threshold.tokens):
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
        record_decision(session, trigger, Outcome.LOCKED, block)
        threshold = threshold_for(session).tokens
        if block == guards.held(session) and due.prune_wanted(session.live_tokens, threshold):
            pruned = hooks.prune(session, trigger, threshold)
            return Decision(trigger, "locked", f"{block}; proactive pruning: {pruned}")
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
    if not guard_state.mark_queued(session, now, stale_before=now - AUTO_QUEUE_STALE):
        return False
    session_id = str(session.pk)
    request_kwargs = task_kwargs()  # read now: on_commit may run outside the request's context

    def queue() -> None:
        from django_q.tasks import async_task

        try:
            async_task(
                "compression.tasks.automatic_task",
                session_id,
                trigger,
                task_name=f"{trigger} {session_id}",
                group="compression",
                **request_kwargs,
            )
        except Exception as exc:
            # The broker refused (Redis down): the write stands; the mark goes, so the next
            # append over the threshold tries again instead of waiting an hour.
            report(exc, f"queueing an automatic compression of session {session_id}")
            guard_state.unmark_queued(session_id, now)

    transaction.on_commit(queue)
    return True


def current_tokens(session: Session) -> int:
    """The session's size as best known now: the usage the model last reported (prompt plus
    reply; cleared by every summary write), or the local estimate if that is larger."""
    reported = 0
    if session.last_prompt_tokens is not None:
        reported = session.last_prompt_tokens + (session.last_completion_tokens or 0)
    return max(session.live_tokens, reported)


def over_hard_limit(session: Session) -> str | None:
    """T2/G1: why ``session`` holds too many live messages to go on as it is (at or over
    ``hygiene_hard_message_limit``), or None. A context that lives elsewhere (a Codex thread)
    is not measured by our rows."""
    limit = get_config().compression.hygiene_hard_message_limit
    if session.live_messages < limit or external_context(session) is not None:
        return None
    return (
        f"{session.live_messages:,} live messages at or over the hard limit {limit:,} "
        "(compression.hygiene_hard_message_limit)"
    )


def hard_limit_on_append(session: Session) -> Decision | None:
    """The hard message limit after an append (T2, G1): it queues a compression that bypasses
    cooldown and anti-thrash -- the death spiral is exactly a session its guards keep from ever
    shrinking -- whatever the token threshold says, ``defer`` or not. The master switch and
    hygiene's own cooldown (G2: the last one failed) still hold it back. None: under it."""
    why = over_hard_limit(session)
    if why is None:
        return None
    block = guards.blocked(session, Trigger.HYGIENE, bypass_locks=True) or guards.hygiene_cooldown(
        session
    )
    if block:
        record_decision(session, Trigger.HYGIENE, Outcome.LOCKED, f"{why}, but {block}")
        return Decision(Trigger.HYGIENE, "locked", f"{why}, but {block}")
    busy = pending(session)
    if busy is None and enqueue(session, Trigger.HYGIENE):
        return Decision(Trigger.HYGIENE, "queued", why)
    if busy is None:  # queued by a concurrent append since this one read the session
        session.refresh_from_db(fields=["auto_queued_at", "compressing_until"])
        busy = pending(session) or ("queued", "an automatic compression is queued")
    reason = f"{why}; {busy[1]}"
    record_decision(session, Trigger.HYGIENE, Outcome.SKIPPED, reason)
    return Decision(Trigger.HYGIENE, busy[0], reason)


def compress_to_limit(session: Session) -> Decision:
    """The worker's compression for the hard message limit: passes until the session is under
    it (or a pass makes no progress); left over it, it starts hygiene's cooldown (G2), so the
    next appends do not repeat it at once."""
    config = get_config().compression
    why = over_hard_limit(session)
    if why is None:
        reason = (
            f"no longer needed when the worker ran it: {session.live_messages:,} live messages "
            f"under the hard limit {config.hygiene_hard_message_limit:,}"
        )
        record_decision(session, Trigger.HYGIENE, Outcome.SKIPPED, reason)
        return Decision(Trigger.HYGIENE, "skip", reason)
    decision = run_automatic(
        session,
        Trigger.HYGIENE,
        bypass_locks=True,
        message_limit=config.hygiene_hard_message_limit,
    )
    if decision.action == "running":
        return decision
    session.refresh_from_db()
    still = over_hard_limit(session)
    if still or decision.action not in guards.DONE:
        record_decision(
            session,
            Trigger.HYGIENE,
            Outcome.FAILED,
            "hard-limit compression did not bring the session under the limit: "
            f"{still or decision.reason}",
        )
    return decision


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
    record_decision(
        session, trigger, Outcome.SKIPPED, reason, tokens=tokens, threshold=threshold.tokens
    )
    return Decision(trigger, "skip", reason)


def after_append(
    session: Session,
    usage: dict[str, Any] | None,
    threshold: Threshold | None = None,
    *,
    defer: bool = False,
) -> list[Decision]:
    """The check after messages were stored: with the usage a model reported (post-call, T1),
    else with the local estimate. Firing enqueues the compression; the caller never waits.
    ``session``'s counters and queue marks are the ones the append just stored (read back by
    its write, under the lock); ``threshold`` was read before the append took the lock.
    ``defer``: a client that runs its own model loop runs the compression itself (POST
    /compress with ``automatic``); firing answers ``due`` instead of queueing it."""
    hard = hard_limit_on_append(session)
    if hard is not None and hard.action != "locked":
        return [hard]  # the one compression this session gets now
    ahead = [hard] if hard is not None else []
    prompt = (usage or {}).get("prompt_tokens", (usage or {}).get("input_tokens"))
    if prompt is not None:
        completion = (usage or {}).get("completion_tokens", (usage or {}).get("output_tokens")) or 0
        trigger, tokens = Trigger.THRESHOLD_POST, int(prompt) + int(completion)
    else:
        trigger, tokens = Trigger.THRESHOLD_PRE, session.live_tokens
        if external_context(session) is not None:
            # A Codex compaction leaves our rows as they are, so our estimate never drops: only
            # the usage the gateway reports says how big the thread is.
            reason = "a Codex session is measured by the usage its gateway reports; none was sent"
            record_decision(session, trigger, Outcome.SKIPPED, reason, tokens=tokens)
            return [*ahead, Decision(trigger, "skip", reason)]
    decision = decide(session, trigger, tokens, threshold=threshold)
    if decision.action == "compress":
        busy = pending(session)
        if busy is None and defer:
            decision.action = "due"
            decision.reason += "; due: the client runs it (POST /compress, automatic)"
        elif busy is None and enqueue(session, trigger):
            decision.action = "queued"
        else:
            if busy is None:  # queued by a concurrent append since this one read the session
                session.refresh_from_db(fields=["auto_queued_at", "compressing_until"])
                busy = pending(session) or ("queued", "an automatic compression is queued")
            decision.action = busy[0]
            decision.reason = f"{decision.reason}; {busy[1]}"
            record_decision(session, trigger, Outcome.SKIPPED, decision.reason, tokens=tokens)
    decisions = [*ahead, decision]
    if decision.action not in ("queued", "due") and due.micro_due(session):
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
    request_kwargs = task_kwargs()
    transaction.on_commit(
        lambda: async_task(
            path, session_id, *args, task_name=name, group="compression", **request_kwargs
        )
    )


def enqueue_manual(
    session: Session,
    trigger: str,
    focus: str | None = None,
    around: int | None = None,
    confirm: bool = False,
    memory_context: str | None = None,
) -> str:
    """Queue an operator's or gateway's compression now and return the task id: such a request
    writes nothing, so there is no commit to wait for. Raises NotFound for an ``around``
    position the session does not have (the engine would otherwise compress near the tail).
    ``confirm``: go on without the pre-compact checkpoint if it fails. ``memory_context``:
    the client's memory providers' text, for the summariser's prompt."""
    from django_q.tasks import async_task

    check_around(session, around)
    return async_task(
        "compression.tasks.compress_task",
        str(session.pk),
        trigger,
        focus,
        around,
        confirm,
        memory_context,
        task_name=f"compress {session.pk}",
        group="compression",
        **task_kwargs(),
    )


def enqueue_again(summary: Message, model_name: str) -> str:
    """Queue "summarise again from the originals" (compression.engine.redo) and return the task
    id; named with the session so an erasure takes it with the session."""
    from django_q.tasks import async_task

    return async_task(
        "compression.tasks.resummarise_task",
        str(summary.session_id),
        summary.pk,
        model_name,
        task_name=f"resummarise {summary.session_id}",
        group="compression",
        **task_kwargs(),
    )


def enqueue_probe(event: CompressionEvent, questions: int | None = None) -> str:
    """Queue a probe of the summary ``event`` wrote (compression.engine.probe)."""
    from django_q.tasks import async_task

    return async_task(
        "compression.tasks.probe_task",
        str(event.session_id),
        event.pk,
        questions,
        task_name=f"probe {event.session_id}",
        group="compression",
        **task_kwargs(),
    )


def requested_trigger(session: Session) -> str:
    """The trigger an automatic compression a client asks for runs as: the threshold check
    that answered it due -- on the usage the model reported, if any is known since the last
    summary, else on the estimate."""
    if session.last_prompt_tokens is not None:
        return Trigger.THRESHOLD_POST
    return Trigger.THRESHOLD_PRE


def enqueue_requested(session: Session, memory_context: str | None = None) -> str:
    """Queue the automatic compression a client asks for (it deferred the append's decision to
    itself) and return the task id. The worker runs it as the service's own trigger would:
    the threshold re-checked, the guards applied."""
    from django_q.tasks import async_task

    return async_task(
        "compression.tasks.requested_task",
        str(session.pk),
        requested_trigger(session),
        memory_context,
        task_name=f"compress {session.pk}",
        group="compression",
        **task_kwargs(),
    )


def check_around(session: Session, around: int | None) -> None:
    if around is not None and not has_original_at(session, around):
        raise NotFound(
            f"There is no message #{around} in this session; leave 'around' empty to compress "
            "the whole middle."
        )


def prepare_append(session: Session) -> Threshold:
    return threshold_for(session)


def after_append_hook(
    session: Session,
    usage: dict[str, Any] | None,
    threshold: Threshold | None,
    *,
    defer: bool = False,
) -> list[dict[str, str]]:
    return [d.as_dict() for d in after_append(session, usage, threshold, defer=defer)]
