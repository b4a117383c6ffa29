"""The OpenAI Responses API's forms (SPEC T7b): the live context as Responses input, with the
server's compaction item where one is stored, and its output back as a reply and an item. The
call itself is ``agent.chat.call_responses``; storing an item is
``compression.paths.server_compaction.store_compaction``."""

from __future__ import annotations

from typing import Any

from compression.paths.server_compaction import KEY
from sessions_app.models import Message
from sessions_app.selectors.context import sent


def input_messages(rows: list[Message]) -> list[dict[str, Any]]:
    """Live rows in chat form, with the compaction item where a row holds one."""
    messages = []
    for row, message in sent(rows):
        if row.provider_item is not None:
            message[KEY] = row.provider_item
        messages.append(message)
    return messages


def to_responses_input(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """Live context (chat format) -> (instructions, Responses ``input`` items)."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if KEY in message:
            items = [dict(message[KEY])]  # everything before it is inside the compaction
            continue
        if role == "system" and not items:
            instructions.append(content if isinstance(content, str) else str(content or ""))
            continue
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id"),
                    "output": content if isinstance(content, str) else str(content or ""),
                }
            )
            continue
        if isinstance(content, list):
            content = _parts(content, role)
        if content:
            items.append({"role": role, "content": content})
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.get("id"),
                    "name": function.get("name"),
                    "arguments": function.get("arguments") or "",
                }
            )
    return ("\n\n".join(instructions) or None), items


def _parts(parts: list[Any], role: str | None) -> list[dict[str, Any]]:
    """Chat-completions content parts -> Responses content parts."""
    text_type = "output_text" if role == "assistant" else "input_text"
    out: list[dict[str, Any]] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "image_url" and role != "assistant":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            if isinstance(url, str):
                out.append({"type": "input_image", "image_url": url})
        elif isinstance(part.get("text"), str):
            out.append({"type": text_type, "text": part["text"]})
    return out


def parse_output(output: list[Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Responses ``output`` -> (the reply as a chat message, the compaction item or None)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    compaction = None
    for item in output:
        kind = getattr(item, "type", None)
        if kind == "compaction":
            compaction = {
                "type": "compaction",
                "id": item.id,
                "encrypted_content": item.encrypted_content,
            }
        elif kind == "message":
            for part in getattr(item, "content", None) or ():
                if getattr(part, "type", None) == "output_text":
                    texts.append(part.text)
        elif kind == "function_call":
            calls.append(
                {
                    "id": item.call_id,
                    "type": "function",
                    "function": {"name": item.name, "arguments": item.arguments},
                }
            )
    reply: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        reply["tool_calls"] = calls
    if reply["content"] is None and not calls:
        reply["content"] = ""
    return reply, compaction
