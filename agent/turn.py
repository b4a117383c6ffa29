"""The agent turn (SPEC section 9): hygiene -> preflight -> the chat model call -> the reply and
usage stored -> the post-call check (enqueued, never blocking the reply).

``/compress`` and ``/compress <focus>`` as the message run the manual command instead of a model
call. A model error that means "the request is too big" compresses at once (ignoring cooldown) and
retries, within ``max_attempts`` per turn. Whatever fails, the user's message is already stored.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from django.utils import timezone

from agent import memory, recall, responses
from agent.chat import (
    ChatError,
    ChatFailed,
    ChatUnavailable,
    call_chat,
    call_responses,
    client_for,
    guarded_stream,
    sdk_call,
    tool_options,
    usage_of,
)
from compression.engine.compress import CompressionResult, compress
from compression.models import CompressionEvent
from compression.paths import server_compaction
from compression.policy import plugins
from compression.policy.hygiene import hygiene
from compression.policy.recovery import ModelError, recover
from compression.policy.threshold import server_compact_threshold, server_compaction_applies
from compression.policy.triggers import Decision, decide, run_automatic
from core.config import ChatModelConfig, get_config
from sessions_app import tokens
from sessions_app.models import Message, Session
from sessions_app.selectors import live_context
from sessions_app.selectors.context import live_rows
from sessions_app.selectors.messages import last_position
from sessions_app.services import (
    ServiceError,
    append_messages,
    rollback_messages,
)
from sessions_app.services.memory import with_memory
from sessions_app.services.validation import normalize_message, validate_message

if TYPE_CHECKING:  # the SDK's type of the messages it sends: ours are its format, as dicts
    from openai.types.chat import ChatCompletionMessageParam

Trigger = CompressionEvent.Trigger
logger = logging.getLogger(__name__)
COMMAND = "/compress"


@dataclass
class TurnResult:
    session: Session
    reply: Message | None = None
    usage: dict[str, int] | None = None
    decisions: list[Decision] = field(default_factory=list)
    command: CompressionResult | None = None
    tool_rows: list[Message] = field(default_factory=list)  # tool calls and results, in order


def _chat(
    session: Session,
    chat: ChatModelConfig,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None,
    tool_choice: str | None = None,
    stream: bool,
) -> Generator[dict[str, Any], None, tuple[dict, dict | None]]:
    """One chat call of the turn: whole, or streamed with a ``delta`` event per piece."""
    if not stream:
        return call_chat(chat, model_of(session), messages, tools=tools, tool_choice=tool_choice)
    client = client_for(chat)
    options = {
        "stream": True,
        "stream_options": {"include_usage": True},
        **tool_options(tools, tool_choice),
    }
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    usage: dict[str, int] | None = None
    try:
        chunks = sdk_call(
            lambda: client.chat.completions.create(
                model=model_of(session),
                messages=cast("list[ChatCompletionMessageParam]", messages),
                **options,
            )
        )
        try:
            for chunk in guarded_stream(chunks):
                usage = usage_of(chunk) or usage
                for choice in chunk.choices or ():
                    delta = choice.delta
                    if delta is None:
                        continue
                    if delta.content:
                        text.append(delta.content)
                        yield {"event": "delta", "content": delta.content}
                    for part in delta.tool_calls or ():
                        call = calls.setdefault(
                            part.index,
                            {
                                "id": "",
                                "type": "function",
                                "function": {"name": "", "arguments": ""},
                            },
                        )
                        call["id"] = part.id or call["id"]
                        if part.function is not None:
                            call["function"]["name"] += part.function.name or ""
                            call["function"]["arguments"] += part.function.arguments or ""
        except GeneratorExit:
            # The client went away mid-reply: what the model said so far is kept, rolled back
            # (searchable by operators, never in the live context), and the turn ends here.
            chunks.close()
            _keep_interrupted(session, "".join(text))
            raise
    finally:
        client.close()
    reply: dict[str, Any] = {"role": "assistant", "content": "".join(text)}
    if calls:
        reply["tool_calls"] = [calls[i] for i in sorted(calls)]
        reply["content"] = reply["content"] or None
    return reply, usage


def _keep_interrupted(session: Session, text: str) -> None:
    if not text.strip():
        return
    try:
        append_messages(session, [{"role": "assistant", "content": text}], run_hooks=False)
        rollback_messages(session, 1, reason="interrupted")
    except ServiceError:
        logger.warning("an interrupted reply of session %s could not be kept", session.pk)


def model_of(session: Session) -> str:
    """The session's model is the model (its threshold is computed for it); ``model.default``
    only names the model of sessions opened without one."""
    return session.model or get_config().model.default


def run_turn(
    session: Session,
    content: str,
    name: str | None = None,
    *,
    command_trigger: str = Trigger.MANUAL_CHANNEL,
) -> TurnResult:
    """One inbound user message. ``command_trigger`` names the gateway in the event trail when
    the message is the ``/compress`` command (a chat channel, or an ACP editor)."""
    steps = turn_steps(session, content, name, command_trigger=command_trigger, stream=False)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def is_command(content: str) -> bool:
    """Whether a user's message is ``/compress [focus]`` rather than something to say."""
    stripped = content.strip()
    return stripped == COMMAND or stripped.startswith(COMMAND + " ")


def turn_steps(
    session: Session,
    content: str,
    name: str | None = None,
    *,
    command_trigger: str = Trigger.MANUAL_CHANNEL,
    stream: bool = True,
) -> Generator[dict[str, Any], None, TurnResult]:
    """The turn as it happens: yields ``{"event": "delta", "content": …}`` as the model writes
    (``stream``) and ``{"event": "tool", …}`` for each tool call it makes, and returns the
    TurnResult. Closed early (a client that went away), it keeps the session consistent: the
    user's message stays, a reply cut off is stored rolled back (``interrupted``), never live."""
    result = TurnResult(session=session)
    stripped = content.strip()
    if is_command(content):
        focus = stripped[len(COMMAND) :].strip() or None
        result.command = compress(session, trigger=command_trigger, focus=focus)
        result.session = result.command.continued_in or session
        result.session.refresh_from_db()
        return result
    chat = get_config().model
    if not (chat.base_url and model_of(session)):
        raise ChatUnavailable(
            "No chat model is configured: set model.base_url (and model.default, for sessions "
            "opened without a model) in the config file. Messages can still be stored with "
            "POST /sessions/{id}/messages."
        )
    user: dict[str, Any] = {"role": "user", "content": content}
    if name:
        user["name"] = name
    # Bad input is refused before anything acts on the session (reset, hygiene compression).
    validate_message(normalize_message(user))
    config = get_config().compression
    reset = recover(session).decision  # F3: exhaustion resets to the last good summary
    if reset is not None:
        result.decisions.append(reset)
    step = hygiene(session, hold=config.hygiene_max_turn_hold_seconds)
    result.decisions.append(step)
    session = _follow(session, step)
    result.session = session
    append_messages(session, [user], run_hooks=False)
    session = _preflight(session, result)

    attempts = 0
    waited_until = time.monotonic() + config.context_total_ceiling_seconds
    server_side = server_compaction_applies(session.model, config)
    tools = None if server_side else _offered(get_config())
    while True:
        try:
            if server_side:
                threshold = server_compact_threshold(session)
                rows = live_rows(session)
                sending = with_memory(session, responses.input_messages(rows))
                reply, usage, compacted = call_responses(
                    chat, model_of(session), sending, threshold
                )
                if compacted is not None:
                    event = server_compaction.store_compaction(
                        session, compacted, threshold, [row.pk for row in rows]
                    )
                    result.decisions.append(Decision(Trigger.SERVER, "compressed", event.reason))
                    session.refresh_from_db()
            else:
                reply, usage = yield from _chat(
                    session, chat, live_context(session), tools=tools, stream=stream
                )
            break
        except ChatError as error:
            # T4: an error that means "too big" compresses at once, each retry deeper (a
            # smaller protected tail) than the one before, up to max_attempts.
            recovered = recover(
                session,
                ModelError(error.status, error.message, error.code),
                attempt=attempts,
                exhaustion=False,
            )
            if recovered.decision is None:  # recover() decides for every error it is given
                raise RuntimeError("recover() made no decision for a model error") from None
            step = recovered.decision
            if recovered.kind is None or step.action == "none":
                raise ChatFailed(
                    f"The chat model answered {error.status}: {error.message} "
                    "(your message is stored)"
                ) from None
            kind = recovered.kind
            if step.action == "running":
                # Another compression holds the session (a hygiene compression still running,
                # say): wait for it to finish, without using an attempt, then call the model
                # once more with the context it leaves.
                if not _wait_for_claim(session, waited_until):
                    raise ChatFailed("The session stayed busy compressing; try again.") from None
                session.refresh_from_db()
                continue
            attempts += 1
            result.decisions.append(step)
            session = _follow(session, step)
            result.session = session
            if step.action not in ("compressed", "fallback"):
                raise ChatFailed(
                    f"The request is too large for the model ({kind}) and could not be "
                    "compressed further; your message is stored."
                ) from None
    if reply.get("tool_calls"):
        reply, usage = yield from _tool_rounds(
            session, chat, reply, usage, tools or [], result, stream
        )
    try:
        stored = append_messages(session, [reply], usage=usage)  # the post-call check runs here
    except ServiceError as exc:
        raise ChatFailed(
            f"The chat model returned a message that cannot be stored ({exc.message}); "
            "your message is stored."
        ) from None
    result.reply = stored.messages[0]
    result.usage = usage
    result.decisions.extend(Decision(**d) for d in stored.decisions)
    session.refresh_from_db()
    return result


def _tool_rounds(
    session: Session,
    chat: ChatModelConfig,
    reply: dict[str, Any],
    usage: dict[str, int] | None,
    tools: list[dict[str, Any]],
    result: TurnResult,
    stream: bool,
) -> Generator[dict[str, Any], None, tuple[dict[str, Any], dict[str, int] | None]]:
    """The model asked for tools: store each call and its result as ordinary rows, call the
    model again, and so on -- at most ``recall.max_rounds`` rounds within
    ``recall.time_budget_seconds``; then once more with tools off, so the turn ends in an
    answer. The reply returned has no tool calls left."""
    settings = get_config().recall
    deadline = time.monotonic() + settings.time_budget_seconds
    rounds = 0
    while reply.get("tool_calls"):
        if not tools:  # tools were not offered (or a last call ignored tool_choice "none")
            reply = {"role": "assistant", "content": reply.get("content") or ""}
            break
        # Where the reply holding these calls is stored next (a memory write records it).
        position = last_position(session) + 1 if get_config().memory_blocks.model_tools else -1
        answers = [_answer(session, call, position) for call in reply["tool_calls"]]
        for call, answer in zip(reply["tool_calls"], answers, strict=True):
            yield {
                "event": "tool",
                "id": call.get("id"),
                "name": (call.get("function") or {}).get("name"),
                "arguments": (call.get("function") or {}).get("arguments"),
                "result": answer["content"],
            }
        try:
            stored = append_messages(session, [reply, *answers], run_hooks=False)
        except ServiceError as exc:
            raise ChatFailed(
                f"The chat model asked for a tool in a form that cannot be stored "
                f"({exc.message}); your message is stored."
            ) from None
        result.tool_rows.extend(stored.messages)
        rounds += 1
        last = rounds >= settings.max_rounds or time.monotonic() >= deadline
        reply, usage = yield from _call_again(session, chat, tools, last, stream)
        if last:
            tools = []
    return reply, usage


def _call_again(
    session: Session, chat: ChatModelConfig, tools: list[dict[str, Any]], last: bool, stream: bool
) -> Generator[dict[str, Any], None, tuple[dict[str, Any], dict[str, int] | None]]:
    try:
        return (
            yield from _chat(
                session,
                chat,
                live_context(session),
                tools=tools,
                tool_choice="none" if last else None,
                stream=stream,
            )
        )
    except ChatError as error:
        raise ChatFailed(
            f"The chat model answered {error.status}: {error.message} (your message and the "
            "tool calls so far are stored)"
        ) from None


def _offered(config: Any) -> list[dict[str, Any]] | None:
    """The tools the model is offered in a turn: recall, and the memory tools when on."""
    tools = [recall.schema()] if config.recall.tool else []
    if config.memory_blocks.model_tools:
        tools += memory.schemas()
    return tools or None


def _answer(session: Session, call: dict[str, Any], position: int) -> dict[str, Any]:
    """A tool call's result row: the tool's answer, or an error the model can act on."""
    function = call.get("function") or {}
    name = function.get("name")
    config = get_config()
    if name == recall.NAME:
        answer = recall.run(session, function.get("arguments"))
    elif name in memory.NAMES and config.memory_blocks.model_tools:
        answer = memory.run(session, name, call, position)
    else:
        offered = [t["function"]["name"] for t in _offered(config) or ()]
        answer = {"error": f"unknown tool {name!r}; the tools here are {', '.join(offered)}"}
    return {
        "role": "tool",
        "tool_call_id": call.get("id") or "",
        "content": recall.as_content(answer),
    }


def _wait_for_claim(session: Session, deadline: float) -> bool:
    """Wait until no compression holds ``session`` (True), or until ``deadline`` (False)."""
    while time.monotonic() < deadline:
        session.refresh_from_db(fields=["compressing_until"])
        if not session.compressing_until or session.compressing_until < timezone.now():
            return True
        time.sleep(0.25)
    return False


def _follow(session: Session, step: Decision) -> Session:
    """With ``in_place: false`` a compression continues the conversation in a new session; the
    rest of the turn happens there."""
    if step.result is not None and step.result.continued_in is not None:
        return step.result.continued_in
    session.refresh_from_db()
    return session


def _preflight(session: Session, result: TurnResult) -> Session:
    """T5: compress in passes until under the threshold (or ``max_attempts``) while the estimate
    of the whole request is over it, or the live messages exceed the compressible window (the
    hard message limit, which hygiene may have been held back from enforcing); a registered
    context engine may ask for it earlier."""
    config = get_config().compression
    window = config.hygiene_hard_message_limit
    for attempt in range(config.max_attempts):
        session.refresh_from_db()
        context = live_context(session)
        estimate = tokens.count_request(context, session.model)
        asked = plugins.requests(session, context)
        over = session.live_messages > window
        if asked:
            decision = decide(session, Trigger.PLUGIN, estimate, force_reason="; ".join(asked))
        elif over:
            why = (
                f"{session.live_messages:,} live messages exceed the compressible window of "
                f"{window:,} (compression.hygiene_hard_message_limit)"
            )
            decision = decide(session, Trigger.PREFLIGHT, estimate, force_reason=why)
        else:
            decision = decide(session, Trigger.PREFLIGHT, estimate)
        result.decisions.append(decision)
        if decision.action != "compress":
            break
        step = run_automatic(
            session,
            decision.trigger,
            first_attempt=attempt,
            message_limit=window if over else None,
        )
        result.decisions.append(step)
        session = _follow(session, step)
        if step.action not in ("compressed", "fallback"):
            break
    result.session = session
    return session
