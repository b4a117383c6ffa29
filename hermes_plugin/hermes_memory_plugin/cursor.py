"""Where Hermes's working list and the service part: the mirror's cursor.

The cursor is a count of Hermes's leading messages the service has and the signature of the
last of them (``anchor``), with those of the last few (``recent``). Hermes's list moves under
it: a reloaded session comes back cleaned, Hermes inserts a message, an undo drops the last
turn, a partial ``/compress`` hands over only the older part. Each is found again here.
"""

from __future__ import annotations

import logging
from typing import Any

from .convert import signature, to_service
from .store import Batch, Conversation, State

log = logging.getLogger("hermes_memory_plugin")
BATCH_MAX = 500  # messages per POST (the service takes at most 1,000)
RECENT = 64  # signatures kept of the last mirrored messages


def _find_anchor(state: State, history: list[Any]) -> int | None:
    """The index after the last mirrored message in ``history`` (its signature looked for at
    the cursor first, then ever further from it), or None."""
    base = state.base
    if base <= len(history) and signature(history[base - 1]) == state.anchor:
        return base
    for offset in range(1, len(history) + base + 1):
        for index in (base - 1 - offset, base - 1 + offset):
            if 0 <= index < len(history) and signature(history[index]) == state.anchor:
                return index + 1
        if base - 1 - offset < 0 and base - 1 + offset >= len(history):
            break
    return None


def locate(state: State, history: list[Any]) -> int:
    """Where the messages the service does not have begin in ``history``: after the last
    mirrored message, found again by its signature where Hermes's list moved (a reloaded
    session, a message Hermes inserted)."""
    if state.base <= 0 or state.anchor is None:
        return 0
    found = _find_anchor(state, history)
    if found is not None:
        return found
    went_back = _went_back(state, history)
    if went_back is not None:
        log.info(
            "hermes-memory: Hermes's list went back (an undo, a retry): mirroring after its "
            "message %d; what it dropped stays in the service",
            went_back,
        )
        return went_back
    log.warning(
        "hermes-memory: the last mirrored message is no longer in Hermes's list of %d "
        "(it had %d); mirroring from there",
        len(history),
        state.base,
    )
    return min(state.base, len(history))


def _went_back(state: State, history: list[Any]) -> int | None:
    """After Hermes dropped its last messages (``/undo``, ``/retry``): the index after the
    newest message of ``history`` that is one of the recently mirrored ones."""
    recent = set(state.recent)
    for index in range(min(len(history), state.base) - 1, -1, -1):
        if signature(history[index]) in recent:
            return index + 1
    return None


def held_back(state: State, messages: list[Any]) -> int:
    """How many mirrored messages follow ``messages`` when it is only the older part of
    Hermes's list (the gateway's ``/compress here N`` summarises the head and keeps the last N
    turns as they are): 0 for the whole list."""
    kept = state.base - len(messages)
    if kept <= 0 or state.anchor is None or not messages or kept >= len(state.recent):
        return 0
    if _find_anchor(state, messages) is not None:
        return 0
    # Its last message is the one mirrored ``kept`` before the last (not so after an undo).
    return kept if state.recent[-1 - kept] == signature(messages[-1]) else 0


def take(conversation: Conversation, history: list[Any]) -> Batch | None:
    """Spool the new messages of ``history`` (with the pending usage) and move the cursor."""
    state = conversation.state
    start = locate(state, history)
    new = [m for m in (to_service(x) for x in history[start:]) if m is not None]
    batch = None
    for first in range(0, len(new), BATCH_MAX):
        chunk = new[first : first + BATCH_MAX]
        last = first + BATCH_MAX >= len(new)
        batch = conversation.spool(chunk, state.usage if last else None)
    if batch is not None:
        state.usage = None
    if history:
        set_cursor(state, history)
    return batch


def set_cursor(state: State, history: list[Any], end: int | None = None) -> None:
    """The cursor after ``history[:end]`` (all of it by default)."""
    end = len(history) if end is None else end
    state.base = end
    state.anchor = signature(history[end - 1]) if end else None
    state.recent = [signature(m) for m in history[max(0, end - RECENT) : end]]
