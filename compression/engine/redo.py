"""Summarise again from the originals: a live summary replaced by a new one, written by a model
an operator names, from the very rows the first one replaced (they are all kept).

Compressing the session again would hand the new model the weak summary as its "previous
summary"; this hands it the originals. The old summary is archived under the new one (never
deleted: the originals page of the new summary lists it, and its own originals stay linked to
it). If the model fails, nothing changes: the summary in place is at least what a local fallback
would be.
"""

from __future__ import annotations

import time

from django.db import transaction

from compression.engine import claim as claims
from compression.engine import egress
from compression.engine import prompt as prompts
from compression.engine import retention as scoring
from compression.engine.summarizer import SummaryFailed, summarize, vet
from compression.events import record_event, record_written
from compression.models import CompressionEvent
from core.config import SummaryModelConfig, get_config
from core.redaction import Tally
from sessions_app import tokens
from sessions_app.models import Message, Session
from sessions_app.selectors.context import live_rows
from sessions_app.selectors.messages import originals_of, rows_of, summary_in
from sessions_app.selectors.sessions import lock_session
from sessions_app.services import InvalidInput, NotFound, StateConflict
from sessions_app.services.archive import replace_with_summary, save_compressed

Outcome = CompressionEvent.Outcome


def resummarise(
    session: Session,
    summary_id: int,
    *,
    model_name: str = "",
    trigger: str = CompressionEvent.Trigger.MANUAL_ADMIN,
) -> CompressionEvent:
    """Replace the live summary ``summary_id`` with a new summary of its originals by
    ``model_name`` (at the configured summariser's base URL; empty: its own model). Raises
    NotFound, StateConflict (not live, or a compression running) or InvalidInput (no summary
    model configured); a model that fails is a ``failed`` event and changes nothing."""
    configured = get_config().auxiliary.compression
    if not configured.configured:
        raise InvalidInput(
            "No summary model is configured (auxiliary.compression model and base_url): a "
            "summary can only be written again by a model."
        )
    model = configured.model_copy(update={"model": model_name}) if model_name else configured
    summary = summary_in(session.pk, summary_id)
    if summary is None:
        raise NotFound(f"Session {session.pk} has no summary {summary_id}.")
    if not summary.active:
        raise StateConflict(
            "That summary was absorbed by a later one; summarise the live one again instead."
        )
    config = get_config().compression
    claim = claims.take(session, config.context_total_ceiling_seconds + 120)
    if claim is None:
        raise StateConflict(
            f"A compression of session {session.pk} is already running; try again shortly."
        )
    try:
        return _redo(session, summary, model, trigger)
    finally:
        claims.release(session, claim)


def _redo(
    session: Session, summary: Message, model: SummaryModelConfig, trigger: str
) -> CompressionEvent:
    config = get_config().compression
    started = time.monotonic()
    originals = list(originals_of(summary).order_by("position", "id"))
    masked = Tally()
    span = egress.masked_rows(originals, masked)
    chat = [m for m in span if not m.is_summary]
    previous = [m for m in span if m.is_summary]
    replaced_tokens = sum(m.token_count for m in originals)
    budget = prompts.budget_tokens(replaced_tokens, config, session.context_window)
    pinned = [m for m in live_rows(session) if m.pinned]
    built = prompts.build_prompt(
        chat,
        previous,
        target_tokens=budget,
        config=config,
        keep=egress.masked_keep(session, pinned, masked),
    )
    what = f"summary #{summary.position} again from its {len(originals):,} originals"
    try:
        written = summarize(
            built,
            model,
            idle_timeout=config.context_timeout_seconds,
            total_timeout=config.context_total_ceiling_seconds,
        )
        counter = _counter(session)
        vet(written.text, replaced_tokens, counter, budget)
    except SummaryFailed as failed:
        return record_event(
            session,
            trigger,
            Outcome.FAILED,
            f"summarising {what} with {model.model} failed; the summary in place stays",
            started=started,
            error=str(failed),
            summary_model=model.model,
            redactions=masked.as_dict(),
        )
    text = egress.masked_text(written.text, masked) or written.text
    covers = None
    if summary.covers_from_position is not None and summary.covers_to_position is not None:
        covers = (summary.covers_from_position, summary.covers_to_position)
    content = prompts.wrap_summary(text, fallback=False, covers=covers, tool=session.recall_tool)
    summary_tokens = tokens.count_message({"role": summary.role, "content": content}, session.model)
    carried = [m for m in live_rows(session) if m.pk != summary.pk]
    scored = scoring.score_rows(span, text, carried)
    with transaction.atomic():
        locked = lock_session(session)
        still = rows_of(locked, [summary.pk]).filter(active=True)
        if not still.exists():
            return record_event(
                locked,
                trigger,
                Outcome.SKIPPED,
                "the summary left the live context while its replacement was written (reset, "
                "rollback or a later compression); nothing was written",
                started=started,
                summary_model=written.model,
            )
        tokens_before, messages_before = locked.live_tokens, locked.live_messages
        new, archived = replace_with_summary(
            locked,
            still,
            position=summary.position,
            role=summary.role,
            content=content,
            token_count=summary_tokens,
            is_fallback_summary=False,
            covers_from_position=summary.covers_from_position,
            covers_to_position=summary.covers_to_position,
        )
        save_compressed(locked, good=True)
        return record_written(
            locked,
            trigger,
            Outcome.COMPRESSED,
            f"wrote {what} with {written.model}",
            tokens_before=tokens_before,
            messages_before=messages_before,
            summary=new,
            rows_archived=archived,
            threshold_tokens=None,
            summary_model=written.model,
            duration_ms=int((time.monotonic() - started) * 1000),
            redactions=masked.as_dict(),
            **scoring.event_fields(scored),
        )


def _counter(session: Session):
    return lambda text: tokens.count_message({"role": "user", "content": text}, session.model)
