"""When the lighter paths run: proactive pruning (T7d) and micro-compaction (T7c). The paths
themselves act; the policy decides, with the same guards as every automatic trigger."""

from __future__ import annotations

from compression.models import CompressionEvent
from compression.policy import guards
from core.config import get_config
from sessions_app.models import Session
from sessions_app.selectors.context import external_context
from sessions_app.selectors.messages import user_messages_since

Trigger = CompressionEvent.Trigger
Outcome = CompressionEvent.Outcome


def prune_wanted(tokens: int, threshold: int) -> bool:
    """Whether pruning should run for a session a guard holds back at ``tokens`` (over its
    compression ``threshold`` and at least ``proactive_prune_tokens``; 0 turns pruning off)."""
    floor = get_config().compression.proactive_prune_tokens
    return bool(floor) and tokens >= max(floor, threshold)


def turns_since_last_fold(session: Session) -> int:
    last = (
        CompressionEvent.objects.filter(
            session=session,
            trigger=Trigger.MICRO,
            outcome__in=CompressionEvent.WROTE,
        )
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    return user_messages_since(session, last)


def micro_due(session: Session) -> bool:
    """Micro-compaction is automatic: the master switch, a cooldown after a failed summary and
    the anti-thrash lock hold it back as they do every automatic trigger; a session whose
    context lives elsewhere (a Codex thread) is not ours to fold, in every mode."""
    config = get_config().compression
    if not config.micro_compact or external_context(session) is not None:
        return False
    if guards.blocked(session, Trigger.MICRO):
        return False
    return turns_since_last_fold(session) >= config.micro_compact_every_n_turns
