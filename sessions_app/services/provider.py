"""A session whose context lives elsewhere (a Codex app-server thread): what the store keeps of
the compactions made there."""

from __future__ import annotations

from typing import Any

from sessions_app.models import Session


def save_compactions_elsewhere(
    locked: Session, provider_state: dict[str, Any], count: int, *, ended_failures: bool = False
) -> None:
    """``count`` compactions were made where the context lives: the session counts them and
    keeps the provider's state (which of its notifications it has seen); one we asked for that
    succeeded ends the failure streak (``ended_failures``). Call under the session's lock."""
    locked.provider_state = provider_state
    locked.compressions += count
    fields = ["provider_state", "compressions"]
    if ended_failures:
        locked.failure_streak = 0
        fields.append("failure_streak")
    locked.save(update_fields=fields)
