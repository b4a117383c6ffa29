"""The agent turn (SPEC section 9): hygiene -> preflight -> the chat model call -> the reply and
usage stored -> the post-call check (enqueued, never blocking the reply).

``/compress`` and ``/compress <focus>`` as the message run the manual command instead of a model
call. A model error that means "the request is too big" compresses at once (ignoring cooldown) and
retries, within ``max_attempts`` per turn. Whatever fails, the user's message is already stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import openai

from compression import guards, plugins
from compression.engine import CompressionResult, compress
from compression.models import CompressionEvent
from compression.triggers import (
    Decision,
    classify_error,
    decide,
    hygiene,
    lower_window_for_long_context,
    reset_after_exhaustion,
    run_automatic,
)
from hermes_site.config import ChatModelConfig, get_config
from sessions_app import tokens
from sessions_app.models import Message, Session
from sessions_app.services import ServiceError, append_messages, live_context

Trigger = CompressionEvent.Trigger
COMMAND = "/compress"


class ChatUnavailable(ServiceError):
    status_code = 503


class ChatFailed(ServiceError):
    status_code = 502


@dataclass
class TurnResult:
    session: Session
    reply: Message | None = None
    usage: dict[str, int] | None = None
    decisions: list[Decision] = field(default_factory=list)
    command: CompressionResult | None = None


class _ChatError(Exception):
    def __init__(self, status: int | None, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def call_chat(chat: ChatModelConfig, messages: list[dict[str, Any]]) -> tuple[dict, dict | None]:
    """One chat-completions call through the openai SDK; the reply as a message to store."""
    client = openai.OpenAI(
        base_url=chat.base_url,
        api_key=chat.api_key or "not-needed",
        timeout=openai.Timeout(chat.timeout_seconds, read=chat.stale_timeout_seconds),
        max_retries=0,
    )
    try:
        response = client.chat.completions.create(model=chat.default, messages=messages)
    except openai.APIStatusError as exc:
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error", body) if isinstance(body, dict) else {}
        message = str((error or {}).get("message") or exc)[:500]
        raise _ChatError(exc.status_code, message, (error or {}).get("code")) from None
    except openai.APITimeoutError:
        raise ChatFailed("The chat model did not answer in time; your message is stored.") from None
    except (openai.APIError, ValueError) as exc:
        raise ChatFailed(f"The chat model could not be reached: {exc}"[:500]) from None
    finally:
        client.close()
    if not response.choices:
        raise ChatFailed("The chat model returned no choices; your message is stored.")
    message = response.choices[0].message
    reply: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        reply["tool_calls"] = [call.model_dump(exclude_none=True) for call in message.tool_calls]
    if reply["content"] is None and not reply.get("tool_calls"):
        reply["content"] = ""
    usage = None
    if response.usage is not None:
        usage = {
            "prompt_tokens": response.usage.prompt_tokens,
            "completion_tokens": response.usage.completion_tokens,
        }
    return reply, usage


def run_turn(session: Session, content: str, name: str | None = None) -> TurnResult:
    result = TurnResult(session=session)
    stripped = content.strip()
    if stripped == COMMAND or stripped.startswith(COMMAND + " "):
        focus = stripped[len(COMMAND) :].strip() or None
        result.command = compress(session, trigger=Trigger.MANUAL_CHANNEL, focus=focus)
        session.refresh_from_db()
        return result
    chat = get_config().model
    if not (chat.default and chat.base_url):
        raise ChatUnavailable(
            "No chat model is configured: set model.default and model.base_url in the config "
            "file. Messages can still be stored with POST /sessions/{id}/messages."
        )
    config = get_config().compression
    if guards.exhausted(session):
        archived = reset_after_exhaustion(session)
        result.decisions.append(
            Decision(
                Trigger.HYGIENE,
                "exhausted",
                f"compression exhausted after {config.exhaustion_failure_limit} failures: session "
                f"reset to its last good summary ({archived} rows archived)",
            )
        )
    result.decisions.append(hygiene(session))
    session.refresh_from_db()
    user: dict[str, Any] = {"role": "user", "content": content}
    if name:
        user["name"] = name
    append_messages(session, [user], run_hooks=False)
    _preflight(session, result)

    attempts = 0
    while True:
        try:
            reply, usage = call_chat(chat, live_context(session))
            break
        except _ChatError as error:
            kind = classify_error(error.status, error.message, error.code)
            if kind is None or attempts >= config.max_attempts:
                raise ChatFailed(
                    f"The chat model answered {error.status}: {error.message} "
                    "(your message is stored)"
                ) from None
            attempts += 1
            if kind == "long_context_rate_limit":
                lower_window_for_long_context(session)
            step = run_automatic(session, Trigger.ERROR)
            step.reason = f"{kind} (HTTP {error.status}): {step.reason}"
            result.decisions.append(step)
            if step.action not in ("compressed", "fallback"):
                raise ChatFailed(
                    f"The request is too large for the model ({kind}) and could not be "
                    "compressed further; your message is stored."
                ) from None
    stored = append_messages(session, [reply], usage=usage)  # the post-call check runs here
    result.reply = stored.messages[0]
    result.usage = usage
    result.decisions.extend(Decision(**d) for d in stored.decisions)
    session.refresh_from_db()
    return result


def _preflight(session: Session, result: TurnResult) -> None:
    """T5: with the estimate of the whole request, compress in passes until under the
    threshold (or ``max_attempts``); a registered context engine may ask for it earlier."""
    config = get_config().compression
    for _ in range(config.max_attempts):
        session.refresh_from_db()
        context = live_context(session)
        estimate = tokens.count_request(context, session.model)
        asked = plugins.requests(session, context)
        if asked:
            decision = decide(session, Trigger.PLUGIN, estimate, force_reason="; ".join(asked))
        else:
            decision = decide(session, Trigger.PREFLIGHT, estimate)
        result.decisions.append(decision)
        if decision.action != "compress":
            return
        step = run_automatic(session, decision.trigger)
        result.decisions.append(step)
        if step.action not in ("compressed", "fallback"):
            return
