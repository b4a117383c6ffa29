"""Messages between Hermes's working list and the service's OpenAI format.

Hermes's messages carry keys of its own (``finish_reason``, ``reasoning``, ``api_content``,
``timestamp``, ``tool_name``, ``_todo_snapshot_synthetic``, ...): only OpenAI's chat keys are
mirrored. Strings the service cannot store (NUL, lone surrogates) become U+FFFD, since a message
refused once would be refused on every retry. ``signature`` recognises a message again when
Hermes reloads it from its state.db, where user and assistant text comes back cleaned
(``sanitize_context(text).strip()``).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

ROLES = ("system", "user", "assistant", "tool")
_BAD = re.compile("[\x00\ud800-\udfff]")
# The service refuses a message over server.max_message_bytes (1 MiB by default).
MAX_MESSAGE_BYTES = 900_000
TRUNCATED = "\n…[truncated by the hermes-memory plugin: the original was {size:,} bytes]…\n"


def clean(value: Any) -> Any:
    """Every string in ``value`` without NUL or lone surrogates."""
    if isinstance(value, str):
        return _BAD.sub("\ufffd", value)
    if isinstance(value, list):
        return [clean(item) for item in value]
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    return value


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


def _tool_calls(calls: Any) -> list[dict[str, Any]]:
    out = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        if not isinstance(function, dict):
            function = {}
        out.append(
            {
                "id": str(call.get("id") or ""),
                "type": "function",
                "function": {
                    "name": str(function.get("name") or ""),
                    "arguments": _arguments(function.get("arguments")),
                },
            }
        )
    return out


def to_service(message: Any) -> dict[str, Any] | None:
    """A Hermes message in OpenAI's format, or None for something that is not a message."""
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        return None
    role = message["role"]
    content = message.get("content")
    out: dict[str, Any] = {"role": role}
    calls = _tool_calls(message.get("tool_calls")) if role == "assistant" else []
    if isinstance(content, list):
        out["content"] = [part for part in content if isinstance(part, dict)]
    elif content is None:
        out["content"] = None if calls else ""
    else:
        out["content"] = str(content)
    if calls:
        out["tool_calls"] = calls
    if role == "tool":
        out["tool_call_id"] = str(message.get("tool_call_id") or "")
        name = message.get("name") or message.get("tool_name")
        if name:
            out["name"] = str(name)
    elif role == "user" and isinstance(message.get("name"), str) and message["name"]:
        out["name"] = message["name"]
    return _fit(clean(out))


def _fit(message: dict[str, Any]) -> dict[str, Any]:
    """A message the service's size limit lets through: text content over it is cut in the
    middle, with a marker saying how big the original was."""
    size = len(json.dumps(message, ensure_ascii=False).encode("utf-8"))
    content = message.get("content")
    if size <= MAX_MESSAGE_BYTES or not isinstance(content, str):
        return message
    keep = MAX_MESSAGE_BYTES // 8  # characters from each end; a character is at most 4 bytes
    message["content"] = content[:keep] + TRUNCATED.format(size=size) + content[-keep:]
    return message


def to_hermes(message: Any) -> dict[str, Any] | None:
    """A message of the service's live context as Hermes keeps it in its working list."""
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        return None
    out: dict[str, Any] = {"role": message["role"], "content": message.get("content")}
    if message["role"] == "assistant" and message.get("tool_calls"):
        out["tool_calls"] = _tool_calls(message["tool_calls"])
    elif out["content"] is None:
        out["content"] = ""
    if message["role"] == "tool":
        out["tool_call_id"] = message.get("tool_call_id") or ""
        if message.get("name"):
            out["name"] = message["name"]
    return out


def context_to_hermes(messages: list[Any]) -> list[dict[str, Any]]:
    """The service's live context without its leading system messages (Hermes sends its own
    system prompt ahead of the list; a second one would be sent twice)."""
    start = 0
    while (
        start < len(messages)
        and isinstance(messages[start], dict)
        and (messages[start].get("role") == "system")
    ):
        start += 1
    return [m for m in (to_hermes(x) for x in messages[start:]) if m is not None]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    text = content if isinstance(content, str) else ""
    try:  # as Hermes cleans user and assistant text when it reloads a session
        from agent.memory_manager import sanitize_context

        text = sanitize_context(text)
    except Exception:  # noqa: S110 - outside Hermes (unit tests): whitespace only
        pass
    return " ".join(text.split())


def signature(message: Any) -> str:
    """What identifies a message across Hermes's in-memory and reloaded forms."""
    if not isinstance(message, dict):
        return ""
    calls = ",".join(c["id"] for c in _tool_calls(message.get("tool_calls")))
    digest = hashlib.sha256(_text(message).encode("utf-8", "replace")).hexdigest()[:16]
    return f"{message.get('role')}|{message.get('tool_call_id') or ''}|{calls}|{digest}"
