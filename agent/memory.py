"""``memory_write`` and ``memory_delete``: the model keeps its session's memory blocks itself,
in the turn the service runs, when ``memory_blocks.model_tools`` is on (off by default: what a
model writes there, every later request of the session carries).

A write lands in the session's own blocks, never the channel's (which other conversations
see). Each is audited with where it came from -- the session, the position of the assistant
message that made the call, its tool call id -- and, like ``session_search``, a refused call is
answered to the model, not raised.
"""

from __future__ import annotations

import json
from typing import Any

from core.config import get_config
from sessions_app.audit import record
from sessions_app.models import AuditEntry, Session
from sessions_app.services import ServiceError
from sessions_app.services.memory import LABEL_PATTERN, Owner, delete_block, set_block

WRITE = "memory_write"
DELETE = "memory_delete"
NAMES = (WRITE, DELETE)


def schemas() -> list[dict[str, Any]]:
    limit = get_config().memory_blocks.block_max_chars
    label = {"type": "string", "pattern": LABEL_PATTERN, "description": "The block's name."}
    return [
        {
            "type": "function",
            "function": {
                "name": WRITE,
                "description": (
                    "Keep something for the rest of this conversation: create or replace a "
                    "memory block. Every later request carries it after the system prompt, "
                    "and no compression summarises it away."
                ),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "label": label,
                        "text": {
                            "type": "string",
                            "maxLength": limit,
                            "description": "The block's whole text (replaces what it held).",
                        },
                    },
                    "required": ["label", "text"],
                    "additionalProperties": False,
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": DELETE,
                "description": "Drop a memory block this conversation no longer needs.",
                "parameters": {
                    "type": "object",
                    "properties": {"label": label},
                    "required": ["label"],
                    "additionalProperties": False,
                },
            },
        },
    ]


def run(session: Session, name: str, call: dict[str, Any], position: int) -> dict[str, Any]:
    """One call; ``position`` is where the assistant message holding it is stored."""
    raw = (call.get("function") or {}).get("arguments")
    try:
        args = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
    except ValueError:
        return {"error": 'arguments must be a JSON object, e.g. {"label": "plan", "text": "…"}'}
    if not isinstance(args, dict) or not isinstance(args.get("label"), str):
        return {"error": "give 'label' (a block name such as 'plan')"}
    label = args["label"]
    where = {
        "session": str(session.pk),
        "position": position,
        "tool_call_id": str(call.get("id") or "")[:200],
        "label": label[:100],
    }
    try:
        if name == WRITE:
            if not isinstance(args.get("text"), str):
                return {"error": "give 'text', the block's whole text"}
            block, created = set_block(Owner(session=session), label, args["text"])
            action, details = AuditEntry.Action.MEMORY_WRITE, {**where, "tokens": block.token_count}
            answer = {"label": label, "saved": True, "created": created}
        else:
            delete_block(Owner(session=session), label)
            action, details = AuditEntry.Action.MEMORY_DELETE, where
            answer = {"label": label, "deleted": True}
    except ServiceError as exc:
        return {"error": exc.message}
    record(f"model:{session.model or 'unknown'}", action, f"session {session.pk}", details)
    return answer
