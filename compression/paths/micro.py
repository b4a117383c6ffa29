"""Micro-compaction (SPEC T7c), off by default: after every ``micro_compact_every_n_turns`` turns
the oldest turn outside the protected tail folds into one rolling summary; when that summary
grows past ``micro_compact_defrag_threshold_tokens`` it is consolidated (summarised again on its
own, shorter). It changes the start of the context every turn, so a provider's prompt cache
rarely hits: that is why it is opt-in.

The fold is written in two steps: first the new rolling summary (absorbing the previous one),
then the archiving of the turn it folded. If the second step fails (F4), the summary is kept and
the turn's originals stay live beside it: the next load shows both, and micro-compaction leaves
rows its summary already covers alone, until the next full compression absorbs them all.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.db import transaction

from compression.engine import claim as claims
from compression.engine import egress
from compression.engine import prompt as prompts
from compression.engine import retention as scoring
from compression.engine.fallback import local_summary
from compression.engine.summarizer import SummaryFailed, summarize, vet
from compression.engine.tail import select_live
from compression.events import record_event
from compression.models import CompressionEvent
from core.config import get_config
from core.errors import report
from core.redaction import Tally
from sessions_app import tokens
from sessions_app.models import Message, Session
from sessions_app.selectors.context import live_rows
from sessions_app.selectors.messages import count_still_live, rows_of
from sessions_app.selectors.sessions import lock_session
from sessions_app.services.archive import archive_folded, replace_with_summary, save_compressed

logger = logging.getLogger(__name__)
Outcome = CompressionEvent.Outcome
Trigger = CompressionEvent.Trigger


@dataclass
class MicroResult:
    outcome: str  # compressed | fallback | skipped | failed
    reason: str
    summary: Message | None = None


def _oldest_turn(chat: list[Message], covered_to: int | None) -> list[Message]:
    """The oldest user turn (a user message and what followed it, up to the next user
    message) among rows the rolling summary does not already cover."""
    rows = [m for m in chat if covered_to is None or m.position > covered_to]
    if not rows:
        return []
    group = [rows[0]]
    for row in rows[1:]:
        if row.role == Message.Role.USER:
            break
        group.append(row)
    return group


def _summarise(
    chat: list[Message],
    previous: list[Message],
    target: int,
    masked: Tally,
    keep: list[str] | None = None,
) -> tuple[str, bool, str]:
    """(text, fallback, model name): the summariser, else the local summary, of rows already
    masked (compression.redaction); the text is masked too, whatever the model wrote."""
    config = get_config().compression
    model = get_config().auxiliary.compression
    if model.configured:
        built = prompts.build_prompt(chat, previous, target_tokens=target, config=config, keep=keep)
        try:
            result = summarize(
                built,
                model,
                idle_timeout=config.context_timeout_seconds,
                total_timeout=config.context_total_ceiling_seconds,
            )
            # A fold is one turn: only the refusal rule applies, not the share of tokens.
            vet(result.text, 0, len)
            return egress.masked_text(result.text, masked) or result.text, False, result.model
        except SummaryFailed as failed:
            logger.warning("micro-compaction summary failed: %s", failed)
    room = config.fallback_summary_max_chars - prompts.wrapping_chars(fallback=True)
    return (
        egress.masked_text(local_summary(chat, previous, max(1, room)), masked) or "",
        True,
        "local",
    )


def micro_compact(session: Session) -> MicroResult:
    """Fold the oldest turn outside the tail into the rolling summary."""
    config = get_config().compression
    claim = claims.take(session, config.context_total_ceiling_seconds + 120)
    if claim is None:
        return MicroResult(Outcome.SKIPPED, "another compression of this session is running")
    try:
        return _fold(session, config)
    finally:
        claims.release(session, claim)


def _fold(session: Session, config) -> MicroResult:
    started = time.monotonic()
    session.refresh_from_db()
    live = live_rows(session)
    selection = select_live(live, config, session.context_window)
    # The rolling summary is the run of summaries the middle starts with; the turn to fold is the
    # oldest one after it, before any later summary (a local compression's), so the new summary
    # takes the rolling summary's place and the order of the live context never changes.
    middle = selection.middle
    lead = 0
    while lead < len(middle) and middle[lead].is_summary:
        lead += 1
    previous = middle[:lead]
    chat: list[Message] = []
    for row in middle[lead:]:
        if row.is_summary:
            break
        chat.append(row)
    covered_to = max((m.covers_to_position or m.position for m in previous), default=None)
    group = _oldest_turn(chat, covered_to)
    if not group:
        return MicroResult(Outcome.SKIPPED, "no turn outside the protected tail to fold")
    group_tokens = sum(m.token_count for m in group)
    masked = Tally()
    span = egress.masked_rows(previous, masked) + egress.masked_rows(group, masked)
    text, fallback, model_name = _summarise(
        span[len(previous) :],
        span[: len(previous)],
        prompts.budget_tokens(group_tokens, config, session.context_window),
        masked,
        egress.masked_keep(session, [], masked),  # the memory blocks (a fold moves no pins)
    )
    content = prompts.wrap_summary(text, fallback=fallback)
    # The rolling summary's neighbours once the fold is done: the head's last row, and the row
    # after the folded turn (the rest of the middle, or the tail).
    after = live.index(group[-1]) + 1
    placement = prompts.summary_role(
        selection.head[-1] if selection.head else None,
        live[after] if after < len(live) else None,
    )
    role = placement.role
    summary_tokens = tokens.count_message({"role": role, "content": content}, session.model)
    consolidated = False
    if summary_tokens > config.micro_compact_defrag_threshold_tokens:
        draft = Message(role=role, content=content, is_summary=True, position=group[0].position)
        text, fallback2, _ = _summarise(
            [], [draft], config.micro_compact_defrag_threshold_tokens // 2, masked
        )
        fallback = fallback or fallback2
        content = prompts.wrap_summary(text, fallback=fallback)
        summary_tokens = tokens.count_message({"role": role, "content": content}, session.model)
        consolidated = True

    # Scored on the summary as written (consolidated or not), against the rows it folds.
    folded = {m.pk for m in group + previous}
    scored = scoring.score_rows(span, text, [m for m in live if m.pk not in folded])
    # Step 1: the new rolling summary replaces the previous one.
    first = previous[0] if previous else group[0]
    with transaction.atomic():
        locked = lock_session(session)
        if count_still_live(locked, [m.pk for m in group + previous]) != len(group) + len(previous):
            return MicroResult(
                Outcome.SKIPPED, "the session changed while folding; nothing written"
            )
        tokens_before, messages_before = locked.live_tokens, locked.live_messages
        summary, absorbed = replace_with_summary(
            locked,
            rows_of(locked, [m.pk for m in previous]),
            position=first.position,
            role=role,
            content=content,
            token_count=summary_tokens,
            is_fallback_summary=fallback,
            covers_from_position=first.covers_from_position or first.position,
            covers_to_position=group[-1].position,
        )
        save_compressed(locked, counted=False)
    # Step 2: the folded turn leaves the live context.
    archived = 0
    error = ""
    try:
        archived = archive_folded(session, [m.pk for m in group], summary)
    except Exception as exc:  # F4: keep the summary; originals stay live until a full compression
        error = report(exc, f"micro-compaction of session {session.pk} (archiving the fold)")
    session.refresh_from_db()
    outcome = Outcome.FALLBACK if fallback else Outcome.COMPRESSED
    reason = (
        f"folded the turn at #{group[0].position} to #{group[-1].position} into the rolling summary"
    )
    if consolidated:
        reason += "; the rolling summary passed micro_compact_defrag_threshold_tokens: consolidated"
    if error:
        outcome = Outcome.FAILED
        reason = (
            f"rolling summary stored but its {len(group)} original(s) could not be archived; "
            "both stay in the live context until the next full compression"
        )
    record_event(
        session,
        Trigger.MICRO,
        outcome,
        reason,
        path=CompressionEvent.Path.MICRO,
        started=started,
        tokens_before=tokens_before,
        tokens_after=session.live_tokens,
        messages_before=messages_before,
        messages_after=session.live_messages,
        rows_archived=archived + absorbed,
        summary_message=summary,
        summary_model=model_name,
        error=error,
        redactions=masked.as_dict(),
        **(scoring.event_fields(scored) if outcome in CompressionEvent.WROTE else {}),
    )
    return MicroResult(outcome, reason, summary)
