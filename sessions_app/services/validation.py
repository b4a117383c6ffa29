"""Checks on an OpenAI-format message before anything is written.

The API's schema already rejects wrong types; these rules hold for every caller (API, CLI, demo
loader, later the turn service) and give messages a person can act on.
"""

from __future__ import annotations

from typing import Any

from hermes_site.config import get_config
from sessions_app.models import Message
from sessions_app.services.errors import ContentTooLarge, InvalidInput

KNOWN_FIELDS = {"role", "content", "tool_calls", "tool_call_id", "name"}
ROLES = tuple(Message.Role.values)


def _content_size(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return len(content.encode("utf-8", errors="surrogatepass"))
    import json

    return len(json.dumps(content, ensure_ascii=False).encode("utf-8", errors="surrogatepass"))


def _check_text(value: str, where: str) -> None:
    # JSON can smuggle lone surrogates (\ud800) that are not valid Unicode and cannot be stored as
    # UTF-8; reject them rather than corrupt the row.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{where} contains invalid Unicode (a lone surrogate).") from None
    if "\x00" in value:
        raise InvalidInput(f"{where} contains a NUL character, which cannot be stored.")


def validate_message(message: dict[str, Any], index: int = 0) -> None:
    where = f"messages[{index}]"
    role = message.get("role")
    if role not in ROLES:
        raise InvalidInput(f"{where}.role: {role!r} is not a role; use one of {', '.join(ROLES)}.")
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise InvalidInput(f"{where}.content must be a string, a list of parts, or null.")
    if isinstance(content, str):
        _check_text(content, f"{where}.content")
    elif isinstance(content, list):
        for n, part in enumerate(content):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise InvalidInput(f"{where}.content[{n}] must be an object with a 'type'.")
            if isinstance(part.get("text"), str):
                _check_text(part["text"], f"{where}.content[{n}].text")
    limit = get_config().server.max_message_bytes
    size = _content_size(content) + _content_size(message.get("tool_calls"))
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
    if content is None and not tool_calls:
        raise InvalidInput(f"{where}: content is required (it may be null only with tool_calls).")
    for key in ("name", "tool_call_id"):
        value = message.get(key)
        if value is not None:
            if not isinstance(value, str):
                raise InvalidInput(f"{where}.{key} must be a string.")
            if len(value) > 200:
                raise InvalidInput(f"{where}.{key} is longer than 200 characters.")
            _check_text(value, f"{where}.{key}")
