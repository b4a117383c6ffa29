"""Failure protection for automatic compression (SPEC F1-F3, T8), persisted on the session row.

* cooldown (F1): after a failed summary automatic triggers skip until ``cooldown_until``;
* anti-thrash (F2): ``anti_thrash_consecutive`` compressions in a row that each saved less than
  ``anti_thrash_min_savings`` lock automatic compression for ``anti_thrash_lock_seconds``; so do
  more than ``anti_thrash_max_compressions`` within ``anti_thrash_window_seconds`` (a loop that
  "succeeds" every few turns). When the lock ends, the next compression is the probe: a good one
  clears the streak, a poor one locks again. Every lock ends, so nothing latches forever;
* exhaustion (F3): ``exhaustion_failure_limit`` failures in a row mean "compression exhausted".

Manual triggers bypass all of these (T6); error triggers bypass cooldown and anti-thrash (T4: the
call cannot succeed without compressing).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from compression.models import CompressionEvent
from core.config import get_config
from sessions_app.models import Session
from sessions_app.selectors.context import external_context
from sessions_app.services import guard_state

Trigger = CompressionEvent.Trigger
MANUAL = CompressionEvent.MANUAL
BYPASS_LOCKS = MANUAL | {Trigger.ERROR}
DONE = (CompressionEvent.Outcome.COMPRESSED, CompressionEvent.Outcome.FALLBACK)


def blocked(
    session: Session, trigger: str, now: datetime | None = None, *, bypass_locks: bool = False
) -> str | None:
    """Why an automatic trigger may not compress now, or None if it may."""
    if trigger in MANUAL:
        return None
    elsewhere = external_block(session)
    if elsewhere:
        return elsewhere
    config = get_config().compression
    if not config.enabled:
        return "automatic compression is off (compression.enabled: false)"
    if trigger in BYPASS_LOCKS or bypass_locks:
        return None
    return held(session, now)


def external_block(session: Session) -> str | None:
    """Why an automatic trigger must leave a session whose context lives elsewhere (a Codex
    thread) alone, or None: in ``native`` mode Codex compacts its own thread, in ``off`` mode
    nobody does automatically; ``managed`` lets our triggers decide."""
    if external_context(session) != "codex":
        return None
    mode = get_config().compression.codex_app_server_auto
    if mode == "native":
        return "Codex compacts this session's thread itself (codex_app_server_auto: native)"
    if mode == "off":
        return "automatic compaction of Codex sessions is off (codex_app_server_auto: off)"
    return None


def held(session: Session, now: datetime | None = None) -> str | None:
    """The cooldown or anti-thrash lock holding this session back right now, or None."""
    now = now or timezone.now()
    if session.cooldown_until and now < session.cooldown_until:
        return f"cooldown after a failed summary until {session.cooldown_until:%Y-%m-%d %H:%M:%S}"
    if session.thrash_lock_until and now < session.thrash_lock_until:
        return f"anti-thrash lock until {session.thrash_lock_until:%Y-%m-%d %H:%M:%S}"
    return None


def hygiene_cooldown(session: Session) -> str | None:
    """G2: a hygiene compression failed (or left the session over its limits) within
    ``hygiene_failure_cooldown_seconds``, so the hard message limit does not force another one
    yet; the reason, or None."""
    since = timezone.now() - timedelta(
        seconds=get_config().compression.hygiene_failure_cooldown_seconds
    )
    failed = CompressionEvent.objects.filter(
        session=session,
        trigger=Trigger.HYGIENE,
        outcome=CompressionEvent.Outcome.FAILED,
        created_at__gte=since,
    ).exists()
    return "hygiene cooldown after a failed hygiene compression" if failed else None


def exhausted(session: Session) -> bool:
    return session.failure_streak >= get_config().compression.exhaustion_failure_limit


def record(
    session: Session,
    trigger: str,
    outcome: str,
    tokens_before: int | None,
    tokens_after: int | None,
) -> str | None:
    """Update the anti-thrash state after one automatic compression *run* (all its passes
    together); returns the lock reason if this run locked automatic compression."""
    if trigger in MANUAL or outcome not in (*DONE, CompressionEvent.Outcome.INEFFECTIVE):
        return None
    config = get_config().compression
    now = timezone.now()
    # A Codex app-server compaction reports no token counts: its savings are unknown, so only
    # the frequency guard applies to it.
    savings = None  # unknown
    if tokens_before and tokens_after is not None:
        savings = 1 - tokens_after / tokens_before
    previous_lock = session.thrash_lock_until
    probe = previous_lock is not None and previous_lock <= now
    if savings is not None and savings < config.anti_thrash_min_savings:
        guard_state.count_ineffective(session)
    elif savings is not None:
        guard_state.clear_ineffective(session)
    session.refresh_from_db(fields=["ineffective_streak", "thrash_lock_until"])
    reason = None
    if savings is not None and session.ineffective_streak >= config.anti_thrash_consecutive:
        reason = (
            f"{session.ineffective_streak} compressions in a row saved under "
            f"{config.anti_thrash_min_savings:.0%}"
        )
    elif not (probe and savings is not None and savings >= config.anti_thrash_min_savings):
        # Runs, not passes: each run's first event. A good probe after a lock is not re-locked
        # by the runs that caused that lock: count only runs since the last lock ended.
        # Micro-compaction folds one turn at a time by design: its folds are not full
        # compressions and do not count here.
        window_start = now - timedelta(seconds=config.anti_thrash_window_seconds)
        if previous_lock is not None and previous_lock > window_start:
            window_start = previous_lock
        recent = (
            CompressionEvent.objects.filter(
                session=session, created_at__gte=window_start, outcome__in=DONE, attempt=1
            )
            .exclude(trigger__in=MANUAL)
            .exclude(path=CompressionEvent.Path.MICRO)
            .count()
        )
        if recent > config.anti_thrash_max_compressions:
            reason = (
                f"{recent} automatic compressions within {config.anti_thrash_window_seconds:g} s"
            )
    if reason:
        until = now + timedelta(seconds=config.anti_thrash_lock_seconds)
        guard_state.lock_automatic(session, until)
    return reason
