"""What the engine asks of the layers above it without importing them. The app fills these in
at start-up (``compression.apps``); with nothing registered the engine still works: one pass per
run, and a session whose context lives elsewhere is left alone."""

from __future__ import annotations

from collections.abc import Callable

from compression.models import CompressionEvent
from sessions_app.models import Session

Target = Callable[[Session], int]
Compactor = Callable[[Session, str], CompressionEvent]

_target: Target | None = None
_compactors: dict[str, Compactor] = {}


def register_target(target: Target) -> None:
    """The policy's threshold: further passes of a run go on while the session is over it."""
    global _target
    _target = target


def target_for(session: Session) -> int | None:
    return _target(session) if _target is not None else None


def register_compactor(kind: str, compactor: Compactor) -> None:
    """A path that compacts a context living elsewhere (``external_context``), e.g. Codex."""
    _compactors[kind] = compactor


def compactor_for(kind: str) -> Compactor | None:
    return _compactors.get(kind)
