"""Calling the chat model for the turn through the openai SDK: one call, whole (chat
completions, or the Responses API with server-side compaction), and the SDK's errors as ours.
The streamed call is the turn's own (it yields as the model writes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import openai

from agent import responses
from core.config import ChatModelConfig, get_config
from core.redaction import redactor
from sessions_app.services import ServiceError

if TYPE_CHECKING:  # the SDK's types of what it sends; our messages are its format, as dicts
    from openai.types.chat import ChatCompletionMessageParam
    from openai.types.responses import ResponseInputParam


class ChatUnavailable(ServiceError):
    status_code = 503


class ChatFailed(ServiceError):
    status_code = 502


class ChatError(Exception):
    """The model answered with an error status: the turn reads it as a model error (413,
    overflow, 429, exhaustion) for the recovery rules."""

    def __init__(self, status: int | None, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def client_for(chat: ChatModelConfig) -> openai.OpenAI:
    """A client for one call: its own timeouts and no SDK retries (the turn decides)."""
    return openai.OpenAI(
        base_url=chat.base_url,
        api_key=chat.api_key or "not-needed",
        timeout=openai.Timeout(chat.timeout_seconds, read=chat.stale_timeout_seconds),
        max_retries=0,
    )


def sdk_call(call):
    """Run one SDK call, turning its errors into ours."""
    try:
        return call()
    except openai.APIStatusError as exc:
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error", body) if isinstance(body, dict) else {}
        message = str((error or {}).get("message") or exc)[:500]
        raise ChatError(exc.status_code, message, (error or {}).get("code")) from None
    except openai.APITimeoutError:
        raise ChatFailed("The chat model did not answer in time; your message is stored.") from None
    except (openai.APIError, ValueError) as exc:
        raise ChatFailed(f"The chat model could not be reached: {exc}"[:500]) from None


def call_responses(
    chat: ChatModelConfig, model: str, messages: list[dict[str, Any]], compact_threshold: int
) -> tuple[dict, dict | None, dict | None]:
    """One Responses API call with server-side compaction on (T7b): the reply, the usage, and
    the compaction item when the server compacted."""
    instructions, items = responses.to_responses_input(messages)
    # The server compacts what it is sent, so this request is compaction egress: secret shapes
    # in it are masked like a summariser's copy (compression.redaction); the stored rows are not.
    # A compaction item is the server's own opaque blob and goes back as it came.
    mask = redactor(get_config().compression.redaction)
    instructions = mask.mask(instructions) if instructions else instructions
    items = [i if i.get("type") == "compaction" else mask.mask_value(i) for i in items]
    client = client_for(chat)
    try:
        response = sdk_call(
            lambda: client.responses.create(
                model=model,
                instructions=instructions,
                input=cast("ResponseInputParam", items),
                context_management=[{"type": "compaction", "compact_threshold": compact_threshold}],
                store=False,
            )
        )
    finally:
        client.close()
    try:
        reply, compaction = responses.parse_output(response.output)
    except (AttributeError, TypeError, ValueError):
        raise ChatFailed(
            "The chat model's answer was not a Responses API response; your message is stored."
        ) from None
    usage = usage_of(response, prompt="input_tokens", completion="output_tokens")
    return reply, usage, compaction


def tool_options(tools: list[dict[str, Any]] | None, tool_choice: str | None) -> dict[str, Any]:
    """The tools offered to a chat call (and, with them, how the model may use them)."""
    if not tools:
        return {}
    return {"tools": tools, **({"tool_choice": tool_choice} if tool_choice else {})}


def call_chat(
    chat: ChatModelConfig,
    model: str,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    tool_choice: str | None = None,
) -> tuple[dict, dict | None]:
    """One chat-completions call through the openai SDK; the reply as a message to store."""
    client = client_for(chat)
    options = tool_options(tools, tool_choice)
    try:
        response = sdk_call(
            lambda: client.chat.completions.create(
                model=model, messages=cast("list[ChatCompletionMessageParam]", messages), **options
            )
        )
    finally:
        client.close()
    try:
        message = response.choices[0].message
        reply: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            reply["tool_calls"] = [
                call.model_dump(exclude_none=True) for call in message.tool_calls
            ]
    except (AttributeError, IndexError, TypeError, ValueError):
        raise ChatFailed(
            "The chat model's answer was not a chat completion; your message is stored."
        ) from None
    if reply["content"] is None and not reply.get("tool_calls"):
        reply["content"] = ""
    return reply, usage_of(response)


def guarded_stream(chunks):
    """The SDK's stream, its errors as ours (a connection lost mid-stream is a failed call)."""
    try:
        yield from chunks
    except openai.APIError as exc:
        raise ChatFailed(f"The chat model's stream broke off: {exc}"[:500]) from None


def usage_of(
    answer: Any, *, prompt: str = "prompt_tokens", completion: str = "completion_tokens"
) -> dict[str, int] | None:
    """The usage a provider reported, as ``prompt_tokens``/``completion_tokens`` (None when it
    sent none): on a chat completion, on a stream's last chunk when asked, or on a Responses
    API response (``prompt``/``completion`` name its fields there: input and output tokens).
    A count that is not a whole number of zero or more is left out."""
    raw = getattr(answer, "usage", None)
    if raw is None:
        return None
    numbers = {
        "prompt_tokens": getattr(raw, prompt, None),
        "completion_tokens": getattr(raw, completion, None),
    }
    return {k: v for k, v in numbers.items() if isinstance(v, int) and v >= 0} or None
