"""OpenAI server-side compaction (SPEC T7b), opt-in per model family.

For a session whose model matches ``codex_responses_models`` while ``codex_responses_native`` is
on, the turn calls the Responses API with ``context_management=[{"type": "compaction",
"compact_threshold": N}]``: when the rendered context crosses N, the server compacts it and
returns an opaque ``compaction`` item (``encrypted_content``) before its reply. Our automatic
threshold is held above N (compression.policy.threshold), so the server compacts first and ours
is the safety net.

The item is stored as a summary row (``Message.provider_item``) that replaces the live rows
before it -- archived, never deleted, still searchable -- and is replayed to the server in its
place (OpenAI: "you can drop items that came before the most recent compaction item"). The
system prompt stays live and goes as ``instructions``.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from compression.engine.archive import COUNTERS, replace_with_summary
from compression.events import record_event
from compression.models import CompressionEvent
from sessions_app import tokens
from sessions_app.models import Message, Session
from sessions_app.services.context import live_rows, sent

KEY = "openai_compaction"  # marks the item among to_responses_input's chat messages
PLACEHOLDER = (
    "[The conversation before this point was compacted by the OpenAI server; the model receives "
    "it as an encrypted compaction item. The original messages are archived and searchable.]"
)


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


def store_compaction(
    session: Session, item: dict[str, Any], threshold: int, sent: list[int]
) -> CompressionEvent:
    """The server compacted what it was sent (``sent``: those rows' ids): keep its item as the
    live context's summary and archive what it replaced -- the system prompt stays, and rows
    stored while the model was answering were not in the compaction and stay live."""
    content = PLACEHOLDER
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        wanted = set(sent)
        live = [m for m in live_rows(locked) if m.pk in wanted]
        replaced = [m for m in live if not (m.role == Message.Role.SYSTEM and not m.is_summary)]
        first = replaced[0] if replaced else (live[-1] if live else None)
        position = first.position if first is not None else locked.next_position
        summary_tokens = tokens.count_message({"role": "user", "content": content}, locked.model)
        tokens_before, messages_before = locked.live_tokens, locked.live_messages
        summary, archived = replace_with_summary(
            locked,
            Message.objects.filter(pk__in=[m.pk for m in replaced]),
            position=position,
            role=Message.Role.USER,
            content=content,
            token_count=summary_tokens,
            covers_from_position=replaced[0].position if replaced else None,
            covers_to_position=replaced[-1].position if replaced else None,
            provider_item=item,
        )
        locked.compressions += 1
        locked.save(update_fields=[*COUNTERS, "compressions"])
        return record_event(
            locked,
            CompressionEvent.Trigger.SERVER,
            CompressionEvent.Outcome.COMPRESSED,
            f"the OpenAI server compacted the context at its threshold {threshold:,}",
            path=CompressionEvent.Path.OPENAI_SERVER,
            tokens_before=tokens_before,
            tokens_after=locked.live_tokens,
            messages_before=messages_before,
            messages_after=locked.live_messages,
            threshold_tokens=threshold,
            rows_archived=archived,
            summary_message=summary,
            summary_model="openai server",
        )
