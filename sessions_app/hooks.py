"""Extension points the store calls, so that apps built on it (compression) can act on writes
without the store depending on them: data flows one way, from sessions_app outwards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

AfterAppend = Callable[[Any, dict[str, Any] | None], list[dict[str, str]]]
_after_append: list[AfterAppend] = []


def register_after_append(hook: AfterAppend) -> None:
    """``hook(session, usage)`` runs inside the append's transaction and returns decisions."""
    if hook not in _after_append:
        _after_append.append(hook)


def after_append(session: Any, usage: dict[str, Any] | None) -> list[dict[str, str]]:
    decisions: list[dict[str, str]] = []
    for hook in _after_append:
        decisions.extend(hook(session, usage))
    return decisions
