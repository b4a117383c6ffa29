"""What leaves for a summariser or a hook, masked (``compression.redaction``, core.redaction).

The rows handed out are unsaved copies: the stored originals stay byte for byte."""

from __future__ import annotations

import copy
from typing import Any

from compression.engine.retention import row_text
from core.config import get_config
from core.redaction import Redactor, Tally, redactor
from sessions_app.models import Message, Session
from sessions_app.services.memory import memory_section


def active() -> Redactor:
    return redactor(get_config().compression.redaction)


def masked_rows(rows: list[Message], tally: Tally) -> list[Message]:
    """Copies of ``rows`` whose text and tool-call arguments are masked."""
    mask = active()
    if not mask.rules:
        return rows
    out = []
    for row in rows:
        content = mask.mask(row.content or "", tally) if row.content else row.content
        calls = mask.mask_value(row.tool_calls, tally) if row.tool_calls else row.tool_calls
        if content == row.content and calls == row.tool_calls:
            out.append(row)
            continue
        twin = copy.copy(row)
        twin.content, twin.tool_calls = content, calls
        out.append(twin)
    return out


def masked_keep(session: Session, pinned: list[Message], tally: Tally) -> list[str]:
    """What the summary must keep in detail, masked: the session's memory blocks, and the
    pinned messages that stay live beside it (each with its position)."""
    texts = [memory_section(session)]
    texts += [f"[#{m.position} {m.role}, pinned]\n{row_text(m)}" for m in pinned]
    return [active().mask(t, tally) for t in texts if t]


def masked_text(text: str | None, tally: Tally) -> str | None:
    return active().mask(text, tally) if text else text


def masked_value(value: Any, tally: Tally | None = None) -> Any:
    return active().mask_value(value, tally)
