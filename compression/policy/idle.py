"""The idle sweep (SPEC T3): sessions left idle with a context at or over the floor are
compressed while nobody waits on them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Exists, OuterRef
from django.utils import timezone

from compression.models import CompressionEvent
from compression.policy.triggers import decide, run_automatic
from core.config import get_config
from sessions_app.selectors.sessions import idle_since

IDLE_SWEEP_LIMIT = 20  # sessions per sweep; the next sweep takes the rest


def sweep() -> dict[str, Any]:
    """T3, scheduled every minute: compress sessions idle for ``idle_compact_after_seconds`` whose
    live tokens are at or over the threshold floor (64,000). Off while that setting is 0."""
    config = get_config().compression
    if not config.idle_compact_after_seconds:
        return {"idle": "off"}
    now = timezone.now()
    # A session the sweep already handled since its last activity waits for new activity:
    # one that cannot shrink below the floor must not take every sweep's places for ever.
    handled = CompressionEvent.objects.filter(
        session=OuterRef("pk"),
        trigger=CompressionEvent.Trigger.IDLE,
        last_at__gt=OuterRef("last_activity_at"),  # a repeated decision's latest repeat
    )
    idle = idle_since(
        now - timedelta(seconds=config.idle_compact_after_seconds),
        config.threshold_floor_tokens,
        now=now,
        leave=Exists(handled),
    )[:IDLE_SWEEP_LIMIT]
    done = {}
    for session in idle:
        reason = (
            f"idle since {session.last_activity_at:%Y-%m-%d %H:%M:%S} with "
            f"{session.live_tokens:,} live tokens (floor {config.threshold_floor_tokens:,})"
        )
        decision = decide(
            session, CompressionEvent.Trigger.IDLE, session.live_tokens, force_reason=reason
        )
        if decision.action == "compress":
            decision = run_automatic(session, CompressionEvent.Trigger.IDLE)
        done[str(session.pk)] = decision.action
    return {"idle": done}
