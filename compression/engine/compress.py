"""The compression engine: head + summary + tail, written back without losing a word.

One compression per session at a time (an expiring claim on the session row). The model call
happens outside any transaction; the write-back is one short transaction that re-checks the rows
it replaces, so messages appended meanwhile stay live after the summary, and a session changed
under it (reset, deep rollback) is left alone.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from compression.engine import checkpoint, egress, hooks, notice
from compression.engine import claim as claims
from compression.engine import prompt as prompts
from compression.engine import retention as scoring
from compression.engine.fallback import local_summary
from compression.engine.selection import Selection, select_around
from compression.engine.summarizer import SummaryFailed, summarize, vet
from compression.engine.tail import select_live
from compression.events import record_event, record_written
from compression.models import CompressionEvent
from core.config import get_config
from core.redaction import Tally
from core.text import counted
from sessions_app import tokens
from sessions_app.models import Message, Session
from sessions_app.selectors.context import external_context, live_rows
from sessions_app.selectors.messages import live_span, span_totals
from sessions_app.selectors.sessions import lock_session
from sessions_app.services import StateConflict, guard_state
from sessions_app.services.archive import replace_with_summary, save_compressed
from sessions_app.services.continuation import continue_in_new_session

logger = logging.getLogger(__name__)

Trigger = CompressionEvent.Trigger
Outcome = CompressionEvent.Outcome
LOCAL_RADIUS = 10  # messages on each side of the chosen one in a local compression
MIN_MIDDLE = 2  # fewer rows than this are not worth a summary


class AlreadyRunning(StateConflict):
    """Another compression of this session is in progress; nothing was done."""


@dataclass
class PassResult:
    outcome: str
    event: CompressionEvent
    summary: Message | None = None
    model_failed: bool = False
    needs_confirmation: bool = False  # a manual pass the pre-compact checkpoint stopped
    rows_left: int | None = None  # a pass that wrote: the live rows it left (head to tail)


@dataclass
class CompressionResult:
    session: Session
    passes: list[PassResult] = field(default_factory=list)
    continued_in: Session | None = None
    notice: Message | None = None  # progress_notices: the row telling the user

    @property
    def outcome(self) -> str:
        """The run's outcome: its last pass that wrote a summary, if any did (a deeper pass
        that finds nothing more to gain does not undo the first one's work), else its last."""
        wrote = [p for p in self.passes if p.outcome in CompressionEvent.WROTE]
        if wrote:
            return wrote[-1].outcome
        return self.passes[-1].outcome if self.passes else Outcome.SKIPPED

    @property
    def needs_confirmation(self) -> bool:
        """The checkpoint stopped a manual run before it wrote anything. (A deeper pass stopped
        after an earlier one compressed leaves a run that did its work: no confirmation.)"""
        wrote = any(p.outcome in CompressionEvent.WROTE for p in self.passes)
        return not wrote and any(p.needs_confirmation for p in self.passes)

    @property
    def events(self) -> list[CompressionEvent]:
        return [p.event for p in self.passes]


def compress(
    session: Session,
    *,
    trigger: str = Trigger.MANUAL_API,
    focus: str | None = None,
    around_position: int | None = None,
    max_passes: int | None = None,
    idle_timeout: float | None = None,
    total_timeout: float | None = None,
    first_attempt: int = 0,
    confirmed: bool = False,
    memory_context: str | None = None,
    message_limit: int | None = None,
) -> CompressionResult:
    """Compress ``session`` now; raises AlreadyRunning if another compression holds it.

    Manual triggers ignore cooldown and anti-thrash (SPEC T6). One pass always runs; more run
    (up to ``max_attempts``) while the live tokens stay over the session's threshold.
    ``confirmed``: a manual compression goes on when the pre-compact checkpoint fails.
    ``memory_context``: the client's memory providers' text, for the summariser's prompt.
    ``message_limit`` (the hard message limit, T2): the protected tail holds at most half of
    it, so that one pass can bring the session under it, and passes also go on (up to
    ``max_attempts``) while a pass leaves that many live rows or more.
    """
    config = get_config().compression
    timeouts = (
        config.context_timeout_seconds if idle_timeout is None else idle_timeout,
        config.context_total_ceiling_seconds if total_timeout is None else total_timeout,
    )
    claim_seconds = timeouts[1] + 120  # one model call; renewed before every further pass
    claim = claims.take(session, claim_seconds)
    if claim is None:
        raise AlreadyRunning(
            f"A compression of session {session.pk} is already running; try again shortly."
        )
    result = CompressionResult(session=session)
    elsewhere = external_context(session)
    if elsewhere is not None:
        # The model's context lives elsewhere (a Codex thread, T7a): its own compactor, which
        # the paths register, compacts it; our rows stay as they are.
        compactor = hooks.compactor_for(elsewhere)
        try:
            if compactor is None:
                event = _event(
                    session,
                    trigger,
                    Outcome.SKIPPED,
                    reason=f"the model's context lives in {elsewhere}; no compactor for it",
                )
            else:
                event = compactor(session, trigger)
            result.passes.append(
                PassResult(event.outcome, event, model_failed=event.outcome == Outcome.FAILED)
            )
        finally:
            claims.release(session, claim)
        session.refresh_from_db()
        return result
    try:
        passes = max_passes or (1 if around_position is not None else config.max_attempts)
        target = hooks.target_for(session)  # the policy's threshold (None: one pass)
        model_failed = False
        for n in range(first_attempt, first_attempt + passes):
            if n > first_attempt:
                claim = claims.renew(session, claim, claim_seconds)
                if claim is None:
                    break
            outcome = _one_pass(
                session,
                trigger,
                focus,
                around_position,
                target,
                n,
                timeouts,
                use_model=not model_failed,
                attempt_no=len(result.passes) + 1,
                confirmed=confirmed,
                memory_context=memory_context,
                max_tail=None if message_limit is None else message_limit // 2,
            )
            result.passes.append(outcome)
            # After one failed model call, further passes of this run summarise locally: one
            # outage is one failure, not max_attempts of them.
            model_failed = model_failed or outcome.model_failed
            session.refresh_from_db()
            if outcome.outcome not in CompressionEvent.WROTE:
                break
            if message_limit is not None and (outcome.rows_left or 0) >= message_limit:
                continue  # still over the hard message limit: a deeper pass
            if target is None or session.live_tokens <= target:
                break
        if not config.in_place and result.outcome in CompressionEvent.WROTE:
            result.continued_in = continue_in_new_session(session)
    finally:
        if claim is not None:
            claims.release(session, claim)
    result.notice = notice.announce(session, result.passes, trigger, result.continued_in)
    return result


def _event(session: Session, trigger: str, outcome: str, **fields) -> CompressionEvent:
    fields.setdefault("attempt", 1)
    return record_event(session, trigger, outcome, fields.pop("reason", ""), **fields)


def _one_pass(
    session: Session,
    trigger: str,
    focus: str | None,
    around: int | None,
    target: int | None,
    attempt: int = 0,
    timeouts: tuple[float, float] | None = None,
    *,
    use_model: bool = True,
    attempt_no: int = 1,
    confirmed: bool = False,
    memory_context: str | None = None,
    max_tail: int | None = None,
) -> PassResult:
    """One compression. A repeated pass (``attempt`` > 0) halves the protected tail each time,
    down to a floor: compressing the same selection again would only re-summarise the summary."""
    config = get_config().compression
    started = time.monotonic()
    session.refresh_from_db()
    live = live_rows(session)
    full = select_live(live, config, session.context_window, attempt, max_tail)
    if around is not None:
        selection = select_around(
            live, around, LOCAL_RADIUS, len(full.head), len(live) - len(full.tail)
        )
    else:
        selection = full
    if len(selection.middle) < MIN_MIDDLE or not selection.chat:
        event = _event(
            session,
            trigger,
            Outcome.SKIPPED,
            threshold_tokens=target,
            reason=f"nothing to compress: {len(selection.middle)} message(s) between the "
            f"protected head ({len(selection.head)}) and tail ({len(selection.tail)})",
            attempt=attempt_no,
        )
        return PassResult(Outcome.SKIPPED, event)
    # The pre-compact hooks hear of the span first, and may stop the pass (checkpoint).
    gate = checkpoint.pre_compact(session, selection, trigger, attempt_no, confirmed=confirmed)
    if gate.refusal:
        event = checkpoint.refuse(session, gate, trigger, target, started, attempt_no)
        return PassResult(Outcome.FAILED, event, needs_confirmation=gate.ask)
    passed = _summarise(
        session,
        selection,
        (trigger, focus, target),
        timeouts,
        use_model,
        started,
        attempt_no,
        memory_context,
    )
    checkpoint.settle(gate, passed.event)
    if passed.outcome in CompressionEvent.WROTE:
        passed.rows_left = len(selection.head) + 1 + len(selection.pinned) + len(selection.tail)
    return passed


def _summarise(
    session: Session,
    selection: Selection,
    asked: tuple[str, str | None, int | None],
    timeouts: tuple[float, float] | None,
    use_model: bool,
    started: float,
    attempt_no: int,
    memory_context: str | None = None,
) -> PassResult:
    """The summary (the model's, else the local one) and its write-back; ``asked`` is the
    pass's (trigger, focus, threshold)."""
    config = get_config().compression
    trigger, focus, target = asked
    budget = prompts.budget_tokens(selection.middle_tokens, config, session.context_window)
    # Everything the prompt and a local summary are built from is masked first: what leaves
    # never holds a secret shape, nor does what is written (compression.redaction).
    masked = Tally()
    chat = egress.masked_rows(selection.chat, masked)
    previous = egress.masked_rows(selection.previous_summaries, masked)
    built = prompts.build_prompt(
        chat,
        previous,
        target_tokens=budget,
        config=config,
        focus=egress.masked_text(focus, masked),
        memory_context=egress.masked_text(memory_context, masked),
        keep=egress.masked_keep(session, selection.pinned, masked),
    )
    model = get_config().auxiliary.compression
    error = ""
    failure_kind = ""
    if model.configured and not use_model:
        text, fallback, model_name = (
            _local(selection, chat, previous, config, session),
            True,
            "local",
        )
        error = "the summary model failed earlier in this run; local summary used"
    elif model.configured:
        try:
            idle, total = timeouts or (
                config.context_timeout_seconds,
                config.context_total_ceiling_seconds,
            )
            summary = summarize(built, model, idle_timeout=idle, total_timeout=total)
            vet(summary.text, selection.middle_tokens, _counter(session), budget)
            text, fallback, model_name = summary.text, False, summary.model
        except SummaryFailed as failed:
            error, failure_kind = str(failed), failed.kind
            logger.warning("summary of session %s failed: %s", session.pk, failed)
            if config.abort_on_summary_failure:
                _note_failure(session, config)
                event = _event(
                    session,
                    trigger,
                    Outcome.FAILED,
                    threshold_tokens=target,
                    error=error,
                    summary_model=model.model,
                    reason="summary failed; abort_on_summary_failure is set, so nothing changed",
                    duration_ms=int((time.monotonic() - started) * 1000),
                    attempt=attempt_no,
                    redactions=masked.as_dict(),
                )
                return PassResult(Outcome.FAILED, event, model_failed=True)
            text, fallback, model_name = (
                _local(selection, chat, previous, config, session),
                True,
                "",
            )
    else:
        text, fallback, model_name = _local(selection, chat, previous, config, session), True, ""
        error = "no summary model configured (auxiliary.compression); local summary used"

    return _write_back(
        session,
        selection,
        egress.masked_text(text, masked) or text,
        masked=masked,
        span=[*previous, *chat],
        fallback=fallback,
        trigger=trigger,
        target=target,
        model_name=model_name or (model.model if model.configured else "local"),
        error=error,
        failed=bool(failure_kind),
        started=started,
        truncated=built.truncated_chars,
        budget=budget,
        attempt_no=attempt_no,
    )


def _counter(session: Session):
    return lambda text: tokens.count_message({"role": "user", "content": text}, session.model)


def _local(
    selection: Selection, chat: list[Message], previous: list[Message], config, session: Session
) -> str:
    """The local summary of the (masked) rows, its wrapping (with the note on the positions it
    covers) included in ``fallback_summary_max_chars``."""
    covers = (selection.middle[0].position, selection.middle[-1].position)
    wrapping = prompts.wrapping_chars(fallback=True, covers=covers, tool=session.recall_tool)
    return local_summary(chat, previous, max(1, config.fallback_summary_max_chars - wrapping))


def _note_failure(session: Session, config) -> None:
    """F1: a failed summary starts the cooldown (automatic triggers skip until it passes)."""
    guard_state.count_failure(
        session, timezone.now() + timedelta(seconds=config.failure_cooldown_seconds)
    )


def _write_back(
    session: Session,
    selection: Selection,
    text: str,
    *,
    masked: Tally,
    span: list[Message],
    fallback: bool,
    trigger: str,
    target: int | None,
    model_name: str,
    error: str,
    failed: bool,
    started: float,
    truncated: int,
    attempt_no: int = 1,
    budget: int,
) -> PassResult:
    config = get_config().compression
    first, last = selection.middle[0], selection.middle[-1]
    expected_ids = {m.pk for m in selection.middle}
    expected_tokens = selection.middle_tokens
    covers = (first.position, last.position)
    content = prompts.wrap_summary(text, fallback=fallback, covers=covers, tool=session.recall_tool)
    following = [m for m in (*selection.pinned, *selection.tail) if m.position > first.position]
    placement = prompts.summary_role(
        selection.head[-1] if selection.head else None, following[0] if following else None
    )
    role = placement.role
    summary_tokens = tokens.count_message({"role": role, "content": content}, session.model)
    if summary_tokens >= expected_tokens:  # the note on positions never makes it ineffective
        content = prompts.wrap_summary(text, fallback=fallback)
        summary_tokens = tokens.count_message({"role": role, "content": content}, session.model)
    if summary_tokens >= expected_tokens:
        # Written, it would grow the context: say so and change nothing (a failed model call
        # behind a local summary still counts as a failure).
        if failed:
            _note_failure(session, config)
        session.refresh_from_db()
        event = _event(
            session,
            trigger,
            Outcome.INEFFECTIVE,
            tokens_after=session.live_tokens,
            messages_after=session.live_messages,
            threshold_tokens=target,
            summary_model=model_name,
            error=error,
            reason=f"the summary ({summary_tokens:,} tokens) would not be smaller than the "
            f"{len(selection.middle)} message(s) it replaces ({expected_tokens:,} tokens); "
            "nothing was written",
            duration_ms=int((time.monotonic() - started) * 1000),
            attempt=attempt_no,
            redactions=masked.as_dict(),
        )
        return PassResult(Outcome.INEFFECTIVE, event, model_failed=failed)
    # Scored before the write (CPU only, no lock held): what of the span the summary, the head,
    # the pinned rows and the tail still carry.
    scored = scoring.score_rows(span, text, [*selection.head, *selection.pinned, *selection.tail])
    with transaction.atomic():
        locked = lock_session(session)
        live = live_span(
            locked, first.position, last.position, leave=[m.pk for m in selection.pinned]
        )
        now_live = span_totals(live)
        if (
            now_live["n"] != len(expected_ids)
            or now_live["tokens"] != expected_tokens
            or now_live["pinned"]
        ):
            event = _event(
                locked,
                trigger,
                Outcome.SKIPPED,
                threshold_tokens=target,
                reason="the session changed while the summary was being written (reset, "
                "rollback or pin); nothing was written",
                duration_ms=int((time.monotonic() - started) * 1000),
                attempt=attempt_no,
            )
            return PassResult(Outcome.SKIPPED, event, model_failed=failed)
        tokens_before, messages_before = locked.live_tokens, locked.live_messages
        summary, archived = replace_with_summary(
            locked,
            live,
            position=first.position,
            role=role,
            content=content,
            token_count=summary_tokens,
            is_fallback_summary=fallback,
            covers_from_position=first.position,
            covers_to_position=last.position,
        )
        save_compressed(
            locked,
            failed=failed,
            good=not fallback,
            cooldown_until=timezone.now() + timedelta(seconds=config.failure_cooldown_seconds),
        )
        outcome = Outcome.FALLBACK if fallback else Outcome.COMPRESSED
        reason = [f"summary budget {budget:,} tokens"]
        if truncated:
            reason.append(f"input truncated by {truncated:,} characters")
        if selection.previous_summaries:
            earlier = counted(len(selection.previous_summaries), "earlier summary")
            reason.append(f"absorbed {earlier}")
        event = record_written(
            locked,
            trigger,
            outcome,
            "; ".join(reason),
            tokens_before=tokens_before,
            messages_before=messages_before,
            summary=summary,
            rows_archived=archived,
            threshold_tokens=target,
            summary_model=model_name,
            error=error,
            duration_ms=int((time.monotonic() - started) * 1000),
            attempt=attempt_no,
            redactions=masked.as_dict(),
            **scoring.event_fields(scored),
        )
        checkpoint.post_compact_later(locked, event)  # queued once this commits
    return PassResult(outcome, event, summary, model_failed=failed)
