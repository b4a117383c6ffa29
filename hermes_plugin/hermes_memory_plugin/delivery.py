"""Delivering the spool to the service, oldest first, each batch with its ``sequence``;
reading its answers (the next sequence, a decision ``due``, its compression count); and what
to do when it refuses (a gap, a session gone, a batch it will never take) or is away."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from .convert import MAX_MESSAGE_BYTES
from .cursor import BATCH_MAX
from .service import Answer, Away, call
from .settings import RECALL_TOOL, Settings
from .store import Batch, Conversation, State

log = logging.getLogger("hermes_memory_plugin")
Clock = Callable[[], float]


def deliver(
    settings: Settings,
    conversation: Conversation,
    now: Clock = time.time,
    *,
    budget: float | None = None,
) -> bool:
    """Send the spool, oldest first, consecutive batches merged into one request (after an
    outage the spool holds one batch per mirror point), for at most ``budget`` seconds (the
    call timeout by default: a slow service costs a turn that long, the rest goes next time).
    True when the service has everything."""
    state = conversation.state
    if state.away_until > now():
        return False
    deadline = time.monotonic() + (settings.timeout if budget is None else budget)
    try:
        if state.service_id is None:
            _open_session(settings, conversation)
        batches = conversation.pending()
        single = False
        rounds = 0
        while batches:
            rounds += 1
            if rounds > 1000:  # a service that keeps refusing the same way: try again later
                raise Away("the service keeps refusing the spool")
            if time.monotonic() > deadline:
                return False
            merged, count = (batches[0], 1) if single else merge(batches)
            answer = _post_batch(settings, state, merged)
            if answer.ok:
                _took(state, answer, merged)
                batches, single = batches[count:], False
                continue
            if answer.status == 409 and _expected(answer) is not None:
                _resequence(conversation, batches, _expected(answer) or 0)
            elif answer.status == 404:
                log.warning(
                    "hermes-memory: service session %s is gone; opening it again",
                    state.service_id,
                )
                state.service_id = None
                state.acked = 0
                _open_session(settings, conversation)
            elif refused_field(answer, "sequence", "defer"):
                raise Away(
                    "the service does not know the fields this plugin sends (sequence, defer): "
                    f"upgrade it ({answer.detail()})"
                )
            elif count > 1:
                single = True  # find the one batch it refuses
                continue
            else:
                _reject(conversation, batches[0], batches[1:], answer)
            batches = conversation.pending()
    except Away as away:
        mark_away(settings, state, str(away), now)
        return False
    _back(state)
    conversation.drop_delivered()
    return True


def merge(batches: list[Batch]) -> tuple[Batch, int]:
    """The first batches, as long as they follow each other, as one (at most BATCH_MAX
    messages; the usage is the newest one)."""
    messages = list(batches[0].messages)
    usage = batches[0].usage
    count = 1
    for batch in batches[1:]:
        follows = batch.sequence == batches[count - 1].end
        if not follows or len(messages) + len(batch.messages) > BATCH_MAX:
            break
        messages += batch.messages
        usage = batch.usage or usage
        count += 1
    return Batch(batches[0].sequence, messages, usage), count


def _post_batch(settings: Settings, state: State, batch: Batch) -> Answer:
    body: dict[str, Any] = {"messages": batch.messages, "sequence": batch.sequence, "defer": True}
    if batch.usage:
        body["usage"] = batch.usage
    return call(settings, "POST", f"/sessions/{state.service_id}/messages", body)


def _open_session(settings: Settings, conversation: Conversation) -> None:
    state = conversation.state
    body: dict[str, Any] = {
        "external_id": state.external_id,
        "model": state.model or "hermes",
        "recall_tool": RECALL_TOOL,  # what the summaries tell the model to call
    }
    if state.context_length >= 1024:
        body["context_window"] = state.context_length
    if state.system_prompt:
        body["system_prompt"] = state.system_prompt[: MAX_MESSAGE_BYTES // 4]
    answer = call(settings, "POST", "/sessions", body)
    if not answer.ok:  # e.g. a window or prompt the service refuses: the id is what matters
        log.warning("hermes-memory: opening the session: %s; retrying plainly", answer.detail())
        answer = call(settings, "POST", "/sessions", {"external_id": state.external_id})
    if not answer.ok or not isinstance(answer.body, dict) or not answer.body.get("id"):
        raise Away(f"the service would not open a session: {answer.status} {answer.detail()}")
    state.service_id = str(answer.body["id"])
    state.system_prompt = None
    read_counters(state, answer.body)
    log.info(
        "hermes-memory: conversation %s is service session %s",
        state.external_id,
        state.service_id,
    )


def refused_field(answer: Answer, *fields: str) -> bool:
    """A 422 that names one of ``fields``: a service from before them."""
    errors = answer.body.get("errors") if isinstance(answer.body, dict) else None
    return answer.status == 422 and any(
        isinstance(e, dict) and set(fields) & set(str(e.get("loc")).split("."))
        for e in errors or []
    )


def _expected(answer: Answer) -> int | None:
    body = answer.body if isinstance(answer.body, dict) else {}
    value = body.get("expected_sequence")
    return value if isinstance(value, int) else None


def _took(state: State, answer: Answer, batch: Batch) -> None:
    body = answer.body if isinstance(answer.body, dict) else {}
    next_sequence = body.get("next_sequence")
    state.acked = max(state.acked, next_sequence if isinstance(next_sequence, int) else batch.end)
    for decision in body.get("decisions") or []:
        if isinstance(decision, dict) and decision.get("action") == "due":
            state.due = True
    read_counters(state, body.get("session"))


def read_counters(state: State, session: Any) -> None:
    counters = session.get("counters") if isinstance(session, dict) else None
    if isinstance(counters, dict) and isinstance(counters.get("compressions"), int):
        state.compressions = max(state.compressions, counters["compressions"])


def _resequence(conversation: Conversation, batches: list[Batch], expected: int) -> None:
    """The service expects ``expected`` where the spool goes on at a later number: it lost
    what it had acknowledged (restored, erased). Number the spool on from what it has."""
    state = conversation.state
    shift = expected - batches[0].sequence
    log.warning(
        "hermes-memory: service session %s expected message %d, the spool goes on at %d: "
        "%d message(s) the service had acknowledged are gone there; going on from %d",
        state.service_id,
        expected,
        batches[0].sequence,
        -shift,
        expected,
    )
    for batch in batches:
        batch.sequence += shift
    conversation.rewrite_spool(batches)
    state.sent += shift
    state.acked = expected


def _reject(conversation: Conversation, batch: Batch, rest: list[Batch], answer: Answer) -> None:
    """A batch the service refuses as it stands (422, 413, a conflict): it would be refused on
    every retry, so it is set aside in ``rejected.jsonl`` and the spool goes on without it."""
    state = conversation.state
    log.error(
        "hermes-memory: the service refused messages %d-%d (%d): %s; kept in %s",
        batch.sequence,
        batch.end - 1,
        answer.status,
        answer.detail(),
        conversation.path / "rejected.jsonl",
    )
    with open(conversation.path / "rejected.jsonl", "a", encoding="utf-8") as out:
        record = {"status": answer.status, "detail": answer.detail(), **batch.__dict__}
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
    size = len(batch.messages)
    for later in rest:
        later.sequence -= size
    conversation.rewrite_spool(rest)
    state.sent -= size


def mark_away(settings: Settings, state: State, reason: str, now: Clock) -> None:
    state.away_until = now() + settings.retry_seconds
    if state.away_reason is None:
        log.warning(
            "hermes-memory: %s; messages wait in the spool under %s and go when it answers",
            reason,
            settings.state_dir,
        )
    state.away_reason = reason


def _back(state: State) -> None:
    if state.away_reason is not None:
        log.warning(
            "hermes-memory: the service answers again; the spool is delivered "
            "(service session %s holds %d mirrored messages)",
            state.service_id,
            state.acked,
        )
    state.away_reason = None
    state.away_until = 0.0
    state.compress_away_logged = False
