"""What the policy asks of the paths without importing them, filled in at start-up
(``compression.apps``): pruning, run at once for a session a guard holds back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sessions_app.models import Session

# (session, trigger, threshold) -> a result with a ``reason``
Pruner = Callable[[Session, str, int], Any]

_pruner: Pruner | None = None


def register_pruner(pruner: Pruner) -> None:
    global _pruner
    _pruner = pruner


def prune(session: Session, trigger: str, threshold: int) -> str:
    """Prune now; what happened, in words (nothing, without a registered pruner)."""
    if _pruner is None:
        return "no pruner is registered"
    return _pruner(session, trigger, threshold).reason
