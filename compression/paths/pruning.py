"""Proactive pruning (SPEC T7d): when a guard holds compression back but the session is over its
threshold, shrink what the live context sends for tool output -- locally, deterministically, with
no model call.

Outside the tail (and the head), in this order:

1. identical tool results: every later copy is replaced by a one-line reference to the first;
2. large tool results (over ``proactive_prune_min_result_chars``): head and tail kept, the middle
   replaced by a marker saying how much was cut;
3. long tool-call arguments: string values inside the JSON shortened the same way, so the
   arguments stay valid JSON (arguments that are not JSON are left alone).

It writes only when it reclaims at least ``proactive_prune_min_reclaim_tokens``. The original
text never changes: ``content`` and ``tool_calls`` keep it (and search finds it); the pruned form
goes to ``pruned_content`` / ``pruned_tool_calls``, which the live context sends instead. Any error
leaves the session exactly as it was (F4): the transaction rolls back and the failure is recorded
as an event, never raised to the caller.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from compression.engine import claim as claims
from compression.engine.hooks import target_for
from compression.engine.tail import select_live
from compression.events import record_event
from compression.models import CompressionEvent
from core.config import get_config
from core.errors import report
from sessions_app.models import Message, Session
from sessions_app.selectors.context import live_rows
from sessions_app.selectors.sessions import lock_session
from sessions_app.services.pruned import save_pruned
from sessions_app.tokens import count_message

logger = logging.getLogger(__name__)

ARGUMENT_CHARS = 1_000  # a tool-call argument string longer than this is shortened
DEDUP_MIN_CHARS = 200  # shorter identical results are cheaper than a reference to them
Outcome = CompressionEvent.Outcome


@dataclass
class PruneResult:
    outcome: str  # pruned | skipped | failed
    reason: str
    tokens_before: int = 0
    tokens_after: int = 0

    @property
    def reclaimed(self) -> int:
        return self.tokens_before - self.tokens_after


def _cut(text: str, keep: int) -> str:
    """Head and tail of ``text`` with a marker for the middle, at most about ``keep`` chars."""
    head, tail = keep * 3 // 4, keep // 4
    removed = len(text) - head - tail
    return (
        f"{text[:head]}\n[… {removed:,} characters pruned from this tool output to save context; "
        f"the full output is kept and searchable …]\n{text[-tail:] if tail else ''}"
    )


def _shorten_json(value: Any) -> tuple[Any, bool]:
    if isinstance(value, str) and len(value) > ARGUMENT_CHARS:
        return _cut(value, ARGUMENT_CHARS // 2), True
    if isinstance(value, list):
        changed = False
        out = []
        for item in value:
            new, did = _shorten_json(item)
            out.append(new)
            changed |= did
        return out, changed
    if isinstance(value, dict):
        changed = False
        result = {}
        for key, item in value.items():
            new, did = _shorten_json(item)
            result[key] = new
            changed |= did
        return result, changed
    return value, False


def _shorten_calls(calls: list) -> list | None:
    """The tool calls with long argument strings shortened inside their JSON, or None."""
    changed = False
    out = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if (
            not isinstance(function, dict)
            or not isinstance(arguments, str)
            or len(arguments) <= ARGUMENT_CHARS
        ):
            out.append(call)
            continue
        try:
            parsed = json.loads(arguments)
        except ValueError:
            out.append(call)  # not JSON: cutting it could make it invalid; leave it
            continue
        shortened, did = _shorten_json(parsed)
        if not did:
            out.append(call)
            continue
        changed = True
        out.append(
            {
                **call,
                "function": {**function, "arguments": json.dumps(shortened, ensure_ascii=False)},
            }
        )
    return out if changed else None


def _effective(row: Message) -> str:
    return row.pruned_content if row.pruned_content is not None else (row.content or "")


def plan(rows: list[Message], tail: list[Message], min_result_chars: int) -> dict[int, dict]:
    """Per row id, the pruned fields to set. Pure: reads the rows, changes nothing."""
    changes: dict[int, dict] = {}
    first: dict[str, Message] = {}
    middle_ids = {row.pk for row in rows}
    # The oldest copy is kept and later ones point back at it: a rollback removes the newest rows
    # first, so a reference can never outlive the row it names.
    for row in rows + tail:
        if row.role != Message.Role.TOOL or row.content is None:
            continue
        if len(row.content) < DEDUP_MIN_CHARS:
            continue
        digest = hashlib.sha256(row.content.encode()).hexdigest()
        kept = first.setdefault(digest, row)
        if kept is not row and row.pk in middle_ids and row.pruned_content is None:
            changes[row.pk] = {
                "pruned_content": (
                    f"[identical to the tool result at #{kept.position} "
                    f"({kept.tool_call_id}); pruned here to save context]"
                )
            }
    for row in rows:
        if row.pk in changes:
            continue
        if row.role == Message.Role.TOOL and len(_effective(row)) > min_result_chars:
            changes[row.pk] = {"pruned_content": _cut(row.content or "", min_result_chars // 2)}
        elif row.role == Message.Role.ASSISTANT and row.tool_calls:
            calls = _shorten_calls(row.pruned_tool_calls or row.tool_calls)
            if calls is not None:
                changes[row.pk] = {"pruned_tool_calls": calls}
    return changes


def _record(session: Session, result: PruneResult, trigger: str, threshold: int | None) -> None:
    record_event(
        session,
        CompressionEvent.Trigger.PRUNE,
        result.outcome,
        f"{result.reason} (compression held back: {trigger})",
        path=CompressionEvent.Path.PRUNE,
        tokens_before=result.tokens_before or session.live_tokens,
        tokens_after=result.tokens_after if result.outcome == Outcome.PRUNED else None,
        messages_after=session.live_messages,
        threshold_tokens=threshold,
    )


def prune(session: Session, trigger: str, threshold: int | None = None) -> PruneResult:
    """Prune ``session``'s live tool output if that reclaims enough; never raises."""
    config = get_config().compression
    if threshold is None:
        threshold = target_for(session) or 0  # the session's compression threshold
    # A compression summarising this session checks at write-back that the rows it read are
    # unchanged; pruning under it would make it throw its summary away.
    claim = claims.take(session, 120)
    if claim is None:
        return PruneResult(Outcome.SKIPPED, "a compression of this session is running")
    try:
        with transaction.atomic():
            locked = lock_session(session)
            result = _prune_locked(locked, config)
            if result.outcome == Outcome.PRUNED:
                _record(locked, result, trigger, threshold)
    except Exception as exc:  # F4: pruning is an optimisation; failing must change nothing
        message = report(exc, f"proactive pruning of session {session.pk}")
        result = PruneResult(Outcome.FAILED, f"pruning failed, session unchanged. {message}"[:300])
        _record(session, result, trigger, threshold)
    finally:
        claims.release(session, claim)
    session.refresh_from_db()
    return result


def _prune_locked(session: Session, config) -> PruneResult:
    selection = select_live(live_rows(session), config, session.context_window)
    middle = [row for row in selection.middle if not row.is_summary]
    changes = plan(middle, selection.tail, config.proactive_prune_min_result_chars)
    before = session.live_tokens
    if not changes:
        return PruneResult(Outcome.SKIPPED, "nothing to prune outside the tail", before, before)
    by_id = {row.pk: row for row in middle}
    new_counts: dict[int, int] = {}
    for pk, fields in changes.items():
        row = by_id[pk]
        for name, value in fields.items():
            setattr(row, name, value)
        new_counts[pk] = count_message(row.as_openai(), session.model)
    reclaimed = sum(by_id[pk].token_count - n for pk, n in new_counts.items())
    if reclaimed < config.proactive_prune_min_reclaim_tokens:
        return PruneResult(
            Outcome.SKIPPED,
            f"pruning would reclaim {reclaimed:,} tokens, under "
            f"proactive_prune_min_reclaim_tokens ({config.proactive_prune_min_reclaim_tokens:,})",
            before,
            before,
        )
    now = timezone.now()
    for pk, count in new_counts.items():
        row = by_id[pk]
        row.token_count = count
        row.pruned_at = now
    save_pruned(session, [by_id[pk] for pk in new_counts], before - reclaimed)
    return PruneResult(
        Outcome.PRUNED,
        f"pruned {len(new_counts)} tool message(s), reclaiming {reclaimed:,} tokens",
        before,
        before - reclaimed,
    )
