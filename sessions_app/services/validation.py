"""Checks on an OpenAI-format message before anything is written.

The API's schema already rejects wrong types; these rules hold for every caller (API, CLI, demo
loader, later the turn service) and give messages a person can act on.
"""

from __future__ import annotations

import json
from typing import Any

from core.config import get_config
from sessions_app.models import Message
from sessions_app.services.errors import ContentTooLarge, InvalidInput, StateConflict

KNOWN_FIELDS = {"role", "content", "tool_calls", "tool_call_id", "name"}
ROLES = tuple(Message.Role.values)


def _json_size(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value.encode("utf-8", errors="surrogatepass"))
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8", errors="surrogatepass"))


def check_text(value: Any, where: str) -> None:
    """Every string anywhere in ``value`` must be storable on every backend: valid Unicode
    (no lone surrogates, which JSON can smuggle in as ``\\ud800``) and no NUL (PostgreSQL
    refuses it)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(f"{where} contains invalid Unicode (a lone surrogate).") from None
        if "\x00" in value:
            raise InvalidInput(f"{where} contains a NUL character, which cannot be stored.")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(key, f"{where} (a key)")
            check_text(item, f"{where}.{key}")
    elif isinstance(value, list):
        for n, item in enumerate(value):
            check_text(item, f"{where}[{n}]")


def normalize_message(message: dict[str, Any]) -> dict[str, Any]:
    """Fill the defaults a model API expects back: tool calls are ``type: function`` and carry
    an ``arguments`` string even when the client left them out."""
    tool_calls = message.get("tool_calls")
    if not tool_calls or not isinstance(tool_calls, list):
        return message
    normalized = []
    for call in tool_calls:
        if isinstance(call, dict) and isinstance(call.get("function"), dict):
            function = {"arguments": "", **call["function"]}
            call = {**call, "type": call.get("type") or "function", "function": function}
        normalized.append(call)
    return {**message, "tool_calls": normalized}


def validate_message(message: dict[str, Any], index: int = 0) -> None:
    where = f"messages[{index}]"
    role = message.get("role")
    if role not in ROLES:
        raise InvalidInput(f"{where}.role: {role!r} is not a role; use one of {', '.join(ROLES)}.")
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise InvalidInput(f"{where}.content must be a string, a list of parts, or null.")
    if isinstance(content, list):
        for n, part in enumerate(content):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise InvalidInput(f"{where}.content[{n}] must be an object with a 'type'.")
    check_text(message, where)
    limit = get_config().server.max_message_bytes
    extras = {k: v for k, v in message.items() if k not in KNOWN_FIELDS}
    size = _json_size(content) + _json_size(message.get("tool_calls")) + _json_size(extras or None)
    if size > limit:
        raise ContentTooLarge(
            f"{where} is {size:,} bytes; the limit is {limit:,} bytes "
            "(server.max_message_bytes). Split it or raise the limit."
        )
    tool_calls = message.get("tool_calls")
    tool_call_id = message.get("tool_call_id")
    if role == Message.Role.TOOL:
        if not tool_call_id:
            raise InvalidInput(
                f"{where}: a tool message needs 'tool_call_id' naming the call it answers."
            )
    elif tool_call_id:
        raise InvalidInput(f"{where}: only tool messages carry 'tool_call_id' (role is {role}).")
    if tool_calls:
        if role != Message.Role.ASSISTANT:
            raise InvalidInput(f"{where}: only assistant messages carry 'tool_calls'.")
        if not isinstance(tool_calls, list):
            raise InvalidInput(f"{where}.tool_calls must be a list.")
        seen: set[str] = set()
        for n, call in enumerate(tool_calls):
            call_id = call.get("id") if isinstance(call, dict) else None
            if not call_id or not isinstance(call_id, str):
                raise InvalidInput(f"{where}.tool_calls[{n}] needs a string 'id'.")
            if call_id in seen:
                raise InvalidInput(f"{where}.tool_calls[{n}]: duplicate id {call_id!r}.")
            seen.add(call_id)
            function = call.get("function")
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise InvalidInput(f"{where}.tool_calls[{n}].function needs a string 'name'.")
            if not isinstance(function.get("arguments", ""), str):
                raise InvalidInput(
                    f"{where}.tool_calls[{n}].function.arguments must be a JSON-encoded string."
                )
    if content is None and not tool_calls and not isinstance(message.get("refusal"), str):
        raise InvalidInput(
            f"{where}: content is required (it may be null only with tool_calls or a refusal)."
        )
    for key in ("name", "tool_call_id"):
        value = message.get(key)
        if value is not None:
            if not isinstance(value, str):
                raise InvalidInput(f"{where}.{key} must be a string.")
            if len(value) > 200:
                raise InvalidInput(f"{where}.{key} is longer than 200 characters.")


def check_tool_pairing(
    messages: list[dict[str, Any]], pending: set[str] | None, first_index: int = 0
) -> None:
    """SPEC C5 on the way in: a tool result must answer a call of the assistant message just
    before it (in this batch or, for the batch's first results, the live context) that has no
    result yet. ``pending`` holds the live context's unanswered call ids."""
    open_calls = set(pending or ())
    for offset, message in enumerate(messages):
        where = f"messages[{first_index + offset}]"
        if message.get("role") == Message.Role.TOOL:
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                waiting = ", ".join(sorted(open_calls)) or "none"
                # 409: the message is well formed; the conversation's order refuses it.
                raise StateConflict(
                    f"{where}: tool_call_id {call_id!r} answers no pending tool call "
                    f"(pending: {waiting}). A tool result must follow the assistant message "
                    "that made the call, once per call."
                )
            open_calls.discard(call_id)
        elif message.get("tool_calls"):
            open_calls = {call["id"] for call in message["tool_calls"]}
        else:
            open_calls = set()
