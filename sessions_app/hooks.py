"""Extension points the store calls, so that apps built on it (compression) can act on writes
without the store depending on them: data flows one way, from sessions_app outwards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

AfterAppend = Callable[..., list[dict[str, str]]]
Prepare = Callable[[Any], Any]
AfterReset = Callable[[Any, int, int, str, str], object]  # what it returns is not used
_after_append: list[tuple[AfterAppend, Prepare | None]] = []
_after_reset: list[AfterReset] = []


def register_after_append(hook: AfterAppend, prepare: Prepare | None = None) -> None:
    """``hook(session, usage, prepared, defer=…)`` runs inside the append's transaction and
    returns decisions; ``prepare(session)`` runs before the transaction and its answer is
    ``prepared``: what the hook needs that the append does not change is read there, not under
    the lock."""
    if all(hook is not h for h, _ in _after_append):
        _after_append.append((hook, prepare))


def prepare(session: Any) -> list[Any]:
    return [p(session) if p else None for _, p in _after_append]


def after_append(
    session: Any,
    usage: dict[str, Any] | None,
    prepared: list[Any] | None = None,
    *,
    defer: bool = False,
) -> list[dict[str, str]]:
    """``defer``: the client runs what the hooks decide (they answer it, instead of acting)."""
    decisions: list[dict[str, str]] = []
    for i, (hook, _) in enumerate(_after_append):
        decisions.extend(hook(session, usage, prepared[i] if prepared else None, defer=defer))
    return decisions


def register_after_reset(hook: AfterReset) -> None:
    """``hook(session, archived, tokens_before, source, note)`` runs inside the reset's
    transaction: every reset, whoever asked for it, is then on the session's trail."""
    if all(hook is not h for h in _after_reset):
        _after_reset.append(hook)


def after_reset(session: Any, archived: int, tokens_before: int, source: str, note: str) -> None:
    for hook in _after_reset:
        hook(session, archived, tokens_before, source, note)


# Erasure (sessions_app.services.erase): the search app checks its indexes can take the deletes
# and purges what deleted rows leave on disk; apps holding rows that name a session without a
# foreign key (the task queue's records) delete them.
_before_erase: list[Callable[[], None]] = []
_after_erase: list[Callable[[], None]] = []
_erase_rows: list[Callable[[list[str]], dict[str, int]]] = []

_Hook = TypeVar("_Hook")


def _register(hook: _Hook | None, hooks: list[_Hook]) -> None:
    if hook is not None and all(hook is not h for h in hooks):
        hooks.append(hook)


def register_erase(
    before: Callable[[], None] | None = None,
    after: Callable[[], None] | None = None,
    rows: Callable[[list[str]], dict[str, int]] | None = None,
) -> None:
    """``before()`` may raise to refuse an erasure before anything is deleted; ``rows(ids)``
    runs in the erasure's last transaction and returns what it deleted; ``after()`` runs once
    the rows are gone, outside any transaction."""
    _register(before, _before_erase)
    _register(after, _after_erase)
    _register(rows, _erase_rows)


def before_erase() -> None:
    for hook in _before_erase:
        hook()


def after_erase() -> None:
    for hook in _after_erase:
        hook()


def erase_rows(session_ids: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for hook in _erase_rows:
        for name, n in hook(session_ids).items():
            counts[name] = counts.get(name, 0) + n
    return counts


# Export and restore (sessions_app.services.export / restore): apps that keep rows of their own
# about a session (compression's event trail) add them to its export as lines of their ``kind``
# and write them back on restore, given the old message ids' new ones.
Dump = Callable[[Any], Any]  # session -> iterable of records (dicts)
Load = Callable[[Any, list[dict[str, Any]], dict[int, int]], int]  # -> rows written
_exporters: dict[str, tuple[Dump, Load]] = {}


def register_export(kind: str, dump: Dump, load: Load) -> None:
    _exporters[kind] = (dump, load)


def exporters() -> dict[str, tuple[Dump, Load]]:
    return dict(_exporters)
