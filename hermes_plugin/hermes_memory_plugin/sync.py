"""The plugin's logic, free of Hermes: mirroring Hermes's working list into a service session,
exactly once and in order; what the service decided; compressing through it; recall; model
errors. Hermes's engine and hooks (``engine.py``, ``hooks.py``) only call these.

Exactly once: each new message gets the next number of the conversation's own count and is
spooled before it is sent; the service's ``sequence`` check skips whatever a retry repeats. In
order: the spool is delivered oldest first and delivery stops at the first failure. Never in
Hermes's way: a service that is down or slow costs at most one ``timeout`` and is then left
alone for ``retry_seconds``; everything waits in the spool meanwhile.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from .convert import MAX_MESSAGE_BYTES, context_to_hermes, signature, to_service
from .service import Answer, Away, call
from .settings import Settings
from .store import Batch, Conversation, State, Store

log = logging.getLogger("hermes_memory_plugin")
MEMORY_CONTEXT_MAX = 6_000
SUMMARY_MARK = "[Originals #"  # what ends every summary the service writes
BATCH_MAX = 500  # messages per POST (the service takes at most 1,000)
RECENT = 64  # signatures kept of the last mirrored messages
# What the process knows of a Hermes session before its conversation exists (the engine hears
# the model and its window at agent start; the service session is opened at the first mirror).
_META: dict[str, dict[str, Any]] = {}
Clock = Callable[[], float]


def store(settings: Settings) -> Store:
    return Store(settings.state_dir)


def begin(
    settings: Settings,
    hermes_id: str,
    *,
    model: str = "",
    context_length: int = 0,
    old_id: str | None = None,
) -> None:
    """A Hermes session starts. After a compression that rotated the id, the new id continues
    the old id's conversation."""
    if not hermes_id:
        return
    meta = _META.setdefault(hermes_id, {})
    if model:
        meta["model"] = model
    if context_length:
        meta["context_length"] = int(context_length)
    if old_id and old_id != hermes_id:
        places = store(settings)
        name = places.conversation_of(old_id)
        if name and places.conversation_of(hermes_id) is None:
            places.link(hermes_id, name)
            with places.open(hermes_id) as conversation:
                log.info(
                    "hermes-memory: Hermes session %s continues %s (service session %s)",
                    hermes_id,
                    old_id,
                    conversation.state.service_id,
                )


def record_usage(settings: Settings, hermes_id: str, usage: dict[str, Any]) -> None:
    """Keep the usage of the model's last call for the batch holding the message it produced."""
    prompt = _int(usage.get("prompt_tokens"))
    if not hermes_id or prompt <= 0:
        return
    with store(settings).existing(hermes_id) as conversation:
        if conversation is not None:
            conversation.state.usage = {
                "prompt_tokens": prompt,
                "completion_tokens": max(_int(usage.get("completion_tokens")), 0),
            }


def mirror(
    settings: Settings,
    hermes_id: str,
    history: list[Any],
    *,
    model: str = "",
    system_prompt: str | None = None,
    now: Clock = time.time,
) -> State | None:
    """Spool whatever of Hermes's working list ``history`` the service does not have yet, then
    deliver the spool. Returns the conversation's state after."""
    if not settings.configured or not hermes_id:
        return None
    with store(settings).open(hermes_id) as conversation:
        _remember(conversation, hermes_id, model, system_prompt)
        take(conversation, history)
        deliver(settings, conversation, now)
        return conversation.state


def _remember(
    conversation: Conversation, hermes_id: str, model: str, system_prompt: str | None
) -> None:
    state = conversation.state
    meta = _META.get(hermes_id, {})
    state.model = state.model or model or meta.get("model", "")
    state.context_length = state.context_length or meta.get("context_length", 0)
    if state.service_id is None and not state.system_prompt and system_prompt:
        state.system_prompt = system_prompt  # for the session's opening; dropped once open


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
    if state.base <= len(messages) or state.anchor is None or not messages:
        return 0
    return 0 if _find_anchor(state, messages) is not None else state.base - len(messages)


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
        _cursor(state, history)
    return batch


def _cursor(state: State, history: list[Any], end: int | None = None) -> None:
    """The cursor after ``history[:end]`` (all of it by default)."""
    end = len(history) if end is None else end
    state.base = end
    state.anchor = signature(history[end - 1]) if end else None
    state.recent = [signature(m) for m in history[max(0, end - RECENT) : end]]


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
            merged, count = (batches[0], 1) if single else _merge(batches)
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
            elif _refused_field(answer, "sequence", "defer"):
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
        _away(settings, state, str(away), now)
        return False
    _back(state)
    conversation.drop_delivered()
    return True


def _merge(batches: list[Batch]) -> tuple[Batch, int]:
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
    body: dict[str, Any] = {"external_id": state.external_id, "model": state.model or "hermes"}
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
    _counters(state, answer.body)
    log.info(
        "hermes-memory: conversation %s is service session %s",
        state.external_id,
        state.service_id,
    )


def _refused_field(answer: Answer, *fields: str) -> bool:
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
    state.acked = max(
        state.acked, next_sequence if isinstance(next_sequence, int) else batch.end
    )
    for decision in body.get("decisions") or []:
        if isinstance(decision, dict) and decision.get("action") == "due":
            state.due = True
    _counters(state, body.get("session"))


def _counters(state: State, session: Any) -> None:
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


def _reject(
    conversation: Conversation, batch: Batch, rest: list[Batch], answer: Answer
) -> None:
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


def _away(settings: Settings, state: State, reason: str, now: Clock) -> None:
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


def wants_compression(settings: Settings, hermes_id: str, now: Clock = time.time) -> bool:
    """The service said "compress now", or it changed the live context since Hermes's copy."""
    if not settings.configured or not hermes_id:
        return False
    with store(settings).existing(hermes_id) as conversation:
        if conversation is None:
            return False
        state = conversation.state
        if state.away_until > now():
            return False
        return state.due or state.stale or state.compressions > state.aligned


def compress(
    settings: Settings,
    hermes_id: str,
    messages: list[Any],
    *,
    focus: str | None = None,
    force: bool = False,
    memory_context: str = "",
    now: Clock = time.time,
) -> list[dict[str, Any]] | None:
    """Compress in the service and return its live context as Hermes's new list; None keeps
    Hermes's list as it is (nothing to do, or the service is away)."""
    if not settings.configured or not hermes_id:
        return None
    with store(settings).open(hermes_id) as conversation:
        state = conversation.state
        _remember(conversation, hermes_id, "", None)
        kept = held_back(state, messages)
        if not kept:
            take(conversation, messages)
        if not deliver(settings, conversation, now, budget=settings.compress_timeout):
            if not state.compress_away_logged:
                log.warning(
                    "hermes-memory: the service is away (%s): Hermes's context is left as it "
                    "is and its own overflow handling applies until the service is back",
                    state.away_reason,
                )
                state.compress_away_logged = True
            return None
        try:
            if not _run_compression(settings, conversation, focus, force, memory_context):
                return None
            return _adopt_context(settings, conversation, kept)
        except Away as away:
            _away(settings, state, str(away), now)
            return None


def _run_compression(
    settings: Settings,
    conversation: Conversation,
    focus: str | None,
    force: bool,
    memory_context: str,
) -> bool:
    """Ask the service to compress; True when there is a new live context to adopt.

    Automatic (the service's guards and threshold decide again) when the service asked for it;
    the service's own result when it compressed on its own since Hermes's copy; otherwise the
    call was not the service's idea — ``/compress [focus]``, ACP's ``/compact`` (which passes
    neither ``force`` nor a focus), Hermes's recovery from an overflow, its gateway's hygiene —
    and is a manual compression, with the focus if there is one."""
    state = conversation.state
    changed = state.stale or state.compressions > state.aligned
    manual = force or bool(focus) or not (state.due or changed)
    if changed and not manual:
        return True  # the service compressed on its own: adopt that, do not compress again
    body: dict[str, Any] = {"wait": True, "wait_seconds": int(settings.compress_timeout)}
    if focus:
        body["focus"] = focus[:500]
    if not manual:
        body["automatic"] = True
    if memory_context.strip():
        body["memory_context"] = memory_context[:MEMORY_CONTEXT_MAX]
    path = f"/sessions/{state.service_id}/compress"
    answer = call(settings, "POST", path, body, timeout=settings.compress_timeout + 15)
    if "memory_context" in body and _refused_field(answer, "memory_context"):
        log.warning("hermes-memory: the service takes no memory_context; compressing without it")
        del body["memory_context"]
        answer = call(settings, "POST", path, body, timeout=settings.compress_timeout + 15)
    state.due = False
    result = answer.body if isinstance(answer.body, dict) else {}
    outcome = result.get("outcome")
    log.info(
        "hermes-memory: %s compression of service session %s: %s %s",
        "manual" if manual else "automatic",
        state.service_id,
        answer.status,
        outcome or answer.detail(),
    )
    if answer.status == 202 or not answer.ok:
        return False  # queued (the worker finishes it; adopted later), running, or refused
    return outcome in ("compressed", "fallback") or changed


def _adopt_context(
    settings: Settings, conversation: Conversation, kept: int = 0
) -> list[dict[str, Any]] | None:
    """The service's live context as Hermes's new list, the cursor after it. With ``kept``
    messages that Hermes keeps after the list it asked about, the context without them: Hermes
    appends its own copies, which the service already holds."""
    state = conversation.state
    context = call(settings, "GET", f"/sessions/{state.service_id}/context")
    session = call(settings, "GET", f"/sessions/{state.service_id}")
    messages = context.body.get("messages") if isinstance(context.body, dict) else None
    if not context.ok or not isinstance(messages, list):
        log.warning("hermes-memory: reading the live context: %s", context.detail())
        return None
    result = context_to_hermes(messages)
    if kept:
        tail = result[-kept:]
        if len(result) <= kept + 1 or any(SUMMARY_MARK in str(m.get("content")) for m in tail):
            log.warning(
                "hermes-memory: Hermes keeps %d messages out of this compression but the "
                "service's protected tail is shorter; the context is left as it is",
                kept,
            )
            return None
        result = result[:-kept]
    if not result:
        return None
    _counters(state, session.body if session.ok else None)
    state.aligned = state.compressions
    state.stale = state.due = False
    if kept:
        state.base = len(result) + kept  # the anchor stays: the last of Hermes's kept messages
        state.recent = [signature(m) for m in result[-RECENT:]] + state.recent[-kept:]
    else:
        _cursor(state, result)
    return result


def recall(
    settings: Settings, hermes_id: str, arguments: dict[str, Any], now: Clock = time.time
) -> str:
    """The recall tool: the service's session_search for this conversation (or the channel)."""
    if not settings.configured:
        return _error("the hermes-memory plugin has no service configured (hermes_memory.url)")
    with store(settings).existing(hermes_id) as conversation:
        if conversation is None or conversation.state.service_id is None:
            return _error("this conversation has not reached the memory service yet")
        deliver(settings, conversation, now)  # so that the latest messages are found too
        body = dict(arguments) if isinstance(arguments, dict) else {}
        if "around" not in body:
            body.setdefault("scope", settings.scope)
        path = f"/sessions/{conversation.state.service_id}/tools/session_search"
        try:
            answer = call(settings, "POST", path, body)
        except Away as away:
            return _error(f"the memory service is not reachable now ({away}); try later")
        if answer.ok and isinstance(answer.body, dict) and isinstance(
            answer.body.get("content"), str
        ):
            return answer.body["content"]
        return _error(f"the memory service answered {answer.status}: {answer.detail()}")


def report_model_error(
    settings: Settings,
    hermes_id: str,
    *,
    status: int,
    message: str,
    code: str | None = None,
    kind: str | None = None,
    now: Clock = time.time,
) -> dict[str, Any] | None:
    """Tell the service what the model answered (``POST /model_error``): it compresses for an
    overflow, lowers the window for a long-context 429, resets after exhaustion. Returns its
    answer."""
    if not settings.configured or not hermes_id:
        return None
    with store(settings).existing(hermes_id) as conversation:
        if conversation is None or not deliver(settings, conversation, now):
            return None
        state = conversation.state
        body = {
            "status": status,
            "message": message[:2000],
            "code": code,
            "type": kind,
            "wait": True,
            "wait_seconds": int(settings.compress_timeout),
        }
        path = f"/sessions/{state.service_id}/model_error"
        try:
            answer = call(settings, "POST", path, body, timeout=settings.compress_timeout + 15)
        except Away as away:
            _away(settings, state, str(away), now)
            return None
        result = answer.body if isinstance(answer.body, dict) else {}
        log.info(
            "hermes-memory: model error %s reported: %s %s",
            status,
            answer.status,
            result.get("action") or answer.detail(),
        )
        if answer.ok:
            _counters(state, result.get("session"))
            if result.get("action") in ("compressed", "fallback", "reset"):
                state.stale = True
        return result


def _error(text: str) -> str:
    return json.dumps({"error": text}, ensure_ascii=False)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
