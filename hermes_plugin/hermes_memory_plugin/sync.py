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

from .convert import context_to_hermes, signature
from .cursor import RECENT, held_back, set_cursor, take
from .delivery import Away, call, deliver, mark_away, read_counters, refused_field
from .settings import Settings
from .store import Conversation, State, Store

log = logging.getLogger("hermes_memory_plugin")
MEMORY_CONTEXT_MAX = 6_000
SUMMARY_MARK = "[Originals #"  # what ends every summary the service writes
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
            adopt, answered = _run_compression(settings, conversation, focus, force, memory_context)
            if not adopt:
                return None
            return _adopt_context(settings, conversation, kept, answered)
        except Away as away:
            mark_away(settings, state, str(away), now)
            return None


def _run_compression(
    settings: Settings,
    conversation: Conversation,
    focus: str | None,
    force: bool,
    memory_context: str,
) -> tuple[bool, dict[str, Any]]:
    """Ask the service to compress: whether there is a new live context to adopt, and the
    service's answer (which holds that context and the session, from a service that has
    ``return_context``).

    Automatic (the service's guards and threshold decide again) when the service asked for it;
    the service's own result when it compressed on its own since Hermes's copy; otherwise the
    call was not the service's idea — ``/compress [focus]``, ACP's ``/compact`` (which passes
    neither ``force`` nor a focus), Hermes's recovery from an overflow, its gateway's hygiene —
    and is a manual compression, with the focus if there is one."""
    state = conversation.state
    changed = state.stale or state.compressions > state.aligned
    manual = force or bool(focus) or not (state.due or changed)
    if changed and not manual:
        return True, {}  # the service compressed on its own: adopt that, do not compress again
    body: dict[str, Any] = {
        "wait": True,
        "wait_seconds": int(settings.compress_timeout),
        "return_context": True,  # Hermes waits: no second round trip for the context
    }
    if focus:
        body["focus"] = focus[:500]
    if not manual:
        body["automatic"] = True
    if memory_context.strip():
        body["memory_context"] = memory_context[:MEMORY_CONTEXT_MAX]
    path = f"/sessions/{state.service_id}/compress"
    answer = call(settings, "POST", path, body, timeout=settings.compress_timeout + 15)
    if "memory_context" in body and refused_field(answer, "memory_context"):
        log.warning("hermes-memory: the service takes no memory_context; compressing without it")
        del body["memory_context"]
        answer = call(settings, "POST", path, body, timeout=settings.compress_timeout + 15)
    if refused_field(answer, "return_context"):  # a service from before it: read it after
        del body["return_context"]
        answer = call(settings, "POST", path, body, timeout=settings.compress_timeout + 15)
    state.due = False
    result = answer.body if isinstance(answer.body, dict) else {}
    _follow(state, result.get("continued_in"))
    outcome = result.get("outcome")
    log.info(
        "hermes-memory: %s compression of service session %s: %s %s",
        "manual" if manual else "automatic",
        state.service_id,
        answer.status,
        outcome or answer.detail(),
    )
    if answer.status == 202 or not answer.ok:
        return False, result  # queued (the worker finishes it; adopted later), running, refused
    return outcome in ("compressed", "fallback") or changed, result


def _adopt_context(
    settings: Settings,
    conversation: Conversation,
    kept: int = 0,
    answered: dict[str, Any] | None = None,
) -> list[dict[str, Any]] | None:
    """The service's live context as Hermes's new list, the cursor after it: the one the
    compression answered, else read. With ``kept`` messages that Hermes keeps after the list it
    asked about, the context without them: Hermes appends its own copies, which the service
    already holds."""
    state = conversation.state
    answered = answered or {}
    messages = answered.get("context")
    counters = answered.get("session")
    if not isinstance(messages, list) or not isinstance(counters, dict):
        context = call(settings, "GET", f"/sessions/{state.service_id}/context")
        session = call(settings, "GET", f"/sessions/{state.service_id}")
        messages = context.body.get("messages") if isinstance(context.body, dict) else None
        if not context.ok or not isinstance(messages, list):
            log.warning("hermes-memory: reading the live context: %s", context.detail())
            return None
        counters = session.body if session.ok else None
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
    read_counters(state, counters)
    state.aligned = state.compressions
    state.stale = state.due = False
    if kept:
        state.base = len(result) + kept  # the anchor stays: the last of Hermes's kept messages
        state.recent = [signature(m) for m in result[-RECENT:]] + state.recent[-kept:]
    else:
        set_cursor(state, result)
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
        if (
            answer.ok
            and isinstance(answer.body, dict)
            and isinstance(answer.body.get("content"), str)
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
            mark_away(settings, state, str(away), now)
            return None
        result = answer.body if isinstance(answer.body, dict) else {}
        log.info(
            "hermes-memory: model error %s reported: %s %s",
            status,
            answer.status,
            result.get("action") or answer.detail(),
        )
        if answer.ok:
            session = result.get("session")
            if not isinstance(session, dict):
                session = {}
            _follow(state, session.get("id"))
            read_counters(state, session)
            if result.get("action") in ("compressed", "fallback", "reset"):
                state.stale = True
        return result


def _follow(state: State, session_id: Any) -> None:
    """The service's ``in_place: false`` continues a compressed session in a new one (which
    takes over the ``external_id`` and the sequence count): mirror into that from now on."""
    if isinstance(session_id, str) and session_id and session_id != state.service_id:
        log.info("hermes-memory: service session %s continues in %s", state.service_id, session_id)
        state.service_id = session_id


def _error(text: str) -> str:
    return json.dumps({"error": text}, ensure_ascii=False)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
