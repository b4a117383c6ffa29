"""Gateway hygiene (SPEC G1, G2, T2): before an inbound user message reaches the agent, the
session's counters decide whether it must compress first -- with the model down too -- and a
turn waits for that compression at most ``hygiene_max_turn_hold_seconds``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import connection, connections
from django.utils import timezone

from compression.models import CompressionEvent
from compression.policy import guards
from compression.policy.threshold import threshold_for
from compression.policy.triggers import Decision, decide, record_decision, run_automatic
from core.config import get_config
from core.errors import report
from sessions_app.models import Session
from sessions_app.selectors.context import external_context
from sessions_app.selectors.sessions import reread

Trigger = CompressionEvent.Trigger
Outcome = CompressionEvent.Outcome


def hygiene_needed(session: Session) -> str | None:
    """G1's check: why this session must compress before the next user message reaches the
    agent, or None. Reads only the session's counters and the threshold (O(1): no message scan,
    no network), so it works with the model down and costs the same at any session size."""
    config = get_config().compression
    if external_context(session) is not None:
        return None  # the model's context lives elsewhere (a Codex thread), not in our rows
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
        record_decision(session, Trigger.HYGIENE, Outcome.SKIPPED, reason)
        return Decision(Trigger.HYGIENE, "skip", reason)
    tokens = max(session.live_tokens, session.last_prompt_tokens or 0)
    cooldown = guards.hygiene_cooldown(session)
    if cooldown:
        record_decision(session, Trigger.HYGIENE, Outcome.LOCKED, cooldown)
        return Decision(Trigger.HYGIENE, "locked", cooldown)
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
    session = reread(session_id)
    try:
        outcome = run_automatic(
            session,
            Trigger.HYGIENE,
            bypass_locks=hard,
            idle_timeout=config.hygiene_timeout_seconds,
            total_timeout=config.hygiene_total_ceiling_seconds,
            message_limit=config.hygiene_hard_message_limit if hard else None,
        )
    except Exception as exc:
        # Recorded as a failed hygiene compression, so G2's cooldown starts: the next turn
        # does not run into the same error.
        message = report(exc, f"the hygiene compression of session {session_id}")
        record_decision(session, Trigger.HYGIENE, Outcome.FAILED, message)
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
        record_decision(
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
